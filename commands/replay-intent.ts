import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { ClientError, idempotencyNote } from '../src/client/errors.ts';
import { connectionArgs, idempotencyKeyArg, jsonFileArg } from './_args.ts';
import { connect, emit, newIdempotencyKey, readJsonInput } from './_cli.ts';

/** The preview body: the file holds the replay input ({"reason": …}) or a whole `{"mode": "preview", …}` body. */
function previewBody(file: unknown): unknown {
  if (file && typeof file === 'object' && 'mode' in file) {
    if ((file as { mode: unknown }).mode !== 'preview') {
      throw new AppError('invalid_input', 'The file holds the replay input; execute with --execute --intent <id> --confirm <token>.');
    }
    return file;
  }
  return { mode: 'preview', input: file };
}

export default defineCommand({
  meta: {
    name: 'replay-intent',
    examples: ['hookrelay replay-intent evt_123 --json reason.json  # preview; then --execute --intent int_… --confirm …'],
    description:
      'Preview a replay of an event (--json holds {"reason": …}); then --execute --intent <id> --confirm <token> [--idempotency-key k] executes it',
  },
  args: {
    eventId: { type: 'positional', required: true, description: 'Event id (evt_…)' },
    ...jsonFileArg,
    execute: { type: 'boolean', description: 'Execute a previewed intent' },
    intent: { type: 'string', description: 'Intent id from the preview (int_…)' },
    confirm: { type: 'string', description: 'Confirmation token from the preview' },
    ...idempotencyKeyArg,
    ...connectionArgs,
  },
  async run({ args }) {
    if (!args.execute) {
      if (args.intent || args.confirm || args['idempotency-key']) {
        throw new AppError('invalid_input', '--intent, --confirm and --idempotency-key go with --execute.');
      }
      const body = previewBody(args.json ? await readJsonInput(args.json) : {});
      const { client, log } = await connect(args, { token: 'required' });
      const { body: res } = await client.call('createReplayIntent', { params: { eventId: args.eventId }, body });
      log.info('Previewed; nothing changed. Execute with --execute --intent <data.intent.id> --confirm <data.intent.confirmation.token>.');
      emit(res);
      return;
    }
    if (args.json) throw new AppError('invalid_input', '--json is for the preview; an execute step sends only the intent and its confirmation.');
    if (!args.intent || !args.confirm) throw new AppError('invalid_input', '--execute needs --intent <id> and --confirm <token> from the preview.');
    const body = { mode: 'execute', intentId: args.intent, confirmationToken: args.confirm };
    const { client, log } = await connect(args, { token: 'required' });
    const generated = !args['idempotency-key'];
    const key = args['idempotency-key'] || newIdempotencyKey();
    if (generated) log.info(`Idempotency-Key ${key} (retry with --idempotency-key ${key} to avoid a second replay)`);
    const idempotency = { key, generated };
    try {
      const res = await client.call('createReplayIntent', { params: { eventId: args.eventId }, body, idempotencyKey: key });
      emit({ idempotency: { ...idempotency, replayed: res.headers.get('idempotent-replayed') === 'true' }, ...res.body });
    } catch (err) {
      if (err instanceof ClientError) err.annotate({ idempotency: idempotencyNote(err, key, generated, `Retry with --idempotency-key ${key}; the server will not replay twice.`) });
      throw err;
    }
  },
});
