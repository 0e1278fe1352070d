import { defineCommand } from 'citty';
import { EXIT } from '../src/contract/errors.ts';
import { ClientError } from '../src/client/errors.ts';
import { connectionArgs } from './_args.ts';
import { connect, emit } from './_cli.ts';
import { CommandExit } from './_exit.ts';

export default defineCommand({
  meta: {
    name: 'status',
    description: 'Public aggregate status of the server (no token, unmetered, not tenant-specific)',
    examples: ['hookrelay status --base-url http://127.0.0.1:8787'],
  },
  args: { ...connectionArgs },
  async run({ args }) {
    const { client } = await connect(args, { token: 'none' });
    const res = await client.getPublic('/status');
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      throw new ClientError('invalid_response', `${client.baseUrl}/status answered HTTP ${res.status} without JSON; is it a hookrelay server?`, EXIT.error, {
        status: res.status,
      });
    }
    if (res.status !== 200) throw new CommandExit(body, EXIT.error);
    emit(body);
  },
});
