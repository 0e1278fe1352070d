import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { REPLAYABLE_OUTCOMES } from '../src/contract/schemas.ts';
import { ClientError, idempotencyNote } from '../src/client/errors.ts';
import { connectionArgs, idempotencyKeyArg, jsonFileArg, parseSince, SINCE_HELP } from './_args.ts';
import { connect, emit, newIdempotencyKey, readJsonInput } from './_cli.ts';

const FILTER_FLAGS = ['failed', 'outcome', 'code', 'endpoint', 'since', 'until'] as const;

type Args = Partial<Record<(typeof FILTER_FLAGS)[number] | 'reason', string | boolean>>;

/**
 * The preview body: the file holds the replay input ({"reason": …}, and a bulk replay's {"filter": …}) or a whole
 * `{"mode": "preview", …}` body; --reason and the filter flags fill the input (a flag wins over the file's field).
 */
function previewBody(file: unknown, args: Args, bulk: boolean): unknown {
  if (file !== undefined && (typeof file !== 'object' || file === null || Array.isArray(file))) {
    throw new AppError('invalid_input', 'The --json file holds a JSON object: the replay input, or a whole preview body.');
  }
  const obj = (file ?? {}) as Record<string, unknown>;
  if ('mode' in obj && obj.mode !== 'preview') {
    throw new AppError('invalid_input', 'The file holds the replay input; execute with --execute --intent <id> --confirm <token>.');
  }
  const whole = 'mode' in obj;
  const input = { ...((whole ? obj.input : obj) as Record<string, unknown> | undefined) };
  if (typeof args.reason === 'string') input.reason = args.reason;
  if (bulk) {
    const filter = bulkFilter(args, input.filter);
    if (!filter)
      throw new AppError(
        'invalid_input',
        'Give an event id to replay one event, or a filter to replay many (--failed, --outcome, --code, --endpoint, --since, --until).',
      );
    input.filter = filter;
  }
  return { ...(whole ? obj : {}), mode: 'preview', input };
}

/** The bulk filter from the flags over the file's, or undefined when neither gives one. */
function bulkFilter(args: Args, fromFile: unknown): Record<string, unknown> | undefined {
  const given = FILTER_FLAGS.some((f) => args[f] !== undefined);
  if (!given) return fromFile && typeof fromFile === 'object' ? (fromFile as Record<string, unknown>) : undefined;
  if (args.failed && args.outcome !== undefined && args.outcome !== 'failed')
    throw new AppError('invalid_input', `--failed is --outcome failed; it does not go with --outcome ${args.outcome}.`);
  const now = Date.now();
  const at = (text: string | boolean | undefined, flag: string) => (typeof text === 'string' ? new Date(parseSince(text, now, flag)).toISOString() : undefined);
  const flags = {
    outcome: args.failed ? 'failed' : args.outcome,
    code: args.code,
    endpointId: args.endpoint,
    since: at(args.since, '--since'),
    until: at(args.until, '--until'),
  };
  const base = fromFile && typeof fromFile === 'object' ? (fromFile as Record<string, unknown>) : {};
  return { ...base, ...Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined)) };
}

export default defineCommand({
  meta: {
    name: 'replay-intent',
    examples: [
      'hookrelay replay-intent evt_123 --reason "workflow fixed"  # preview one event; then the same with --execute --intent int_… --confirm …',
      'hookrelay replay-intent --failed --since 2h [--endpoint ep_123]  # preview every failed event of the last 2 hours as one replay',
      'hookrelay replay-intent --execute --intent int_… --confirm cfm_…  # execute that bulk preview',
    ],
    description:
      'Preview a replay of one event, or with a filter (--failed, --since …) of many as one intent; then --execute --intent <id> --confirm <token> [--idempotency-key k] executes it (with the event id for one event)',
  },
  args: {
    eventId: { type: 'positional', required: false, description: 'Event id (evt_…) to replay one event; leave out for a bulk replay' },
    failed: { type: 'boolean', description: 'Bulk: failed events (--outcome failed, the default outcome)' },
    outcome: { type: 'string', description: `Bulk: events that ended so: ${REPLAYABLE_OUTCOMES.join(' | ')} (others are refused, as for one event)` },
    code: { type: 'string', description: 'Bulk: only events with this code, e.g. SVC_HANDOFF_RETRY_EXHAUSTED' },
    endpoint: { type: 'string', description: 'Bulk: only events of this endpoint (ep_…)' },
    since: { type: 'string', description: `Bulk: received at or after: ${SINCE_HELP}` },
    until: { type: 'string', description: `Bulk: received before: ${SINCE_HELP}` },
    reason: { type: 'string', description: 'Why, for the audit trail (or "reason" in --json)' },
    ...jsonFileArg,
    execute: { type: 'boolean', description: 'Execute a previewed intent' },
    intent: { type: 'string', description: 'Intent id from the preview (int_…)' },
    confirm: { type: 'string', description: 'Confirmation token from the preview' },
    ...idempotencyKeyArg,
    ...connectionArgs,
  },
  async run({ args }) {
    const eventId = args.eventId || undefined;
    const filterFlags = FILTER_FLAGS.filter((f) => args[f] !== undefined);
    if (eventId && filterFlags.length) {
      throw new AppError(
        'invalid_input',
        `${filterFlags.map((f) => `--${f}`).join(', ')} select events for a bulk replay; leave out the event id ${eventId}, or the filter.`,
      );
    }
    // An intent is executed through the operation that previewed it: with an event id, a single replay's.
    const operation = eventId ? 'createReplayIntent' : 'createBulkReplayIntent';
    const params = eventId ? { params: { eventId } } : {};
    if (!args.execute) {
      if (args.intent || args.confirm || args['idempotency-key']) {
        throw new AppError('invalid_input', '--intent, --confirm and --idempotency-key go with --execute.');
      }
      const body = previewBody(args.json ? await readJsonInput(args.json) : undefined, args, !eventId);
      const { client, log } = await connect(args, { token: 'required' });
      const { body: res } = await client.call(operation, { ...params, body });
      log.info(
        `Previewed; nothing changed. Execute with: hookrelay replay-intent ${eventId ? `${eventId} ` : ''}--execute --intent <data.intent.id> --confirm <data.intent.confirmation.token>.`,
      );
      emit(res);
      return;
    }
    if (args.json || args.reason !== undefined || filterFlags.length) {
      throw new AppError(
        'invalid_input',
        '--json, --reason and the filter flags are for the preview; an execute step sends only the intent and its confirmation.',
      );
    }
    if (!args.intent || !args.confirm) throw new AppError('invalid_input', '--execute needs --intent <id> and --confirm <token> from the preview.');
    const body = { mode: 'execute', intentId: args.intent, confirmationToken: args.confirm };
    const { client, log } = await connect(args, { token: 'required' });
    const generated = !args['idempotency-key'];
    const key = args['idempotency-key'] || newIdempotencyKey();
    if (generated) log.info(`Idempotency-Key ${key} (retry with --idempotency-key ${key} to avoid a second replay)`);
    const idempotency = { key, generated };
    try {
      const res = await client.call(operation, { ...params, body, idempotencyKey: key });
      emit({ idempotency: { ...idempotency, replayed: res.headers.get('idempotent-replayed') === 'true' }, ...res.body });
    } catch (err) {
      if (err instanceof ClientError)
        err.annotate({ idempotency: idempotencyNote(err, key, generated, `Retry with --idempotency-key ${key}; the server will not replay twice.`) });
      throw err;
    }
  },
});
