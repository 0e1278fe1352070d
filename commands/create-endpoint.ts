import { defineCommand } from 'citty';
import { durationText } from '../src/contract/durations.ts';
import { AppError } from '../src/contract/errors.ts';
import { SILENCE_WATCH } from '../src/contract/limits.ts';
import { connectionArgs, idempotencyKeyArg, jsonFileArg } from './_args.ts';
import { connect, readJsonInput } from './_cli.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'create-endpoint',
    examples: [
      'hookrelay create-endpoint --json endpoint.json  # {"triggerVariant":"order","resourceIdPath":"order.id"}',
      'hookrelay create-endpoint --json endpoint.json --expected-every 2h  # alert when it receives nothing for 2 hours',
    ],
    description: 'Create an endpoint from a JSON file; prints its secret once — the only command that ever prints a secret',
  },
  args: {
    ...connectionArgs,
    ...jsonFileArg,
    'expected-every': {
      type: 'string',
      description: `Silence watch: alert when the endpoint receives nothing for longer than this (30m, 2h, 1d; ${durationText(SILENCE_WATCH.minMs)} to ${durationText(SILENCE_WATCH.maxMs)}); sets the body's expectedEvery`,
    },
    ...idempotencyKeyArg,
  },
  async run({ args }) {
    let body = await readJsonInput(args.json);
    if (args['expected-every'] !== undefined) {
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('invalid_input', `${args.json} must hold a JSON object.`);
      body = { ...body, expectedEvery: args['expected-every'] };
    }
    const { client, log } = await connect(args, { token: 'required' });
    const { body: res } = await client.call('createEndpoint', { body, idempotencyKey: args['idempotency-key'] });
    log.warn('The endpoint secret is in this output only; store it now. No read returns it again.');
    // The single exception to redaction: the new secret, shown once.
    printJson(res);
  },
});
