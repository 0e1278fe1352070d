/**
 * The platform_links area (see the table in db/sqlite/schema.ts), written once for both dialects over a thin
 * runner: every statement below is plain SQL both SQLite and PostgreSQL run as written (`?` placeholders, which
 * the PostgreSQL runner numbers). Each change is one statement, so instances racing on a store's row serialise
 * on it: one renewal, one probe, one pause.
 */
import { marks, tableRows, type SqlRunner } from '../runner.ts';
import { platformLinks } from '../sqlite/schema.ts';
import { UNDELIVERED } from '../types.ts';

export type PlatformLinkRow = typeof platformLinks.$inferSelect;

export interface PendingPause {
  reason: string;
  code: string;
  message: string;
}

export interface ObtainedToken {
  sealed: string;
  expiresAt: number | null;
  obtainedAt: number;
  scope: string | null;
  clientId: string | null;
  /** OAuth: the refresh token that came with it (sealed) and its expiry; null for other grants. */
  refreshSealed?: string | null;
  refreshExpiresAt?: number | null;
}

/** A store's link to its platform: obtained tokens, the renewal in progress, the answered API version, the pause. */
export interface PlatformLinkStore {
  get(storeId: string): Promise<PlatformLinkRow | null>;
  /** The links of several stores in one statement (a handoff round's); a store without one is left out. */
  getMany(storeIds: readonly string[]): Promise<PlatformLinkRow[]>;
  /** Links whose handoff is paused. */
  listPaused(): Promise<PlatformLinkRow[]>;
  /** Takes the store's one token renewal for `owner` until `until`; false while another owner holds it. */
  takeRenewal(storeId: string, owner: string, now: number, until: number): Promise<boolean>;
  /** Stores a token under the renewal `owner` holds; the new generation, or null when the renewal was lost meanwhile. */
  saveToken(storeId: string, owner: string, token: ObtainedToken, now: number): Promise<number | null>;
  /** Ends `owner`'s renewal without a token, recording why (a PAUSE_CODES key), or null: nothing went wrong. */
  failRenewal(storeId: string, owner: string, code: string | null, now: number): Promise<void>;
  /** Forgets the obtained token and its refresh token (credential settings changed, the app was uninstalled). */
  clearToken(storeId: string, now: number): Promise<void>;
  /**
   * Stores a token pair from outside a renewal (an install's code exchange): the same fields saveToken writes, any
   * renewal in progress ended. Returns the new generation.
   */
  installToken(storeId: string, token: ObtainedToken, now: number): Promise<number>;
  /** Records the API version the platform answered with. */
  noteApiVersion(storeId: string, version: string, now: number): Promise<void>;
  /**
   * Pauses the store's handoff, or updates the reason of a pause in place (keeping since, probes and the next
   * probe). `probes` and `nextProbeAt` apply to a new pause only.
   */
  pause(storeId: string, pause: PendingPause, now: number, probes: number, nextProbeAt: number): Promise<PlatformLinkRow>;
  /** Takes the store's one probe when it is due: the link, or null (not paused, not due, or another probe runs). */
  takeProbe(storeId: string, now: number, leaseUntil: number): Promise<PlatformLinkRow | null>;
  /** A probe found the pause's cause still there: counted, next one at `nextProbeAt`. */
  probeFailed(storeId: string, pause: PendingPause, now: number, nextProbeAt: number): Promise<void>;
  /**
   * Ends the pause (true when there was one) and makes the store's waiting events due now: events deferred to a
   * later probe go at once. Probes stay counted, so a pause that returns soon after backs off from where it was.
   */
  resume(storeId: string, now: number): Promise<boolean>;
  /**
   * Spends from stores' cost budgets in one statement: writes what is left of each at `at` and the send times handed
   * out up to `horizon`, only where the budget is still at `version` (compare-and-set: instances spending at once
   * retry with what the other left). The stores spent; one whose budget moved meanwhile is left out.
   */
  spendBudgets(spends: readonly BudgetSpend[]): Promise<Set<string>>;
  /** What the platform reported of the store's budget (its answer is the truth): replaces the model. */
  observeBudget(storeId: string, budget: ObservedBudget, at: number): Promise<void>;
}

export interface BudgetSpend {
  storeId: string;
  /** The budget_version the spend was worked out from. */
  version: number;
  available: number;
  at: number;
  horizon: number | null;
}

export interface ObservedBudget {
  max: number;
  available: number;
  /** Points restored per second. */
  rate: number;
  /** What one handoff costs, in points. */
  cost: number;
}

const COLUMNS = tableRows(platformLinks).select;

/** What storing an obtained token writes: the sealed pair, its times, scope and client; a new generation; the renewal over. */
const TOKEN_SET = `token_sealed = ?, token_expires_at = ?, token_obtained_at = ?, token_scope = ?, token_client_id = ?,
  refresh_sealed = ?, refresh_expires_at = ?, token_generation = token_generation + 1, renewal_lease_until = NULL,
  renewal_owner = NULL, last_renewal_at = ?, last_renewal_error = NULL, updated_at = ?`;
