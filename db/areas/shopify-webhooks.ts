/**
 * The shopify_webhooks area (see the table in db/sqlite/schema.ts), written once for both dialects over the thin
 * runner (as db/areas/platform-links.ts is): plain SQL both run as written, `?` placeholders. A delivery is recorded once
 * by its webhook id (a repeat changes nothing), and runs of its processing are taken by compare-and-set on the row,
 * so instances (or a sweep and the run the recording began) never process one delivery at the same time.
 * Which topic does what is decided above (src/platform/shopify/webhook-handler.ts); this only records and hands out.
 */
import { tableRows, type SqlRunner } from '../runner.ts';
import { shopifyWebhooks } from '../sqlite/schema.ts';

export type ShopifyWebhookRow = typeof shopifyWebhooks.$inferSelect;

/** A delivery as it is recorded: the first run of its processing is taken with it (`leaseUntil`, attempts 1). */
export type NewShopifyWebhook = Pick<
  ShopifyWebhookRow,
  'webhookId' | 'topic' | 'shopDomain' | 'apiVersion' | 'eventId' | 'triggeredAt' | 'receivedAt' | 'payloadSealed'
> & {
  /** Set for a delivery with nothing to process (an unknown topic): recorded as done. */
  processedAt: number | null;
  result: string | null;
  leaseUntil: number | null;
};

const COLUMNS = tableRows(shopifyWebhooks).select;

/** Shopify's webhook deliveries and their once-only effects (Repo.shopifyWebhooks). */
export type ShopifyWebhookStore = ReturnType<typeof shopifyWebhookStore>;

export function shopifyWebhookStore(sql: SqlRunner) {
  const get = async (webhookId: string): Promise<ShopifyWebhookRow | null> => {
    const rows = await sql.all<ShopifyWebhookRow>(`SELECT ${COLUMNS} FROM shopify_webhooks WHERE webhook_id = ?`, [webhookId]);
    return rows[0] ?? null;
  };
  return {
    /** Records a delivery; false when its webhook id was recorded already (a repeat: nothing is written). */
    async record(w: NewShopifyWebhook): Promise<boolean> {
      const changed = await sql.run(
        `INSERT INTO shopify_webhooks (webhook_id, topic, shop_domain, api_version, event_id, triggered_at, received_at, processed_at,
         attempts, lease_until, result, payload_sealed)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (webhook_id) DO NOTHING`,
        [
          w.webhookId,
          w.topic,
          w.shopDomain,
          w.apiVersion,
          w.eventId,
          w.triggeredAt,
          w.receivedAt,
          w.processedAt,
          w.processedAt == null ? 1 : 0,
          w.processedAt == null ? w.leaseUntil : null,
          w.result,
          w.payloadSealed,
        ],
      );
      return changed === 1;
    },

    get,

    /** Ids of deliveries not yet processed whose run is free (never begun, ended by a crash, or its retry time come), oldest first. */
    async due(now: number, limit: number): Promise<string[]> {
      const rows = await sql.all<{ webhookId: string }>(
        `SELECT webhook_id AS "webhookId" FROM shopify_webhooks
       WHERE processed_at IS NULL AND (lease_until IS NULL OR lease_until <= ?) ORDER BY received_at LIMIT ?`,
        [now, limit],
      );
      return rows.map((r) => r.webhookId);
    },

    /** Takes a run of the delivery until `until` when it is due (counted in attempts): the row, or null (done, or another run holds it). */
    async claim(webhookId: string, now: number, until: number): Promise<ShopifyWebhookRow | null> {
      const changed = await sql.run(
        `UPDATE shopify_webhooks SET attempts = attempts + 1, lease_until = ?
       WHERE webhook_id = ? AND processed_at IS NULL AND (lease_until IS NULL OR lease_until <= ?)`,
        [until, webhookId, now],
      );
      return changed === 1 ? get(webhookId) : null;
    },

    /** Processed: the sealed payload is dropped, the run and any error cleared. A second call changes nothing. */
    async done(webhookId: string, result: string, now: number): Promise<boolean> {
      const changed = await sql.run(
        `UPDATE shopify_webhooks SET processed_at = ?, result = ?, payload_sealed = NULL, lease_until = NULL, last_error = NULL
       WHERE webhook_id = ? AND processed_at IS NULL`,
        [now, result, webhookId],
      );
      return changed === 1;
    },

    /** A run failed: its stable code kept, the next run not before `retryAt`. Nothing for a delivery processed meanwhile. */
    async failed(webhookId: string, code: string, retryAt: number): Promise<void> {
      await sql.run('UPDATE shopify_webhooks SET last_error = ?, lease_until = ? WHERE webhook_id = ? AND processed_at IS NULL', [code, retryAt, webhookId]);
    },

    /**
     * Takes the once-only effect `key` for the delivery `webhookId`: true when this delivery may act (it took it now,
     * or took it before and is running again after a failure), false when another delivery took it (a replay).
     */
    async claimEffect(key: string, storeId: string, webhookId: string, now: number): Promise<boolean> {
      await sql.run(
        'INSERT INTO shopify_webhook_effects (effect_key, store_id, webhook_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (effect_key) DO NOTHING',
        [key, storeId, webhookId, now],
      );
      const rows = await sql.all<{ webhookId: string }>('SELECT webhook_id AS "webhookId" FROM shopify_webhook_effects WHERE effect_key = ?', [key]);
      return rows[0]?.webhookId === webhookId;
    },

    /** Forgets deliveries processed before `before` (long past any retry Shopify makes of them); how many. */
    async prune(before: number): Promise<number> {
      return sql.run('DELETE FROM shopify_webhooks WHERE processed_at IS NOT NULL AND processed_at < ?', [before]);
    },
  };
}
