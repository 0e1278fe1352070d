import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { EVENT_OUTCOMES, TRIGGER_VARIANTS } from '../src/contract/schemas.ts';
import { followEvents } from '../src/client/follow.ts';
import { connectionArgs, parseSince, SINCE_HELP } from './_args.ts';
import { connect, emit, type Connection } from './_cli.ts';
import { printJsonLine, stdoutClosed } from './_output.ts';
import { redactSecrets } from '../src/client/redact.ts';

const followArgs = {
  follow: { type: 'boolean', description: 'Keep printing new receipts, one compact JSON line each, oldest first, until Ctrl-C (alias: hookrelay tail)' },
  interval: { type: 'string', description: 'With --follow: seconds between polls (default 5; each poll is a rich read, 30 a minute per grant)' },
} as const;

/** The receipts arriving from now on (or from --since), one JSON line each, until SIGINT/SIGTERM (exit 0). */
export async function follow(args: { endpoint?: string; since?: string; interval?: string }, { client, log }: Connection): Promise<void> {
  const interval = Number(args.interval ?? 5);
  if (!Number.isFinite(interval) || interval < 0.05 || interval > 3600) throw new AppError('invalid_input', '--interval takes seconds, 0.05 to 3600.');
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await followEvents(client, {
      endpointId: args.endpoint,
      sinceMs: args.since === undefined ? undefined : parseSince(args.since, Date.now()),
      intervalMs: interval * 1000,
      signal: stop.signal,
      onEvent: async (e) => {
        await printJsonLine(redactSecrets(e));
        if (stdoutClosed()) stop.abort();
      },
      onReady: () => log.info('Following new receipts; Ctrl-C to stop.'),
      onRateLimited: (s) => log.warn(`Rate limited; polling again in ${s} s.`),
    });
  } catch (err) {
    if (!stop.signal.aborted) throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export default defineCommand({
  meta: {
    name: 'events',
    description: 'Receipt history, newest first, without raw bodies; --follow streams new receipts as JSON lines',
    examples: [
      'hookrelay events --limit 5 --outcome failed --since 1h',
      'hookrelay events --unconfirmed-for 60',
      'hookrelay events --follow --endpoint ep_123',
    ],
  },
  args: {
    limit: { type: 'string', description: 'Page size, 1 to 100 (default 25)' },
    cursor: { type: 'string', description: 'nextCursor of the previous page' },
    endpoint: { type: 'string', description: 'Only this endpoint (ep_…)' },
    'external-id': { type: 'string', description: "Only events whose sender's external_event_id is exactly this" },
    trigger: { type: 'string', description: `Only events of endpoints with this trigger variant: ${TRIGGER_VARIANTS.join(' | ')}` },
    outcome: { type: 'string', description: EVENT_OUTCOMES.join(' | ') },
    since: { type: 'string', description: `Received at or after: ${SINCE_HELP}` },
    until: { type: 'string', description: `Received before: ${SINCE_HELP}` },
    'unconfirmed-for': {
      type: 'string',
      description: 'Only delivered events no workflow run has confirmed (Confirm hookrelay event), delivered more than this many minutes ago',
    },
    ...followArgs,
    ...connectionArgs,
  },
  async run({ args }) {
    if (args.follow) {
      const refused = (['limit', 'cursor', 'outcome', 'until', 'unconfirmed-for', 'external-id', 'trigger'] as const).filter((k) => args[k] !== undefined);
      if (refused.length)
        throw new AppError('invalid_input', `--follow prints every new receipt; it does not take ${refused.map((k) => `--${k}`).join(', ')}.`);
      return follow(args, await connect(args, { token: 'required' }));
    }
    if (args.interval !== undefined) throw new AppError('invalid_input', '--interval goes with --follow.');
    const conn = await connect(args, { token: 'required' });
    const now = Date.now();
    const at = (text: string | undefined, flag: string) => (text === undefined ? undefined : new Date(parseSince(text, now, flag)).toISOString());
    const { body } = await conn.client.call('listEvents', {
      query: {
        limit: args.limit,
        cursor: args.cursor,
        endpointId: args.endpoint,
        externalEventId: args['external-id'],
        triggerVariant: args.trigger,
        outcome: args.outcome,
        since: at(args.since, '--since'),
        until: at(args.until, '--until'),
        unconfirmedFor: args['unconfirmed-for'],
      },
    });
    emit(body);
  },
});
