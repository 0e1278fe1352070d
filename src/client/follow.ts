/** `events --follow`: polls listEvents and hands over each new receipt once, oldest first, until stopped. */
import type { EventSummary } from '../contract/schemas.ts';
import { ClientError } from './errors.ts';
import type { HookrelayClient } from './http.ts';

export interface FollowOptions {
  endpointId?: string;
  /** Start here (ms) and report what is already there; default: only receipts after the first poll. */
  sinceMs?: number;
  intervalMs: number;
  /**
   * How far back each poll looks behind the newest receipt seen (ms). A receipt is stamped when it arrives but
   * listed once its batch commits, so a poll can see a later receipt before an earlier one; the overlap catches
   * those, and the seen set keeps them from printing twice.
   */
  lookbackMs?: number;
  onEvent(event: EventSummary): Promise<void> | void;
  /** Called once what already existed has been read: from here on every receipt is reported. */
  onReady?(): void;
  /** Told how long a 429 asked to wait. */
  onRateLimited?(seconds: number): void;
  signal: AbortSignal;
}

const PAGE = 100;

/** Resolves after `ms` or as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Polls until `signal` aborts. Each poll reads every page at or after (newest seen − lookback), so nothing is
 * skipped however many arrive between polls; ids already handed over are not handed over again. A 429 waits the
 * Retry-After it names; any other failure ends the follow by throwing.
 */
export async function followEvents(client: HookrelayClient, opts: FollowOptions): Promise<void> {
  const lookback = opts.lookbackMs ?? 10_000;
  const seen = new Map<string, number>();
  let from = opts.sinceMs;
  let floor = from;
  if (from === undefined) {
    // What is there already is not news: remember it as seen, and start the window behind the newest of it.
    const { body } = await paced(opts, () => client.call('listEvents', { query: { limit: 1, endpointId: opts.endpointId } }));
    const newest = body.data.events[0];
    if (newest) {
      floor = Date.parse(newest.receivedAt);
      from = floor - lookback;
      for (const e of await paced(opts, () => readSince(client, opts.endpointId, from))) seen.set(e.id, Date.parse(e.receivedAt));
    }
  }
  opts.onReady?.();
  while (!opts.signal.aborted) {
    const events = await paced(opts, () => readSince(client, opts.endpointId, floor === undefined ? undefined : floor - lookback));
    // Oldest first: ids are time-ordered and the server lists newest first.
    for (const e of events.reverse()) {
      const at = Date.parse(e.receivedAt);
      if (seen.has(e.id) || (from !== undefined && at < from)) continue;
      seen.set(e.id, at);
      await opts.onEvent(e);
      if (floor === undefined || at > floor) floor = at;
    }
    if (floor !== undefined) for (const [id, at] of seen) if (at < floor - lookback) seen.delete(id);
    await sleep(opts.intervalMs, opts.signal);
  }
}

async function readSince(client: HookrelayClient, endpointId: string | undefined, sinceMs: number | undefined): Promise<EventSummary[]> {
  const out: EventSummary[] = [];
  let cursor: string | undefined;
  const since = sinceMs === undefined ? undefined : new Date(sinceMs).toISOString();
  do {
    const { body } = await client.call('listEvents', { query: { limit: PAGE, endpointId, since, cursor } });
    out.push(...body.data.events);
    cursor = body.data.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

/** Runs `fn`, waiting out each 429 for the Retry-After it names (stopping early when aborted); other errors throw. */
async function paced<T>(opts: Pick<FollowOptions, 'signal' | 'onRateLimited'>, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof ClientError && err.info.rateLimit) || opts.signal.aborted) throw err;
      opts.onRateLimited?.(err.info.rateLimit.retryAfterSeconds);
      await sleep(err.info.rateLimit.retryAfterSeconds * 1000, opts.signal);
    }
  }
}
