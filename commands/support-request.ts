import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { ClientError, idempotencyNote } from '../src/client/errors.ts';
import { connectionArgs, idempotencyKeyArg, jsonFileArg } from './_args.ts';
import { connect, emit, newIdempotencyKey, readJsonInput } from './_cli.ts';

/** The file holds the support request input, or a whole body of this mode. */
function bodyFor(mode: 'preview' | 'submit', file: unknown, consent: boolean): Record<string, unknown> {
  if (file && typeof file === 'object' && 'mode' in file) {
    const body = file as Record<string, unknown>;
    if (body.mode !== mode) throw new AppError('invalid_input', `The file is a ${String(body.mode)} body; this is support-request ${mode}.`);
    if (mode === 'submit' && body.consent !== true && !consent) throw consentError();
    return mode === 'submit' ? { ...body, consent: true } : body;
  }
  if (mode === 'submit' && !consent) throw consentError();
  return mode === 'submit' ? { mode, input: file, consent: true } : { mode, input: file };
}

function consentError(): AppError {
  return new AppError('invalid_input', 'Submitting shares the redacted request and safe support context with support: pass --consent to agree.');
}

const preview = defineCommand({
  meta: {
    name: 'preview',
    description: 'Preview a support request: what would be shared, redacted; nothing is sent to support',
    examples: ['hookrelay support-request preview --json support.json'],
  },
  args: { ...jsonFileArg, ...connectionArgs },
  async run({ args }) {
    const body = bodyFor('preview', await readJsonInput(args.json), false);
    const { client } = await connect(args, { token: 'required' });
    emit((await client.call('createSupportRequestIntent', { body })).body);
  },
});

const submit = defineCommand({
  meta: {
    name: 'submit',
    description: 'Submit a support request with consent (not bound to a stored preview)',
    examples: ['hookrelay support-request submit --json support.json --consent'],
  },
  args: {
    ...jsonFileArg,
    consent: { type: 'boolean', description: 'Agree to share the redacted request and safe support context' },
    ...idempotencyKeyArg,
    ...connectionArgs,
  },
  async run({ args }) {
    const body = bodyFor('submit', await readJsonInput(args.json), Boolean(args.consent));
    const { client, log } = await connect(args, { token: 'required' });
    const generated = !args['idempotency-key'];
    const key = args['idempotency-key'] || newIdempotencyKey();
    if (generated) log.info(`Idempotency-Key ${key} (retry with --idempotency-key ${key} to avoid a duplicate request)`);
    try {
      const res = await client.call('createSupportRequestIntent', { body, idempotencyKey: key });
      emit({ idempotency: { key, generated, replayed: res.headers.get('idempotent-replayed') === 'true' }, ...res.body });
    } catch (err) {
      if (err instanceof ClientError) err.annotate({ idempotency: idempotencyNote(err, key, generated, `Retry with --idempotency-key ${key}.`) });
      throw err;
    }
  },
});

export default defineCommand({
  meta: { name: 'support-request', description: 'Preview or submit a support request (consent, redaction, safe support context)' },
  subCommands: { preview, submit },
});
