/**
 * Erasure (Shopify's shop/redact and customers/redact) and the reads a customer data request needs, written once for
 * both dialects over the thin runner. The one difference is where a raw body lives (the dialect's bodyKey, db/dialect.ts): SQLite keys event_bodies by an
 * integer the event row holds (`events.body_key`, cleared with the body so a key used again never leads back), and
 * PostgreSQL keys it by the event id. Receipts stay: an erased event keeps its row, its counts and its outcome, and
 * says its body is no longer retained. Which events and records a request covers is decided above.
 */
import { marks, type SqlRunner } from '../runner.ts';

/** An event that names one of the resource ids looked for, with the config of the endpoint it was received under. */
export interface ResourceEvent {
  id: string;
  endpointId: string;
  resourceId: string;
  outcome: string;
  bodyRetention: string;
  receivedAt: number;
  /** The endpoint's config snapshot at the event's config version (JSON text); null when the endpoint was deleted. */
  config: string | null;
}

/** Erasure and the reads a customer data request needs (Repo.redaction). */
export type RedactionStore = ReturnType<typeof redactionStore>;

export function redactionStore(sql: SqlRunner) {
  const byInteger = sql.dialect.bodyKey === 'integer';
  return {
    /** Up to `limit` ids of the store's events whose body is still kept, after `afterId` in id order (a cursor). */
    async retainedEvents(storeId: string, afterId: string, limit: number): Promise<string[]> {
      const rows = await sql.all<{ id: string }>("SELECT id FROM events WHERE store_id = ? AND id > ? AND body_retention = 'retained' ORDER BY id LIMIT ?", [
        storeId,
        afterId,
        limit,
      ]);
      return rows.map((r) => r.id);
    },

    /**
     * Deletes the raw bodies of these events (of `storeId` only) and marks them `expired`; the rows stay. Idempotent:
     * a second call (after a crash between the two statements) finds nothing more to delete. Returns the bodies deleted.
     */
    async eraseBodies(storeId: string, eventIds: string[]): Promise<number> {
      if (!eventIds.length) return 0;
      const ids = marks(eventIds.length);
      const deleted = byInteger
        ? await sql.run(
            `DELETE FROM event_bodies WHERE key IN (SELECT body_key FROM events WHERE store_id = ? AND id IN (${ids}) AND body_key IS NOT NULL)
               AND event_id IN (${ids})`,
            [storeId, ...eventIds, ...eventIds],
          )
        : await sql.run(`DELETE FROM event_bodies WHERE event_id IN (SELECT id FROM events WHERE store_id = ? AND id IN (${ids}))`, [storeId, ...eventIds]);
      const clearKey = byInteger ? ', body_key = NULL' : '';
      await sql.run(
        `UPDATE events SET body_retention = CASE WHEN body_retention = 'retained' THEN 'expired' ELSE body_retention END${clearKey}
       WHERE store_id = ? AND id IN (${ids})`,
        [storeId, ...eventIds],
      );
      return deleted;
    },

    /** The store's events whose resource id is one of `resourceIds`, oldest first, with their endpoint's config then. */
    async eventsByResource(storeId: string, resourceIds: string[]): Promise<ResourceEvent[]> {
      if (!resourceIds.length) return [];
      return sql.all<ResourceEvent>(
        `SELECT e.id, e.endpoint_id AS "endpointId", e.resource_id AS "resourceId", e.outcome, e.body_retention AS "bodyRetention",
              e.received_at AS "receivedAt", v.config
       FROM events e LEFT JOIN endpoint_versions v ON v.endpoint_id = e.endpoint_id AND v.version = e.config_version
       WHERE e.store_id = ? AND e.resource_id IN (${marks(resourceIds.length)})
       ORDER BY e.id`,
        [storeId, ...resourceIds],
      );
    },

    /** Deletes the store's records of these kinds; how many. */
    async deleteRecords(storeId: string, kinds: readonly string[]): Promise<number> {
      if (!kinds.length) return 0;
      return sql.run(`DELETE FROM records WHERE store_id = ? AND kind IN (${marks(kinds.length)})`, [storeId, ...kinds]);
    },

    /** Deletes the store's intents of these kinds (their input and preview hold free text); how many. */
    async deleteIntents(storeId: string, kinds: readonly string[]): Promise<number> {
      if (!kinds.length) return 0;
      return sql.run(`DELETE FROM intents WHERE store_id = ? AND kind IN (${marks(kinds.length)})`, [storeId, ...kinds]);
    },

    /** Deletes the store's stored idempotent responses (they repeat intents' previews for a day); how many. */
    async deleteIdempotencyKeys(storeId: string): Promise<number> {
      return sql.run('DELETE FROM idempotency_keys WHERE store_id = ?', [storeId]);
    },
  };
}
