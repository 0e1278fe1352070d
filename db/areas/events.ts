/**
 * What the agent API and the operator read about events, attempts, failed authentications and reliability, and
 * the worker's next-due lookup, and a replay's requeue: written once for both dialects over the thin runner
 * (db/runner.ts). Every read is one statement on an index (test/db/query-plans.test.ts checks SQLite's plans).
 */
import type { EventReads, HandoffQueue } from '../repo.ts';
import { first, tableRows, type SqlRunner, type Write } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import {
  PENDING_OUTCOMES,
  STATS_WIDTHS_MS,
  UNDELIVERED,
  outcomeTerm,
  statsBucket,
  type AttemptRow,
  type AuthFailureRow,
  type EventFilter,
  type EventRow,
} from '../types.ts';

/** Every column both dialects' events share: SQLite's body key and PostgreSQL's lease token stay their own. */
const events = tableRows<EventRow>(s.events, { omit: ['bodyKey'] });
const attempts = tableRows<AttemptRow>(s.attempts);
const authFailures = tableRows<AuthFailureRow>(s.authFailures);

/** Outcomes of events not yet handed off for good, as an SQL list (constants, never input). */
const PENDING_IN = PENDING_OUTCOMES.map((o) => `'${o}'`).join(', ');

/** The events list's WHERE clause and parameters. */
function eventFilter(f: EventFilter): { where: string; params: unknown[] } {
  const where = ['store_id = ?'];
  const params: unknown[] = [f.storeId];
  const add = (condition: string, value: unknown) => {
    where.push(condition);
    params.push(value);
  };
  if (f.endpointId) add('endpoint_id = ?', f.endpointId);
  if (f.externalEventId) {
    // Looked up on the dedupe index (endpoint, external id) through the store's endpoints: without it SQLite, having
    // no statistics, reads the store's events newest first until a page fills (31 ms at 100,000 events, 0.02 with it).
    where.push('id IN (SELECT x.id FROM events x WHERE x.endpoint_id IN (SELECT id FROM endpoints WHERE store_id = ?) AND x.external_event_id = ?)');
    params.push(f.storeId, f.externalEventId);
  }
  if (f.triggerVariant) {
    where.push('endpoint_id IN (SELECT id FROM endpoints WHERE store_id = ? AND trigger_variant = ?)');
    params.push(f.storeId, f.triggerVariant);
  }
  if (f.outcome) add(outcomeTerm(f.outcome), f.outcome);
  if (f.since != null) add('received_at >= ?', f.since);
  if (f.until != null) add('received_at < ?', f.until);
  if (f.beforeId) add('id < ?', f.beforeId);
  if (f.sinceId) add('id >= ?', f.sinceId);
  if (f.unconfirmedBefore != null) {
    // On (store_id, id) newest first (delivered events are not in events_store_outcome_idx, and are most of the
    // store's), each probe on confirmations_event_idx: no scan of confirmations.
    where.push("outcome = 'delivered'", 'NOT EXISTS (SELECT 1 FROM confirmations c WHERE c.store_id = events.store_id AND c.event_id = events.id)');
    add('delivered_at < ?', f.unconfirmedBefore);
  }
  return { where: where.join(' AND '), params };
}

type Backlog = { backlog: number; oldest: number | null };
const backlogOf = (row: Backlog | null) => ({ backlog: row?.backlog ?? 0, oldestReceivedAt: row?.oldest ?? null });

