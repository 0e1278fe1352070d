/**
 * Alerts and the journal of their handoffs (see the tables in db/sqlite/schema.ts), written once for both dialects
 * over the thin runner. An alert is raised by an insert that its open key makes unique per store while it is open,
 * so instances racing to raise it make one row; it is recovered by compare-and-set; each phase is journaled once, by
 * its primary key, in the same transaction as the change. A phase's handoff is leased by compare-and-set on its
 * attempt count, which also fences the record of its result: a holder whose lease was taken over writes nothing.
 * Which conditions raise or recover an alert, and what a send's result means, is decided above (src/relay/alerts.ts).
 */
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';

export type AlertRow = typeof s.alerts.$inferSelect;
export type AlertHandoffRow = typeof s.alertHandoffs.$inferSelect;

/** A phase's handoff as journaled with its alert's change: due at `at`. */
export interface AlertHandoffStart {
  phase: 'raised' | 'recovered';
  at: number;
}

/** A phase leased for a send: the row as leased (`attempts` counts this one) and its alert. */
export interface LeasedAlertHandoff {
  handoff: AlertHandoffRow;
  alert: AlertRow;
  /** The phase was `sending` under a lease that ran out: its last send may have reached the platform. */
  takenOver: boolean;
}

/** What a leased phase's send came to. `attempts`: the count to keep (the leased one, or one less when nothing was sent). */
export interface AlertHandoffResult {
  state: 'pending' | 'delivered' | 'failed' | 'skipped';
  attempts: number;
  /** When to try again (`pending`); null for a final state. */
  nextAttemptAt: number | null;
  lastError: string | null;
  deliveredAt: number | null;
}

export interface AlertStore {
  /**
   * Raises the alert and journals its `raised` phase in one transaction, unless an alert with its open key is open in
   * its store: true when this call raised it, false when one was open already (another instance raised it).
   */
  raiseAlert(alert: AlertRow, handoff: AlertHandoffStart): Promise<boolean>;
  /**
   * Recovers an open alert (compare-and-set: its open key cleared, so a new breach raises a new alert) and journals its
   * `recovered` phase in one transaction. `detail` replaces the stored facts when given. True when this call did.
   */
  recoverAlert(storeId: string, alertId: string, at: number, detail: string | null): Promise<boolean>;
  /**
   * The stores a sweep has a condition to look at, besides those with an alert open, a pause or an uninstall: an
   * active endpoint with a silence watch, or a failed authentication at or after `since`. One statement, so a
   * sweep over thousands of stores reads only the few with something to watch.
   */
  storesToWatch(since: number): Promise<string[]>;
  /** Open alerts: the store's, or every store's; oldest raised first. */
  listOpenAlerts(storeId?: string): Promise<AlertRow[]>;
  /** The store's alerts open now or recovered at or after `since`, newest raised first, at most `limit`. */
  listRecentAlerts(storeId: string, since: number, limit: number): Promise<AlertRow[]>;
  /** The journaled phases of these alerts. */
  listAlertHandoffs(alertIds: string[]): Promise<AlertHandoffRow[]>;
  /**
   * Leases up to `limit` phases due at `now` until `leaseUntil`: pending ones, and ones still `sending` whose lease ran
   * out. A `recovered` phase waits while its `raised` phase is pending or sending, so Flow hears them in order. Phases
   * of the stores in `skipStores` (paused) stay where they are.
   */
  leaseAlertHandoffs(now: number, leaseUntil: number, limit: number, skipStores: string[]): Promise<LeasedAlertHandoff[]>;
  /** Records a leased phase's result; false (nothing written) when the lease was taken over meanwhile. */
  finishAlertHandoff(leased: AlertHandoffRow, result: AlertHandoffResult): Promise<boolean>;
  /** An endpoint's config versions, newest first (the silence watch's start is read from them). */
  listEndpointVersions(endpointId: string): Promise<{ version: number; config: string; createdAt: number }[]>;
  /** Deletes recovered alerts raised before `before`, and their phases, at most `limit` alerts. Returns how many. */
  pruneAlerts(before: number, limit: number): Promise<number>;
}

const alerts = tableRows<AlertRow>(s.alerts);
const handoffs = tableRows<AlertHandoffRow>(s.alertHandoffs);

const journal = (alert: Pick<AlertRow, 'id' | 'storeId'>, h: AlertHandoffStart) =>
  handoffs.insert({ alertId: alert.id, phase: h.phase, storeId: alert.storeId, state: 'pending', attempts: 0, nextAttemptAt: h.at, createdAt: h.at });

