/**
 * Every storage area written once for both dialects, attached to a handle one way: each resource's file gives a
 * factory of its area over the thin runner (db/runner.ts), and this composes them. A dialect's repo (db/sqlite/repo.ts,
 * db/pg/repo.ts) adds only what truly differs (the ingest commit, the handoff queue's leases, rate windows, signals,
 * liveness) and keeps the runner to itself. Areas whose methods name their resource are members of the handle; those
 * whose methods are named for their own table (platform links, app installs, Shopify webhooks, erasure, bulk replay)
 * are under one member each.
 */
import type { Capabilities, Instance, SharedAreas } from '../repo.ts';
import type { SqlRunner } from '../runner.ts';
import { alertStore } from './alerts.ts';
import { appInstallStore } from './app-installs.ts';
import { auditLog } from './audit.ts';
import { bulkReplayStore } from './bulk-replay.ts';
import { confirmationStore } from './confirmations.ts';
import { consoleStore } from './console.ts';
import { endpointStore } from './endpoints.ts';
import { eventReads } from './events.ts';
import { grantStore } from './grants.ts';
import { idempotencyStore } from './idempotency.ts';
import { intentStore } from './intents.ts';
import { meterStore } from './meters.ts';
import { oauthStore } from './oauth.ts';
import { platformLinkStore } from './platform-links.ts';
import { readinessStore } from './readiness.ts';
import { recordStore } from './records.ts';
import { redactionStore } from './redaction.ts';
import { retentionStore } from './retention.ts';
import { settingStore } from './settings.ts';
import { shopifyWebhookStore } from './shopify-webhooks.ts';
import { tenants } from './tenants.ts';

/** What every handle carries besides its dialect's own part: the areas, its instance and its capabilities. */
export function sharedAreas(sql: SqlRunner, instance: Instance, capabilities: Capabilities): SharedAreas & { instance: Instance; capabilities: Capabilities } {
  return {
    instance,
    capabilities,
    ...tenants(sql),
    ...settingStore(sql),
    ...grantStore(sql),
    ...endpointStore(sql),
    ...auditLog(sql),
    ...meterStore(sql),
    ...readinessStore(sql),
    ...recordStore(sql),
    ...intentStore(sql, instance),
    ...idempotencyStore(sql),
    ...eventReads(sql),
    ...confirmationStore(sql),
    ...alertStore(sql),
    ...retentionStore(sql),
    links: platformLinkStore(sql),
    installs: appInstallStore(sql),
    console: consoleStore(sql),
    oauth: oauthStore(sql),
    shopifyWebhooks: shopifyWebhookStore(sql),
    redaction: redactionStore(sql),
    bulkReplays: bulkReplayStore(sql),
  };
}
