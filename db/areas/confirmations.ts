/**
 * Downstream confirmations (Flow's "Confirm hookrelay event" action): one row per Flow action run, written once for
 * both dialects over the thin runner (db/runner.ts). Every read is one statement on an index of `confirmations`
 * (test/db/query-plans.test.ts checks SQLite's plans).
 */
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';

export interface ConfirmationRow {
  /** Flow's action_run_id: the same on every resend of one run. */
  actionRunId: string;
  storeId: string;
  eventId: string;
  endpointId: string;
  outcome: 'ok' | 'error';
  note: string | null;
  confirmedAt: number;
}

/** Per endpoint: the events received since the window's start that were delivered, and how many a run confirmed. */
export interface ConfirmedShareRow {
  endpointId: string;
  delivered: number;
  /** Delivered events with at least one confirmation. */
  confirmed: number;
  /** Delivered events with at least one confirmation whose outcome is `error`. */
  errored: number;
}

export interface ConfirmationStore {
  /** Records a run once: false when a row for its action_run_id already exists (a resend), which is left as it is. */
  insertConfirmation(row: ConfirmationRow): Promise<boolean>;
  getConfirmationRun(actionRunId: string): Promise<ConfirmationRow | null>;
  /** The event's newest confirmation and how many runs confirmed it; null when none did. */
  eventConfirmation(storeId: string, eventId: string): Promise<{ latest: ConfirmationRow; runs: number } | null>;
  /**
   * Events received at or after `since` (`sinceId`: its id floor, which bounds the index range) whose outcome is
   * now `delivered`, per endpoint, with how many of them a confirmation names.
   */
  confirmedShare(storeId: string, since: number, sinceId: string): Promise<ConfirmedShareRow[]>;
  /** Erases the store's notes (free text a merchant wrote; shop/redact), keeping the confirmations; how many. */
  eraseConfirmationNotes(storeId: string): Promise<number>;
}

const confirmations = tableRows<ConfirmationRow>(s.confirmations);

/** A confirmation of the event `e` of events (correlated): on confirmations_event_idx (store_id, event_id). */
const CONFIRMED = 'SELECT 1 FROM confirmations c WHERE c.store_id = e.store_id AND c.event_id = e.id';

export function confirmationStore(sql: SqlRunner): ConfirmationStore {
  return {
    insertConfirmation: async (row) => {
      const { sql: insert, params } = confirmations.insert(row);
      return (await sql.run(`${insert} ON CONFLICT (action_run_id) DO NOTHING`, params)) === 1;
    },
    getConfirmationRun: (actionRunId) =>
      first<ConfirmationRow>(sql, `SELECT ${confirmations.select} FROM confirmations WHERE action_run_id = ?`, [actionRunId]),
    eventConfirmation: async (storeId, eventId) => {
      const rows = await sql.all<ConfirmationRow & { runs: number }>(
        `SELECT ${confirmations.select}, (SELECT count(*) FROM confirmations WHERE store_id = ?1 AND event_id = ?2) AS runs
         FROM confirmations WHERE store_id = ?1 AND event_id = ?2 ORDER BY confirmed_at DESC, action_run_id DESC LIMIT 1`,
        [storeId, eventId],
      );
      const [r] = rows;
      if (!r) return null;
      const { runs, ...latest } = r;
      return { latest, runs: Number(runs) };
    },
    confirmedShare: async (storeId, since, sinceId) =>
      (
        await sql.all<ConfirmedShareRow>(
          `SELECT e.endpoint_id AS "endpointId", count(*) AS delivered,
             CAST(sum(CASE WHEN EXISTS (${CONFIRMED}) THEN 1 ELSE 0 END) AS BIGINT) AS confirmed,
             CAST(sum(CASE WHEN EXISTS (${CONFIRMED} AND c.outcome = 'error') THEN 1 ELSE 0 END) AS BIGINT) AS errored
           FROM events e WHERE e.store_id = ? AND e.outcome = 'delivered' AND e.id >= ? AND e.received_at >= ?
           GROUP BY e.endpoint_id ORDER BY e.endpoint_id`,
          [storeId, sinceId, since],
        )
      ).map((r) => ({ endpointId: r.endpointId, delivered: Number(r.delivered), confirmed: Number(r.confirmed), errored: Number(r.errored) })),
    eraseConfirmationNotes: (storeId) => sql.run('UPDATE confirmations SET note = NULL WHERE store_id = ? AND note IS NOT NULL', [storeId]),
  };
}
