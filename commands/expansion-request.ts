import { defineCommand } from 'citty';
import { connectionArgs, idempotencyKeyArg, jsonFileArg } from './_args.ts';
import { connect, emit, readJsonInput } from './_cli.ts';

export default defineCommand({
  meta: {
    name: 'expansion-request',
    examples: ['hookrelay expansion-request --json expansion.json'],
    description: 'Signal demand for a platform, edition, trigger-lane, multi-store or reliability expansion (non-binding)',
  },
  args: { ...jsonFileArg, ...idempotencyKeyArg, ...connectionArgs },
  async run({ args }) {
    const body = await readJsonInput(args.json);
    const { client } = await connect(args, { token: 'required' });
    emit((await client.call('createExpansionRequest', { body, idempotencyKey: args['idempotency-key'] })).body);
  },
});
