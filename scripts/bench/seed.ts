/**
 * Fast seeding straight into SQLite: raw prepared INSERTs in the events column order, in large transactions.
 * Ids come from the project's own id generator over a synthetic clock, so they sort by time as real ones do.
 */
import type { Database } from 'bun:sqlite';
import { METRIC, STATS_WIDTHS_MS, statsBucket } from '../../db/types.ts';
import { createIdGenerator } from '../../src/lib/ids.ts';
import { attemptMetrics } from '../../src/lib/event-stats.ts';

/** Column order of the events table (db/sqlite/schema.ts), the same order as the repo's ingest insert. */
const EVENT_COLUMNS = [
  'id',
  'receipt_id',
  'store_id',
  'endpoint_id',
  'config_version',
  'outcome',
  'code',
  'external_event_id',
  'event_type',
  'is_test',
  'duplicate_of',
  'resource_id',
  'related_resource_id',
  'body_bytes',
  'body_retention',
  'received_at',
  'attempts',
  'last_attempt_at',
  'next_attempt_at',
  'lease_until',
  'delivered_at',
] as const;

const ATTEMPT_COLUMNS = ['event_id', 'number', 'destination', 'started_at', 'finished_at', 'outcome', 'http_status', 'code', 'message', 'retry_at'] as const;

export interface SeedOptions {
  storeId: string;
  endpointIds: string[];
  count: number;
  /** Received times are spread evenly over [fromMs, toMs). */
  fromMs: number;
  toMs: number;
  /**
   * `history`: a realistic settled history (mostly delivered, some failed, rejected, duplicates), one attempt
   * row per handed-off event, nothing due. `due`: every event `accepted` and due now (a handoff backlog).
   */
  kind: 'history' | 'due';
  /** Rows per transaction. */
  batch?: number;
}

/** Deterministic PRNG so two runs seed the same distribution. */
function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Inserts `count` events (and attempts for `history`); returns the seconds it took. */
export function seedEvents(sqlite: Database, o: SeedOptions): number {
  const started = performance.now();
  let clockMs = o.fromMs;
  const ids = createIdGenerator({ now: () => clockMs });
  const rand = mulberry32(42);
  const step = (o.toMs - o.fromMs) / o.count;
  const insertEvent = sqlite.prepare(`INSERT INTO events (${EVENT_COLUMNS.join(', ')}) VALUES (${EVENT_COLUMNS.map(() => '?').join(', ')})`);
  const insertAttempt = sqlite.prepare(`INSERT INTO attempts (${ATTEMPT_COLUMNS.join(', ')}) VALUES (${ATTEMPT_COLUMNS.map(() => '?').join(', ')})`);
  const batch = o.batch ?? 50_000;
  let firstOfKind: string | null = null;
  // The counters reliability reads sum, kept as the ingest commit and the worker keep them.
  const bumpStat = sqlite.prepare(
    `INSERT INTO event_stats (store_id, width, bucket, metric, n) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (store_id, width, bucket, metric) DO UPDATE SET n = n + ?5`,
  );
  const stats = new Map<string, number>();
  const count = (at: number, metric: string) => {
    for (const width of STATS_WIDTHS_MS) {
      const key = `${width}\u0000${statsBucket(at, width)}\u0000${metric}`;
      stats.set(key, (stats.get(key) ?? 0) + 1);
    }
  };
  const flushStats = () => {
    for (const [key, n] of stats) {
      const [width, bucket, metric] = key.split('\u0000');
      bumpStat.run(o.storeId, Number(width), Number(bucket), metric!, n);
    }
    stats.clear();
  };

  const run = sqlite.transaction((from: number, to: number) => {
    for (let n = from; n < to; n++) {
      clockMs = Math.floor(o.fromMs + n * step);
      const id = ids.next('evt');
      const receiptId = ids.next('rcpt');
      const endpointId = o.endpointIds[n % o.endpointIds.length]!;
      const at = clockMs;
      if (o.kind === 'due') {
        insertEvent.run(
          id,
          receiptId,
          o.storeId,
          endpointId,
          1,
          'accepted',
          null,
          null,
          'order.flagged',
          0,
          null,
          null,
          null,
          1024,
          'retained',
          at,
          0,
          null,
          at,
          null,
          null,
        );
        count(at, METRIC.received('accepted'));
        continue;
      }
      const r = rand();
      const ext = r < 0.5 ? `ext-${n}` : null;
      let outcome = 'delivered';
      let code: string | null = null;
      let duplicateOf: string | null = null;
      if (r >= 0.9 && r < 0.94) [outcome, code] = ['failed', 'SVC_HANDOFF_RETRY_EXHAUSTED'];
      else if (r >= 0.94 && r < 0.97) [outcome, code] = ['rejected', 'SVC_REQUIRED_PATH_MISSING'];
      else if (r >= 0.97 && r < 0.99) {
        outcome = 'duplicate_suppressed';
        duplicateOf = firstOfKind;
      } else if (r >= 0.99) outcome = 'no_workflow';
      const handedOff = outcome === 'delivered' || outcome === 'failed' || outcome === 'no_workflow';
      const attempts = handedOff ? 1 : 0;
      const finished = at + 40 + Math.floor(rand() * 200);
      insertEvent.run(
        id,
        receiptId,
        o.storeId,
        endpointId,
        1,
        outcome,
        code,
        ext,
        'order.flagged',
        0,
        duplicateOf,
        '4501',
        null,
        1024,
        outcome === 'rejected' || outcome === 'duplicate_suppressed' ? 'none' : 'retained',
        at,
        attempts,
        handedOff ? finished : null,
        null,
        null,
        outcome === 'delivered' ? finished : null,
      );
      count(at, METRIC.received(handedOff ? 'accepted' : outcome));
      if (handedOff) {
        const attempt = { outcome: outcome === 'failed' ? 'failed' : outcome, code: outcome === 'failed' ? 'http_error' : null, finishedAt: finished };
        for (const metric of attemptMetrics(attempt, at)) count(finished, metric);
        insertAttempt.run(
          id,
          1,
          'shopify',
          at + 5,
          finished,
          outcome === 'failed' ? 'failed' : outcome,
          outcome === 'failed' ? 400 : 200,
          outcome === 'failed' ? 'http_error' : null,
          outcome === 'failed' ? 'Platform answered HTTP 400.' : null,
          null,
        );
      }
      firstOfKind ??= id;
    }
    flushStats();
  });
  for (let from = 0; from < o.count; from += batch) run(from, Math.min(o.count, from + batch));
  return (performance.now() - started) / 1000;
}
