import { defineCommand } from 'citty';
import { durationText } from '../src/contract/durations.ts';
import { AppError } from '../src/contract/errors.ts';
import { ENDPOINT_FIELDS, SILENCE_WATCH } from '../src/contract/limits.ts';
import { FIELD_TYPES } from '../src/contract/triggers.ts';
import { connectionArgs, idempotencyKeyArg, jsonFileArg } from './_args.ts';
import { connect, readJsonInput } from './_cli.ts';
import { printJson } from './_output.ts';

/** Every value of a repeated string option (`--name v`, `--name=v`): citty keeps only the last. */
function repeated(rawArgs: string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const a = rawArgs[i]!;
    if (a === '--') break;
    if (a === `--${name}` && i + 1 < rawArgs.length) out.push(rawArgs[++i]!);
    else if (a.startsWith(`--${name}=`)) out.push(a.slice(name.length + 3));
  }
  return out;
}

/** `score=answers.score:number` as a field; the server's contract checks the name, path and type. */
function parseField(spec: string): { name: string; path: string; type: string } {
  const m = /^([^=]+)=(.+):([a-z]+)$/.exec(spec);
  if (!m) throw new AppError('invalid_input', `--field ${JSON.stringify(spec)}: expected NAME=PATH:TYPE, e.g. score=answers.score:number.`);
  return { name: m[1]!, path: m[2]!, type: m[3]! };
}

export default defineCommand({
  meta: {
    name: 'create-endpoint',
    examples: [
      'hookrelay create-endpoint --json endpoint.json  # {"triggerVariant":"order","resourceIdPath":"order.id"}',
      'hookrelay create-endpoint --json endpoint.json --expected-every 2h  # alert when it receives nothing for 2 hours',
      "hookrelay create-endpoint --json endpoint.json --field 'score=answers.score:number' --field 'email=hidden.email:email'  # typed values for Flow",
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
    field: {
      type: 'string',
      description: `A typed value handed to Flow, NAME=PATH:TYPE (TYPE one of ${FIELD_TYPES.join(', ')}); repeat it for up to ${ENDPOINT_FIELDS.max}; appended to the body's fields`,
      valueHint: 'name=path:type',
    },
    ...idempotencyKeyArg,
  },
  async run({ args, rawArgs }) {
    let body = await readJsonInput(args.json);
    const fields = repeated(rawArgs, 'field').map(parseField);
    if (args['expected-every'] !== undefined || fields.length) {
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('invalid_input', `${args.json} must hold a JSON object.`);
      const given = body as Record<string, unknown>;
      body = {
        ...given,
        ...(args['expected-every'] !== undefined && { expectedEvery: args['expected-every'] }),
        // The file's `fields` when it is no list goes as it is, for the contract to refuse by name, not dropped.
        ...(fields.length > 0 && { fields: Array.isArray(given.fields) ? [...given.fields, ...fields] : (given.fields ?? fields) }),
      };
    }
    const { client, log } = await connect(args, { token: 'required' });
    const { body: res } = await client.call('createEndpoint', { body, idempotencyKey: args['idempotency-key'] });
    log.warn('The endpoint secret is in this output only; store it now. No read returns it again.');
    // The single exception to redaction: the new secret, shown once.
    printJson(res);
  },
});
