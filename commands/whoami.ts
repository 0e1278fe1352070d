import { defineCommand } from 'citty';
import { describeConfig } from '../src/client/config.ts';
import { ClientError } from '../src/client/errors.ts';
import { connectionArgs } from './_args.ts';
import { connect, emit } from './_cli.ts';

export default defineCommand({
  meta: {
    name: 'whoami',
    description: 'The grant in use (tier, scopes, expiry, store) and where the configuration came from',
    examples: ['HOOKRELAY_TOKEN=hrg_… hookrelay whoami'],
  },
  args: { ...connectionArgs },
  async run({ args }) {
    const { client, config } = await connect(args, { token: 'required' });
    try {
      const { body } = await client.call('getCurrentAgentGrant');
      emit({ config: describeConfig(config), ...body });
    } catch (err) {
      if (err instanceof ClientError) err.annotate({ config: describeConfig(config) });
      throw err;
    }
  },
});
