import { defineCommand } from 'citty';
import { connectionArgs, idempotencyKeyArg, jsonFileArg } from './_args.ts';
import { connect, readJsonInput } from './_cli.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'create-endpoint',
    examples: ['hookrelay create-endpoint --json endpoint.json  # {"triggerVariant":"order","resourceIdPath":"order.id"}'],
    description: 'Create an endpoint from a JSON file; prints its secret once — the only command that ever prints a secret',
  },
  args: { ...connectionArgs, ...jsonFileArg, ...idempotencyKeyArg },
  async run({ args }) {
    const body = await readJsonInput(args.json);
    const { client, log } = await connect(args, { token: 'required' });
    const { body: res } = await client.call('createEndpoint', { body, idempotencyKey: args['idempotency-key'] });
    log.warn('The endpoint secret is in this output only; store it now. No read returns it again.');
    // The single exception to redaction: the new secret, shown once.
    printJson(res);
  },
});