const tokenParams = (t: ObtainedToken, now: number) => [
  t.sealed,
  t.expiresAt,
  t.obtainedAt,
  t.scope,
  t.clientId,
  t.refreshSealed ?? null,
  t.refreshExpiresAt ?? null,
  now,
  now,
];

/**
 * The budget model, the renewal lease and the answered API version are bookkeeping of sends, written for nearly
 * every send of a store (the version once per store and process): on SQLite they commit without an fsync of their
 * own (the next receipt's commit syncs them). A power cut that loses one costs a THROTTLED answer (the platform's
 * report replaces the model), a lease that runs out or a version noted again; never an acknowledged event, nor a
 * token (saveToken stays synced).
 */
const RELAXED = { relaxed: true };

export function platformLinkStore(sql: SqlRunner): PlatformLinkStore {
  const ensure = (storeId: string, now: number) =>
    sql.run('INSERT INTO platform_links (store_id, updated_at) VALUES (?, ?) ON CONFLICT (store_id) DO NOTHING', [storeId, now], RELAXED);
  return {
    async get(storeId: string) {
      return (await sql.all<PlatformLinkRow>(`SELECT ${COLUMNS} FROM platform_links WHERE store_id = ?`, [storeId]))[0] ?? null;
    },

    async getMany(storeIds: readonly string[]) {
      if (!storeIds.length) return [];
      return sql.all<PlatformLinkRow>(`SELECT ${COLUMNS} FROM platform_links WHERE store_id IN (${marks(storeIds.length)})`, [...storeIds]);
    },

    listPaused() {
      return sql.all<PlatformLinkRow>(`SELECT ${COLUMNS} FROM platform_links WHERE pause_reason IS NOT NULL ORDER BY store_id`, []);
    },

    async takeRenewal(storeId: string, owner: string, now: number, until: number) {
      await ensure(storeId, now);
      const changed = await sql.run(
        `UPDATE platform_links SET renewal_lease_until = ?, renewal_owner = ?, updated_at = ?
       WHERE store_id = ? AND (renewal_lease_until IS NULL OR renewal_lease_until <= ? OR renewal_owner = ?)`,
        [until, owner, now, storeId, now, owner],
        RELAXED,
      );
      return changed === 1;
    },

    async saveToken(storeId: string, owner: string, t: ObtainedToken, now: number) {
      const rows = await sql.all<{ generation: number }>(
        `UPDATE platform_links SET ${TOKEN_SET} WHERE store_id = ? AND renewal_owner = ? RETURNING token_generation AS "generation"`,
        [...tokenParams(t, now), storeId, owner],
      );
      return rows[0]?.generation ?? null;
    },

    async failRenewal(storeId: string, owner: string, code: string | null, now: number) {
      await sql.run(
        `UPDATE platform_links SET renewal_lease_until = NULL, renewal_owner = NULL, last_renewal_error = COALESCE(?, last_renewal_error), updated_at = ?
       WHERE store_id = ? AND renewal_owner = ?`,
        [code, now, storeId, owner],
        RELAXED,
      );
    },

    async clearToken(storeId: string, now: number) {
      await sql.run(
        `UPDATE platform_links SET token_sealed = NULL, token_expires_at = NULL, token_obtained_at = NULL, token_scope = NULL,
         token_client_id = NULL, refresh_sealed = NULL, refresh_expires_at = NULL, token_generation = token_generation + 1,
         last_renewal_error = NULL, updated_at = ?
       WHERE store_id = ?`,
        [now, storeId],
      );
    },

    async installToken(storeId: string, t: ObtainedToken, now: number) {
      await ensure(storeId, now);
      const rows = await sql.all<{ generation: number }>(
        `UPDATE platform_links SET ${TOKEN_SET} WHERE store_id = ? RETURNING token_generation AS "generation"`,
        [...tokenParams(t, now), storeId],
      );
      return rows[0]!.generation;
    },

    async noteApiVersion(storeId: string, version: string, now: number) {
      // One upsert, not an ensure then an update: a store's first reply in a process writes it.
      await sql.run(
        `INSERT INTO platform_links (store_id, answered_api_version, answered_api_version_at, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (store_id) DO UPDATE SET answered_api_version = excluded.answered_api_version,
           answered_api_version_at = excluded.answered_api_version_at, updated_at = excluded.updated_at`,
        [storeId, version, now, now],
        RELAXED,
      );
    },

    async pause(storeId: string, p: PendingPause, now: number, probes: number, nextProbeAt: number) {
      await ensure(storeId, now);
      const rows = await sql.all<PlatformLinkRow>(
        `UPDATE platform_links SET
         probes = CASE WHEN pause_reason IS NULL THEN ? ELSE probes END,
         next_probe_at = CASE WHEN pause_reason IS NULL THEN ? ELSE next_probe_at END,
         paused_since = CASE WHEN pause_reason IS NULL THEN ? ELSE paused_since END,
         pause_reason = ?, pause_code = ?, pause_message = ?, updated_at = ?
       WHERE store_id = ? RETURNING ${COLUMNS}`,
        [probes, nextProbeAt, now, p.reason, p.code, p.message, now, storeId],
      );
      return rows[0]!;
    },

    async takeProbe(storeId: string, now: number, leaseUntil: number) {
      const rows = await sql.all<PlatformLinkRow>(
        `UPDATE platform_links SET probe_lease_until = ?, last_probe_at = ?, updated_at = ?
       WHERE store_id = ? AND pause_reason IS NOT NULL AND next_probe_at <= ? AND (probe_lease_until IS NULL OR probe_lease_until <= ?)
       RETURNING ${COLUMNS}`,
        [leaseUntil, now, now, storeId, now, now],
      );
      return rows[0] ?? null;
    },

    async probeFailed(storeId: string, p: PendingPause, now: number, nextProbeAt: number) {
      await sql.run(
        `UPDATE platform_links SET probes = probes + 1, next_probe_at = ?, probe_lease_until = NULL, pause_reason = ?, pause_code = ?,
         pause_message = ?, updated_at = ?
       WHERE store_id = ? AND pause_reason IS NOT NULL`,
        [nextProbeAt, p.reason, p.code, p.message, now, storeId],
      );
    },

    async spendBudgets(spends: readonly BudgetSpend[]) {
      if (!spends.length) return new Set<string>();
      // An upsert of rows in key order, so that two instances spending for the same stores lock their rows in the
      // same order (never a deadlock); the conflict's WHERE is the compare-and-set. A row that is gone is not made
      // again (EXISTS); the values are cast so that PostgreSQL types them as the columns.
      const sorted = [...spends].sort((x, y) => (x.storeId < y.storeId ? -1 : x.storeId > y.storeId ? 1 : 0));
      const row = '(CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS DOUBLE PRECISION), CAST(? AS BIGINT), CAST(? AS BIGINT))';
      const rows = await sql.all<{ storeId: string }>(
        `INSERT INTO platform_links (store_id, budget_version, budget_available, budget_at, budget_horizon, updated_at)
         SELECT v.column1, v.column2, v.column3, v.column4, v.column5, v.column4 FROM (VALUES ${sorted.map(() => row).join(', ')}) AS v
         WHERE EXISTS (SELECT 1 FROM platform_links l WHERE l.store_id = v.column1) ORDER BY v.column1
         ON CONFLICT (store_id) DO UPDATE SET budget_available = excluded.budget_available, budget_at = excluded.budget_at,
           budget_horizon = excluded.budget_horizon, budget_version = platform_links.budget_version + 1
         WHERE platform_links.budget_version = excluded.budget_version
         RETURNING store_id AS "storeId"`,
        sorted.flatMap((b) => [b.storeId, b.version, b.available, b.at, b.horizon]),
        RELAXED,
      );
      return new Set(rows.map((r) => r.storeId));
    },

    async observeBudget(storeId: string, b: ObservedBudget, at: number) {
      // One upsert: a new row starts at version 1, as an ensured row updated once would.
      await sql.run(
        `INSERT INTO platform_links (store_id, budget_max, budget_available, budget_rate, budget_cost, budget_at, budget_version, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 1, ?)
         ON CONFLICT (store_id) DO UPDATE SET budget_max = excluded.budget_max, budget_available = excluded.budget_available,
           budget_rate = excluded.budget_rate, budget_cost = excluded.budget_cost, budget_at = excluded.budget_at,
           budget_version = platform_links.budget_version + 1`,
        [storeId, b.max, b.available, b.rate, b.cost, at, at],
        RELAXED,
      );
    },

    async resume(storeId: string, now: number) {
      const ended = await sql.run(
        `UPDATE platform_links SET pause_reason = NULL, pause_code = NULL, pause_message = NULL, paused_since = NULL, next_probe_at = NULL,
         probe_lease_until = NULL, resumed_at = ?, updated_at = ?
       WHERE store_id = ? AND pause_reason IS NOT NULL`,
        [now, now, storeId],
      );
      if (ended === 0) return false;
      // Events deferred while paused wait for the next probe time; leased ones are a worker's, which decides.
      await sql.run(
        `UPDATE events SET next_attempt_at = ? WHERE store_id = ? AND outcome IN ('accepted', 'queued') AND ${UNDELIVERED} AND lease_until IS NULL AND next_attempt_at > ?`,
        [now, storeId, now],
      );
      return true;
    },
  };
}