export function alertStore(sql: SqlRunner): AlertStore {
  const alertRows = (query: string, params: unknown[]) => sql.all<AlertRow>(query, params);
  return {
    raiseAlert: async (alert, handoff) => {
      const insert = alerts.insert(alert);
      const raised = await sql.batch([
        { sql: `${insert.sql} ON CONFLICT (store_id, open_key) DO NOTHING`, params: insert.params, mustChange: true },
        journal(alert, handoff),
      ]);
      return raised.ok;
    },

    recoverAlert: async (storeId, alertId, at, detail) => {
      const insert = journal({ id: alertId, storeId }, { phase: 'recovered', at });
      const recovered = await sql.batch([
        {
          sql: "UPDATE alerts SET state = 'recovered', open_key = NULL, recovered_at = ?, detail = COALESCE(?, detail) WHERE id = ? AND store_id = ? AND state = 'open'",
          params: [at, detail, alertId, storeId],
          mustChange: true,
        },
        { sql: `${insert.sql} ON CONFLICT (alert_id, phase) DO NOTHING`, params: insert.params },
      ]);
      return recovered.ok;
    },

    storesToWatch: async (since) =>
      (
        await sql.all<{ id: string }>(
          `SELECT store_id AS id FROM endpoints WHERE status = 'active' AND expected_every_ms IS NOT NULL
           UNION SELECT store_id AS id FROM auth_failures WHERE at >= ?`,
          [since],
        )
      ).map((r) => r.id),

    listOpenAlerts: (storeId) =>
      storeId
        ? alertRows(`SELECT ${alerts.select} FROM alerts WHERE store_id = ? AND state = 'open' ORDER BY raised_at, id`, [storeId])
        : alertRows(`SELECT ${alerts.select} FROM alerts WHERE state = 'open' ORDER BY raised_at, id`, []),

    listRecentAlerts: (storeId, since, limit) =>
      alertRows(
        `SELECT ${alerts.select} FROM alerts WHERE store_id = ? AND (state = 'open' OR recovered_at >= ? OR raised_at >= ?)
         ORDER BY raised_at DESC, id DESC LIMIT ?`,
        [storeId, since, since, limit],
      ),

    listAlertHandoffs: (alertIds) =>
      alertIds.length
        ? sql.all<AlertHandoffRow>(`SELECT ${handoffs.select} FROM alert_handoffs WHERE alert_id IN (${alertIds.map(() => '?').join(', ')})`, alertIds)
        : Promise.resolve([]),

    leaseAlertHandoffs: async (now, leaseUntil, limit, skipStores) => {
      const skip = skipStores.length ? `AND h.store_id NOT IN (${skipStores.map(() => '?').join(', ')})` : '';
      const due = await sql.all<AlertHandoffRow>(
        `SELECT ${handoffs.select} FROM alert_handoffs h
         WHERE h.next_attempt_at IS NOT NULL AND h.next_attempt_at <= ?
           AND (h.state = 'pending' OR (h.state = 'sending' AND h.lease_until <= ?)) ${skip}
           AND (h.phase = 'raised' OR NOT EXISTS (
             SELECT 1 FROM alert_handoffs r WHERE r.alert_id = h.alert_id AND r.phase = 'raised' AND r.state IN ('pending', 'sending')))
         ORDER BY h.next_attempt_at, h.alert_id LIMIT ?`,
        [now, now, ...skipStores, limit],
      );
      const out: LeasedAlertHandoff[] = [];
      for (const h of due) {
        // One winner per phase and attempt: the count it read is the compare-and-set, and the fence of its record.
        const taken = await sql.run(
          `UPDATE alert_handoffs SET state = 'sending', attempts = attempts + 1, lease_until = ?
           WHERE alert_id = ? AND phase = ? AND attempts = ? AND (state = 'pending' OR (state = 'sending' AND lease_until <= ?))`,
          [leaseUntil, h.alertId, h.phase, h.attempts, now],
        );
        if (taken !== 1) continue;
        const alert = await first<AlertRow>(sql, `SELECT ${alerts.select} FROM alerts WHERE id = ?`, [h.alertId]);
        const handoff = { ...h, state: 'sending', attempts: h.attempts + 1, leaseUntil };
        if (alert) out.push({ handoff, alert, takenOver: h.state === 'sending' });
        // A phase whose alert is gone (pruned) has nothing to say: it ends.
        else
          await sql.run("UPDATE alert_handoffs SET state = 'skipped', next_attempt_at = NULL, lease_until = NULL WHERE alert_id = ? AND phase = ?", [
            h.alertId,
            h.phase,
          ]);
      }
      return out;
    },

    finishAlertHandoff: async (leased, r) =>
      (await sql.run(
        `UPDATE alert_handoffs SET state = ?, attempts = ?, next_attempt_at = ?, lease_until = NULL, last_error = ?, delivered_at = ?
         WHERE alert_id = ? AND phase = ? AND state = 'sending' AND attempts = ?`,
        [r.state, r.attempts, r.nextAttemptAt, r.lastError, r.deliveredAt, leased.alertId, leased.phase, leased.attempts],
      )) === 1,

    listEndpointVersions: (endpointId) =>
      sql.all(`SELECT version, config, created_at AS "createdAt" FROM endpoint_versions WHERE endpoint_id = ? ORDER BY version DESC`, [endpointId]),

    pruneAlerts: async (before, limit) => {
      const old = await sql.all<{ id: string }>("SELECT id FROM alerts WHERE state = 'recovered' AND raised_at < ? ORDER BY raised_at LIMIT ?", [
        before,
        limit,
      ]);
      if (!old.length) return 0;
      const ids = old.map((a) => a.id);
      const list = ids.map(() => '?').join(', ');
      const done = await sql.batch([
        { sql: `DELETE FROM alert_handoffs WHERE alert_id IN (${list})`, params: ids },
        { sql: `DELETE FROM alerts WHERE id IN (${list}) AND state = 'recovered'`, params: ids },
      ]);
      return done.ok ? done.changes[1]! : 0;
    },
  };
}
