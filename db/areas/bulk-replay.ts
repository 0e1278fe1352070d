/**
 * Bulk replay's storage: the events a filter selects, and their requeue in one statement. Written once for both
 * dialects over the thin runner (as db/areas/platform-links.ts is): plain SQL both SQLite and PostgreSQL run as written,
 * `?` placeholders. The one difference is PostgreSQL's `lease_token` column, which a requeue clears there too (the dialect's clearLease).
 * Which events may be replayed, and why not, is decided above (src/ops/bulk-replay.ts); this only selects and writes.
 */
import { sqlOf, type SqlRunner, type Write } from '../runner.ts';
import { outcomeTerm } from '../types.ts';

/** What selects the events of one bulk replay. Times are epoch ms. */
export interface BulkReplayFilter {
  storeId: string;
  outcome: string;
  code?: string;
  endpointId?: string;
  /** Received at or after. */
  since?: number;
  /** The smallest id minted at `since` (ids sort by creation): bounds the index range, as the events list does. */
  sinceId?: string;
  /** Received before. */
  until?: number;
  /** A body is retained when kept and received after this (now minus the body retention). */
  retainedAfter: number;
}

/**
 * What a preview showed, so an execute replays no more: events up to the newest id it matched, whose last attempt
 * ended no later than the preview. An event re-attempted since (replayed singly, retried) is left out.
 */
export interface BulkReplayBound {
  throughId: string;
  lastAttemptAtMost: number;
}

export interface BulkReplayCounts {
  /** Matching events whose body is still retained: the ones a replay hands off again. */
  count: number;
  /** Matching events whose body is no longer retained (expired or never kept): left out. */
  bodyNotRetained: number;
  oldestReceivedAt: number | null;
  newestReceivedAt: number | null;
  /** The newest matching event with a retained body: the preview's bound. */
  throughId: string | null;
}

export interface BulkReplaySample {
  id: string;
  endpointId: string;
  outcome: string;
  code: string | null;
  receivedAt: number;
}

export interface BulkReplayStore {
  counts(f: BulkReplayFilter): Promise<BulkReplayCounts>;
  /** The oldest `limit` matching events with a retained body, oldest first. */
  sample(f: BulkReplayFilter, limit: number): Promise<BulkReplaySample[]>;
  /** The endpoints of the matching events with a retained body. */
  endpointIds(f: BulkReplayFilter): Promise<string[]>;
  /** The receipt time of the matching event after the first `offset` (oldest first), or null: where to split a window. */
  receivedAtAfter(f: BulkReplayFilter, offset: number): Promise<number | null>;
  /**
   * Requeues, in one statement, the matching events with a retained body within `bound`: outcome `queued`, code
   * cleared, due at `now`, lease cleared (as a single replay's requeue does). Returns how many.
   */
  requeue(f: BulkReplayFilter, bound: BulkReplayBound, now: number): Promise<number>;
  /** The same requeue as a write of a batch (it changes as many rows as it queues). */
  requeueWrite(f: BulkReplayFilter, bound: BulkReplayBound, now: number): Write;
}

const RETAINED = "(body_retention = 'retained' AND received_at > ?)";

/** The WHERE clause of a filter and its parameters, in order. */
function where(f: BulkReplayFilter): { sql: string; params: unknown[] } {
  // Failed and no_workflow on (store_id, outcome, id); delivered on (store_id, id), from the window's id floor.
  const parts = ['store_id = ?', outcomeTerm(f.outcome), 'NOT is_test'];
  const params: unknown[] = [f.storeId, f.outcome];
  const add = (clause: string, value: unknown) => {
    if (value === undefined) return;
    parts.push(clause);
    params.push(value);
  };
  add('code = ?', f.code);
  add('endpoint_id = ?', f.endpointId);
  add('received_at >= ?', f.since);
  add('id >= ?', f.sinceId);
  add('received_at < ?', f.until);
  return { sql: parts.join(' AND '), params };
}

/** Matching events whose body is retained. */
function retained(f: BulkReplayFilter): { sql: string; params: unknown[] } {
  const w = where(f);
  return { sql: `${w.sql} AND ${RETAINED}`, params: [...w.params, f.retainedAfter] };
}

export function bulkReplayStore(sql: SqlRunner): BulkReplayStore {
  /** The requeue as one write of a batch: an intent's execute commits it with the intent's completion. */
  const requeueWrite = (f: BulkReplayFilter, bound: BulkReplayBound, now: number): Write => {
    const w = retained(f);
    return {
      sql: `UPDATE events SET outcome = 'queued', code = NULL, next_attempt_at = ?, ${sql.dialect.clearLease}
       WHERE ${w.sql} AND id <= ? AND (last_attempt_at IS NULL OR last_attempt_at <= ?)`,
      params: [now, ...w.params, bound.throughId, bound.lastAttemptAtMost],
    };
  };
  return {
    async counts(f: BulkReplayFilter): Promise<BulkReplayCounts> {
      const w = where(f);
      const r = f.retainedAfter;
      const rows = await sql.all<BulkReplayCounts>(
        `SELECT coalesce(sum(CASE WHEN ${RETAINED} THEN 1 ELSE 0 END), 0) AS "count",
              coalesce(sum(CASE WHEN ${RETAINED} THEN 0 ELSE 1 END), 0) AS "bodyNotRetained",
              min(CASE WHEN ${RETAINED} THEN received_at END) AS "oldestReceivedAt",
              max(CASE WHEN ${RETAINED} THEN received_at END) AS "newestReceivedAt",
              max(CASE WHEN ${RETAINED} THEN id END) AS "throughId"
       FROM events WHERE ${w.sql}`,
        [r, r, r, r, r, ...w.params],
      );
      const c = rows[0]!;
      return {
        count: Number(c.count),
        bodyNotRetained: Number(c.bodyNotRetained),
        oldestReceivedAt: c.oldestReceivedAt == null ? null : Number(c.oldestReceivedAt),
        newestReceivedAt: c.newestReceivedAt == null ? null : Number(c.newestReceivedAt),
        throughId: c.throughId ?? null,
      };
    },

    async sample(f: BulkReplayFilter, limit: number): Promise<BulkReplaySample[]> {
      const w = retained(f);
      const rows = await sql.all<BulkReplaySample>(
        `SELECT id, endpoint_id AS "endpointId", outcome, code, received_at AS "receivedAt"
       FROM events WHERE ${w.sql} ORDER BY id LIMIT ?`,
        [...w.params, limit],
      );
      return rows.map((e) => ({ ...e, receivedAt: Number(e.receivedAt) }));
    },

    async endpointIds(f: BulkReplayFilter): Promise<string[]> {
      const w = retained(f);
      const rows = await sql.all<{ endpointId: string }>(
        `SELECT DISTINCT endpoint_id AS "endpointId" FROM events WHERE ${w.sql} ORDER BY endpoint_id`,
        w.params,
      );
      return rows.map((r) => r.endpointId);
    },

    async receivedAtAfter(f: BulkReplayFilter, offset: number): Promise<number | null> {
      const w = retained(f);
      const rows = await sql.all<{ receivedAt: number }>(
        `SELECT received_at AS "receivedAt" FROM events WHERE ${w.sql} ORDER BY received_at, id LIMIT 1 OFFSET ?`,
        [...w.params, offset],
      );
      return rows[0] ? Number(rows[0].receivedAt) : null;
    },

    requeue(f: BulkReplayFilter, bound: BulkReplayBound, now: number): Promise<number> {
      const w = requeueWrite(f, bound, now);
      return sql.run(sqlOf(w, sql.dialect), w.params as unknown[]);
    },

    requeueWrite,
  };
}
