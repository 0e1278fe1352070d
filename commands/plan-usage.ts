import { defineCommand } from 'citty';
import { connectionArgs } from './_args.ts';
import { connect, emit } from './_cli.ts';

export default defineCommand({
  meta: {
    name: 'plan-usage',
    description: 'Plan, billing status, usage meters and enforcement state (read-only; cannot approve charges)',
    examples: ['hookrelay plan-usage'],
  },
  args: { ...connectionArgs },
  async run({ args }) {
    const { client } = await connect(args, { token: 'required' });
    emit((await client.call('getPlanUsage')).body);
  },
});
