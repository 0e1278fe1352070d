/**
 * App installs (Shopify's authorization code grant), written once for both dialects over the thin runner (see
 * db/areas/platform-links.ts): the `state`s of installs whose callback verified (oauth_states: kept as their SHA-256, once
 * used, so none is used twice), the store identity Shopify reports once an install completes, and the app
 * subscriptions hookrelay asked Shopify for (the only ones whose webhooks move a plan).
 */
import type { SqlRunner } from '../runner.ts';

/** A store's plan and its billing status. */
export interface Billing {
  plan: string;
  billingStatus: string;
}

/** App installs, OAuth states and the subscriptions hookrelay asked for (Repo.installs). */
export type AppInstallStore = ReturnType<typeof appInstallStore>;

export function appInstallStore(sql: SqlRunner) {
  return {
    /**
     * Records a state the callback has verified (Shopify's signature, the browser's cookie, the state's own MAC and
     * expiry) as used: true the first time, false when it was used already. Nothing is written when an install
     * begins, so only callbacks Shopify signed add rows; each is kept until an hour past its state's expiry (a margin
     * for instances' clocks: the MAC's expiry refuses it by then).
     */
    async useState(stateHash: string, shopDomain: string, now: number, expiresAt: number): Promise<boolean> {
      await sql.run('DELETE FROM oauth_states WHERE expires_at < ?', [now - 3600_000]);
      const changed = await sql.run(
        'INSERT INTO oauth_states (state_hash, shop_domain, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (state_hash) DO NOTHING',
        [stateHash, shopDomain, now, expiresAt, now],
      );
      return changed === 1;
    },

    /** Records an app subscription hookrelay asked Shopify for (appSubscriptionCreate), for the store and plan. */
    async recordSubscription(subscriptionId: string, storeId: string, plan: string, now: number): Promise<void> {
      await sql.run(
        'INSERT INTO app_subscriptions (subscription_id, store_id, plan, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (subscription_id) DO NOTHING',
        [subscriptionId, storeId, plan, now],
      );
    },

    /** The subscriptions hookrelay created for the store, newest first: their ids and plans. */
    async subscriptionsOf(storeId: string): Promise<{ subscriptionId: string; plan: string; createdAt: number }[]> {
      return sql.all(
        'SELECT subscription_id AS "subscriptionId", plan, created_at AS "createdAt" FROM app_subscriptions WHERE store_id = ? ORDER BY created_at DESC, subscription_id DESC',
        [storeId],
      );
    },

    /**
     * Sets a store's plan and billing status to `to` only while they are still `from` and the store is installed (or,
     * with `installed` false, uninstalled): compare-and-set, so a reading of Shopify made before another change landed
     * never overwrites it, and nothing else of the store row is written. False when they had changed (read again).
     */
    async setBilling(storeId: string, from: Billing, to: Billing, now: number, installed = true): Promise<boolean> {
      const changed = await sql.run(
        `UPDATE stores SET plan = ?, billing_status = ?, updated_at = ?
       WHERE id = ? AND plan = ? AND billing_status = ? AND uninstalled_at IS ${installed ? '' : 'NOT '}NULL`,
        [to.plan, to.billingStatus, now, storeId, from.plan, from.billingStatus],
      );
      return changed === 1;
    },

    /** The platform account and installation ids Shopify reported for the store (its GraphQL identity). */
    async setStoreIdentity(storeId: string, platformAccountId: string, installationId: string, now: number): Promise<void> {
      await sql.run('UPDATE stores SET platform_account_id = ?, installation_id = ?, updated_at = ? WHERE id = ?', [
        platformAccountId,
        installationId,
        now,
        storeId,
      ]);
    },
  };
}