export function eventReads(sql: SqlRunner): EventReads & Pick<HandoffQueue, 'nextDueAt' | 'storesWithHeld'> {
  const eventRows = async (q: string, params: unknown[]) => (await sql.all(q, params)).map(events.decode);
  return {
    listEvents: (f) => {
      const { where, params } = eventFilter(f);
      return eventRows(`SELECT ${events.select} FROM events WHERE ${where} ORDER BY id DESC LIMIT ?`, [...params, f.limit]);
    },
    getEvent: async (storeId, id) => (await eventRows(`SELECT ${events.select} FROM events WHERE store_id = ? AND id = ?`, [storeId, id]))[0] ?? null,
    latestEvent: async (storeId, endpointId) =>
      (endpointId
        ? await eventRows(`SELECT ${events.select} FROM events WHERE store_id = ? AND endpoint_id = ? ORDER BY id DESC LIMIT 1`, [storeId, endpointId])
        : await eventRows(`SELECT ${events.select} FROM events WHERE store_id = ? ORDER BY id DESC LIMIT 1`, [storeId]))[0] ?? null,
    listAttempts: (eventId) => sql.all<AttemptRow>(`SELECT ${attempts.select} FROM attempts WHERE event_id = ? ORDER BY number`, [eventId]),

    listAuthFailures: (storeId, endpointId, limit = 100) =>
      endpointId
        ? sql.all<AuthFailureRow>(`SELECT ${authFailures.select} FROM auth_failures WHERE store_id = ? AND endpoint_id = ? ORDER BY at DESC, id DESC LIMIT ?`, [
            storeId,
            endpointId,
            limit,
          ])
        : sql.all<AuthFailureRow>(`SELECT ${authFailures.select} FROM auth_failures WHERE store_id = ? ORDER BY at DESC, id DESC LIMIT ?`, [storeId, limit]),
    countAuthFailures: (storeId, since) =>
      sql.all<{ endpointId: string; n: number; first: number; last: number }>(
        `SELECT endpoint_id AS "endpointId", CAST(sum(count) AS BIGINT) AS n, min(at) AS "first", max(at) AS "last"
         FROM auth_failures WHERE store_id = ? AND at >= ? GROUP BY endpoint_id`,
        [storeId, since],
      ),
    // Delivered: the store's events newest first until one is (most are); any other outcome one probe on (store_id, outcome, id).
    hasOutcome: async (storeId, outcome) =>
      !!(await first(
        sql,
        `SELECT 1 AS x FROM events WHERE store_id = ? AND ${outcomeTerm(outcome)}${outcome === 'delivered' ? ' ORDER BY id DESC' : ''} LIMIT 1`,
        [storeId, outcome],
      )),

    /**
     * Sums from the 5-minute bucket holding `from` to now: 5-minute buckets up to the next hour, hourly ones up to
     * the next day, daily ones after that. Each part is a range on the primary key.
     */
    sumStats: async (storeId, from) => {
      const [five, hour, day] = STATS_WIDTHS_MS;
      const start = statsBucket(from, five);
      const h = Math.ceil(start / hour) * hour;
      const d = Math.ceil(h / day) * day;
      const rows = await sql.all<{ metric: string; n: number }>(
        `SELECT metric, CAST(sum(n) AS BIGINT) AS n FROM (
           SELECT metric, n FROM event_stats WHERE store_id = ?1 AND width = ?2 AND bucket >= ?3 AND bucket < ?4
           UNION ALL SELECT metric, n FROM event_stats WHERE store_id = ?1 AND width = ?5 AND bucket >= ?6 AND bucket < ?7
           UNION ALL SELECT metric, n FROM event_stats WHERE store_id = ?1 AND width = ?8 AND bucket >= ?9
         ) AS parts GROUP BY metric`,
        [storeId, five, start, h, hour, h, d, day, d],
      );
      return Object.fromEntries(rows.map((r) => [r.metric, r.n]));
    },

    pendingStats: async (storeId, endpointId) => {
      const pending = `SELECT count(*) AS backlog, min(received_at) AS oldest FROM events WHERE store_id = ? AND outcome IN (${PENDING_IN}) AND ${UNDELIVERED}`;
      // `endpoint_id || ''`, not indexable: the pending few are found on (store_id, outcome), not among every event of the endpoint.
      return backlogOf(
        endpointId ? await first<Backlog>(sql, `${pending} AND endpoint_id || '' = ?`, [storeId, endpointId]) : await first<Backlog>(sql, pending, [storeId]),
      );
    },
    handoffBacklog: async (storeId) => {
      // Ids sort by receipt time: each pending outcome's first id on (store_id, outcome, id) is its oldest, found
      // without reading the rows of a large backlog (min(received_at) reads every one of them).
      const firstOf = (o: string) =>
        `SELECT (SELECT received_at FROM events WHERE store_id = ?1 AND outcome = '${o}' AND ${UNDELIVERED} ORDER BY id LIMIT 1) AS at`;
      return backlogOf(
        await first<Backlog>(
          sql,
          `SELECT (SELECT count(*) FROM events WHERE store_id = ?1 AND outcome IN (${PENDING_IN}) AND ${UNDELIVERED}) AS backlog, min(at) AS oldest
           FROM (${PENDING_OUTCOMES.map(firstOf).join(' UNION ALL ')}) AS firsts`,
          [storeId],
        ),
      );
    },

    /**
     * The earliest next attempt of an event not under a lease, for the worker's sleep. A leased event is left out:
     * its holder records it, and a lease that ends unrecorded is taken by the worker's claim, which runs at least
     * every second (a peer's round on PostgreSQL would otherwise wake this worker again and again for nothing).
     */
    nextDueAt: async () =>
      (
        await first<{ at: number }>(
          sql,
          'SELECT next_attempt_at AS at FROM events WHERE next_attempt_at IS NOT NULL AND lease_until IS NULL ORDER BY next_attempt_at LIMIT 1',
          [],
        )
      )?.at ?? null,

    /** One statement a pass however many stores there are: an index seek per store (events_store_outcome_idx). */
    storesWithHeld: async () =>
      (
        await sql.all<{ id: string }>(
          `SELECT id FROM stores WHERE EXISTS (SELECT 1 FROM events WHERE events.store_id = stores.id AND events.outcome = 'held' AND events.${UNDELIVERED})`,
          [],
        )
      ).map((r) => r.id),
  };
}

/**
 * Queues one event for a new attempt now (a replay), from the outcome and attempt count the preview showed; its
 * lease ends as the dialect ends one (db/dialect.ts: PostgreSQL's events also carry a lease token).
 */
export function requeueEvent(eventId: string, from: { outcome: string; attempts: number }, at: number): Write {
  return {
    sql: (d) => `UPDATE events SET outcome = 'queued', code = NULL, next_attempt_at = ?, ${d.clearLease} WHERE id = ? AND outcome = ? AND attempts = ?`,
    params: [at, eventId, from.outcome, from.attempts],
    mustChange: true,
  };
}
