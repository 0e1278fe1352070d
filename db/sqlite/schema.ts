/** SQLite schema. Timestamps are integer milliseconds since the epoch; JSON columns hold text. */
import { sql } from 'drizzle-orm';
import { blob, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

export const stores = sqliteTable('stores', {
  id: text('id').primaryKey(),
  platformKey: text('platform_key').notNull(),
  platformAccountId: text('platform_account_id').notNull(),
  shopDomain: text('shop_domain').notNull().unique(),
  installationId: text('installation_id').notNull(),
  plan: text('plan').notNull(),
  billingStatus: text('billing_status').notNull(),
  destination: text('destination').notNull(),
  adminTokenEnv: text('admin_token_env'),
  /** How the Admin API token is obtained (src/contract/platform.ts CREDENTIAL_MODES); null for the log destination. */
  credentialMode: text('credential_mode'),
  /** The app's client id (client-credentials); not a secret. */
  clientId: text('client_id'),
  /** NAME of the environment variable holding the app's client secret (client-credentials); never the secret. */
  clientSecretEnv: text('client_secret_env'),
  /** When the merchant uninstalled the app (Shopify's app/uninstalled webhook); null while installed. */
  uninstalledAt: integer('uninstalled_at'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
});

export const grants = sqliteTable(
  'grants',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id')
      .notNull()
      .references(() => stores.id),
    tier: text('tier').notNull(),
    scopes: text('scopes').notNull(),
    label: text('label').notNull(),
    tokenHash: text('token_hash').notNull(),
    expiresAt: integer('expires_at').notNull(),
    revokedAt: integer('revoked_at'),
    createdAt: integer('created_at').notNull(),
    lastUsedAt: integer('last_used_at'),
    /** The OAuth client (its Client ID Metadata Document URL) whose consent issued the grant; null for a grant issued by hand. */
    clientId: text('client_id'),
    /** The client's name as its metadata document gave it (unverified); null for a grant issued by hand. */
    clientName: text('client_name'),
  },
  (t) => [uniqueIndex('grants_token_hash_idx').on(t.tokenHash), index('grants_store_idx').on(t.storeId, t.id)],
);

export const endpoints = sqliteTable(
  'endpoints',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id')
      .notNull()
      .references(() => stores.id),
    name: text('name').notNull(),
    status: text('status').notNull(),
    triggerVariant: text('trigger_variant').notNull(),
    resourceIdPath: text('resource_id_path'),
    relatedResourceIdPath: text('related_resource_id_path'),
    requiredPaths: text('required_paths').notNull(),
    /** Typed fields handed to Flow: JSON `[{name, path, type}]` (src/lib/fields.ts). */
    fields: text('fields').notNull().default('[]'),
    /** 1: the event's JSON is handed off too, as the trigger's `body json` (trimmed to Flow's limit). */
    includeBody: integer('include_body').notNull().default(0),
    senderProfile: text('sender_profile'),
    authMode: text('auth_mode').notNull(),
    headerName: text('header_name').notNull(),
    secretSealed: text('secret_sealed').notNull(),
    secretLast4: text('secret_last4').notNull(),
    previousSecretSealed: text('previous_secret_sealed'),
    previousSecretExpiresAt: integer('previous_secret_expires_at'),
    sourceLabel: text('source_label').notNull(),
    eventType: text('event_type'),
    /** Silence watch: the longest quiet time expected between receipts, ms; null when not watched. */
    expectedEveryMs: integer('expected_every_ms'),
    configVersion: integer('config_version').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('endpoints_store_idx').on(t.storeId, t.id)],
);

export const endpointVersions = sqliteTable(
  'endpoint_versions',
  {
    endpointId: text('endpoint_id')
      .notNull()
      .references(() => endpoints.id),
    version: integer('version').notNull(),
    config: text('config').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.endpointId, t.version] })],
);

export const events = sqliteTable(
  'events',
  {
    id: text('id').primaryKey(),
    receiptId: text('receipt_id').notNull(),
    storeId: text('store_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    configVersion: integer('config_version').notNull(),
    outcome: text('outcome').notNull(),
    code: text('code'),
    externalEventId: text('external_event_id'),
    eventType: text('event_type'),
    isTest: integer('is_test', { mode: 'boolean' }).notNull(),
    duplicateOf: text('duplicate_of'),
    resourceId: text('resource_id'),
    relatedResourceId: text('related_resource_id'),
    bodyBytes: integer('body_bytes').notNull(),
    bodyRetention: text('body_retention').notNull(),
    receivedAt: integer('received_at').notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastAttemptAt: integer('last_attempt_at'),
    nextAttemptAt: integer('next_attempt_at'),
    leaseUntil: integer('lease_until'),
    deliveredAt: integer('delivered_at'),
    /** The key of the event's raw body in event_bodies; null when none was kept. SQLite only: not in EventRow. */
    bodyKey: integer('body_key'),
  },
  (t) => [
    index('events_store_idx').on(t.storeId, t.id),
    index('events_store_endpoint_idx').on(t.storeId, t.endpointId, t.id),
    // Every event but the delivered ones: a delivery's record removes its entry and writes none (db/types.ts, UNDELIVERED).
    index('events_store_outcome_idx').on(t.storeId, t.outcome, t.id).where(sql`${t.outcome} <> 'delivered'`),
    index('events_dedupe_idx').on(t.endpointId, t.externalEventId, t.receivedAt).where(sql`${t.externalEventId} IS NOT NULL`),
    index('events_due_idx').on(t.nextAttemptAt).where(sql`${t.nextAttemptAt} IS NOT NULL`),
  ],
);

/**
 * Raw bodies live apart from receipts: retained for replay, never returned by any read. Keyed by an integer in
 * the order they are stored (the event row holds it, `events.body_key`), with no index: each ingest commit
 * appends to this one B-tree only, where a text key and an expiry index made three. Retention is one box-wide
 * duration, so bodies expire in the order they were stored, and the sweep deletes from the lowest key up. Once
 * every body is gone the keys start again from 1: a read joins on the event id as well as the key.
 */
export const eventBodies = sqliteTable('event_bodies', {
  key: integer('key').primaryKey(),
  eventId: text('event_id').notNull(),
  expiresAt: integer('expires_at').notNull(),
  body: blob('body', { mode: 'buffer' }).notNull(),
});

/**
 * Handoff attempts, keyed by event and attempt number. This table, `usage_counters` and `event_stats` are
 * `WITHOUT ROWID` (clustered on their primary key, no second B-tree to write per row): drizzle cannot declare
 * that, so migration 0005 does by hand, and a drizzle-generated rebuild of these tables must keep it.
 */
export const attempts = sqliteTable(
  'attempts',
  {
    eventId: text('event_id').notNull(),
    number: integer('number').notNull(),
    destination: text('destination').notNull(),
    startedAt: integer('started_at').notNull(),
    finishedAt: integer('finished_at').notNull(),
    outcome: text('outcome').notNull(),
    httpStatus: integer('http_status'),
    code: text('code'),
    message: text('message'),
    /** The typed fields this attempt sent: JSON `{found, missing, wrongType, bodyCut}` (names, never a value); null without fields. */
    fieldCounts: text('field_counts'),
    retryAt: integer('retry_at'),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.number] })],
);

/** Failed inbound authentications: endpoint, code, time. No body, no header value. */
export const authFailures = sqliteTable(
  'auth_failures',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    code: text('code').notNull(),
    /** Signature forensics: the usual mistake the failure matched (a DIAGNOSES code), never the value; null when none. */
    diagnosis: text('diagnosis'),
    at: integer('at').notNull(),
    /** Failures this row stands for: 1, or a flood's count folded into one row (at = the last one's time). */
    count: integer('count').notNull().default(1),
  },
  (t) => [index('auth_failures_endpoint_idx').on(t.endpointId, t.at), index('auth_failures_store_idx').on(t.storeId, t.at)],
);

/** One row per operation call and per intent transition. Never secrets, bodies or header values. */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    at: integer('at').notNull(),
    storeId: text('store_id'),
    grantId: text('grant_id'),
    actorKind: text('actor_kind').notNull(),
    actorLabel: text('actor_label').notNull(),
    operationId: text('operation_id').notNull(),
    scopes: text('scopes').notNull(),
    targetId: text('target_id'),
    intentId: text('intent_id'),
    transition: text('transition'),
    outcome: text('outcome').notNull(),
    status: integer('status').notNull(),
    errorCode: text('error_code'),
    refusalCategory: text('refusal_category'),
    refusalCode: text('refusal_code'),
    requestId: text('request_id'),
    /** How the call arrived: `http`, `mcp` or `cli` (null on rows written before the column existed). */
    surface: text('surface'),
  },
  (t) => [index('audit_store_idx').on(t.storeId, t.at), index('audit_at_idx').on(t.at)],
);

/** Action intents: preview -> confirmation -> execution. Only the confirmation token's hash is kept. */
export const intents = sqliteTable(
  'intents',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    grantId: text('grant_id').notNull(),
    kind: text('kind').notNull(),
    operationId: text('operation_id').notNull(),
    targetId: text('target_id'),
    state: text('state').notNull(),
    input: text('input').notNull(),
    preview: text('preview').notNull(),
    confirmationHash: text('confirmation_hash'),
    confirmationExpiresAt: integer('confirmation_expires_at'),
    result: text('result'),
    refusal: text('refusal'),
    /** What the preview was built on (JSON, the kind's own): execute refuses `stale_preview` when the target moved since. */
    basis: text('basis'),
    /** The instance executing it (db/repo.ts `instance`): a dead one's claim is taken over, never left `executing`. */
    executor: text('executor'),
    /** The Idempotency-Key of the execute: its retry after a crash gets the outcome, not a refusal. */
    executeKey: text('execute_key'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('intents_store_idx').on(t.storeId, t.id)],
);

/** Stored responses of idempotent requests, keyed per store and key, kept 24 h. */
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    storeId: text('store_id').notNull(),
    key: text('key').notNull(),
    operationId: text('operation_id').notNull(),
    requestHash: text('request_hash').notNull(),
    status: integer('status').notNull(),
    response: text('response').notNull(),
    createdAt: integer('created_at').notNull(),
    /** The instance holding a pending claim (status 0): a dead holder's claim is taken over at once. */
    owner: text('owner'),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.key] })],
);

/** Flow's lifecycle callback: whether a trigger has an enabled workflow, per store and handle. */
export const triggerReadiness = sqliteTable(
  'trigger_readiness',
  {
    storeId: text('store_id').notNull(),
    handle: text('handle').notNull(),
    hasEnabledFlow: integer('has_enabled_flow', { mode: 'boolean' }).notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.handle] })],
);

/** Metered usage per store, meter and 30-day period. */
export const usageCounters = sqliteTable(
  'usage_counters',
  {
    storeId: text('store_id').notNull(),
    meter: text('meter').notNull(),
    periodStart: integer('period_start').notNull(),
    used: integer('used').notNull(),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.meter, t.periodStart] })],
);

/** Non-binding expansion and feature requests, support requests and diagnostics shares: frozen JSON documents. */
export const records = sqliteTable(
  'records',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    kind: text('kind').notNull(),
    body: text('body').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at'),
  },
  (t) => [index('records_store_kind_idx').on(t.storeId, t.kind, t.id)],
);

/**
 * Counters of what happened per store in 5-minute, hourly and daily buckets (receipts by outcome, handoffs,
 * attempt errors, handoff latency histogram). Written in the same transactions as the events they count; reliability reads
 * sum a window's buckets instead of walking its events.
 */
export const eventStats = sqliteTable(
  'event_stats',
  {
    storeId: text('store_id').notNull(),
    /** Bucket width in ms: one of STATS_WIDTHS_MS (db/types.ts). */
    width: integer('width').notNull().default(300_000),
    bucket: integer('bucket').notNull(),
    metric: text('metric').notNull(),
    n: integer('n').notNull(),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.width, t.bucket, t.metric] })],
);

/** Box-wide settings the local admin sets (`hookrelay store set`), e.g. the public URL. Key -> JSON value. */
export const settings = sqliteTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: integer('updated_at').notNull(),
});

/**
 * The live link of a store to its platform, one row per store, written only by the platform code and the handoff
 * worker: the access token hookrelay obtained (sealed with the box key, like endpoint secrets; never a static
 * token, which stays in its variable), the one renewal in progress (a lease, so instances renew once between
 * them), the API version the platform last answered with, and the handoff pause (reason, since, probes).
 */
export const platformLinks = sqliteTable('platform_links', {
  storeId: text('store_id').primaryKey(),
  tokenSealed: text('token_sealed'),
  tokenExpiresAt: integer('token_expires_at'),
  tokenObtainedAt: integer('token_obtained_at'),
  tokenScope: text('token_scope'),
  /** The client id the token was issued to: a token of another app is never used after a settings change. */
  tokenClientId: text('token_client_id'),
  /** OAuth: the refresh token that came with the access token (sealed), and when it expires. Replaced on each refresh. */
  refreshSealed: text('refresh_sealed'),
  refreshExpiresAt: integer('refresh_expires_at'),
  /** Counts tokens obtained; a 401 renews only while the refused token is still the current one. */
  tokenGeneration: integer('token_generation').notNull().default(0),
  renewalLeaseUntil: integer('renewal_lease_until'),
  renewalOwner: text('renewal_owner'),
  lastRenewalAt: integer('last_renewal_at'),
  /** Stable code of the last failed renewal (a PAUSE_CODES key), cleared by the next success. */
  lastRenewalError: text('last_renewal_error'),
  /** X-Shopify-API-Version of the platform's replies, written when it changes. */
  answeredApiVersion: text('answered_api_version'),
  answeredApiVersionAt: integer('answered_api_version_at'),
  /** Set while the store's handoff is paused (PAUSE_REASONS); null while it is active. */
  pauseReason: text('pause_reason'),
  pauseCode: text('pause_code'),
  pauseMessage: text('pause_message'),
  pausedSince: integer('paused_since'),
  /** Probes made since the pause began; the next waits longer (backoff). */
  probes: integer('probes').notNull().default(0),
  nextProbeAt: integer('next_probe_at'),
  /** One probe at a time across instances: the probe in progress holds this lease. */
  probeLeaseUntil: integer('probe_lease_until'),
  lastProbeAt: integer('last_probe_at'),
  resumedAt: integer('resumed_at'),
  /**
   * The store's cost budget (Shopify's leaky bucket per app and store), shared by every instance: points available
   * at `budget_at`, the maximum, the restore rate per second, and what one handoff costs. Null until a reply
   * reported it. Sends spend it under compare-and-set on `budget_version`.
   */
  budgetMax: real('budget_max'),
  budgetAvailable: real('budget_available'),
  budgetRate: real('budget_rate'),
  budgetCost: real('budget_cost'),
  budgetAt: integer('budget_at'),
  /** The latest send time handed out to the store's waiting events: the next one waiting goes one cost later. */
  budgetHorizon: integer('budget_horizon'),
  budgetVersion: integer('budget_version').notNull().default(0),
  updatedAt: integer('updated_at').notNull(),
});

/**
 * The `state` of each app install whose callback verified, recorded as used (its SHA-256): a state is signed, not
 * stored, when /auth/install makes it, and used once. Kept an hour past its expiry.
 */
export const oauthStates = sqliteTable('oauth_states', {
  stateHash: text('state_hash').primaryKey(),
  shopDomain: text('shop_domain').notNull(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  usedAt: integer('used_at'),
});

/**
 * The self-hosted console's sign-in links (`hookrelay console`): single use, short-lived, bound to a store. Only the
 * SHA-256 of a link's token is stored; `used_at` is set by the one sign-in it allows.
 */
export const consoleLinks = sqliteTable('console_links', {
  tokenHash: text('token_hash').primaryKey(),
  storeId: text('store_id').notNull(),
  actor: text('actor').notNull(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  usedAt: integer('used_at'),
});

/**
 * The console's sessions, one per sign-in: the SHA-256 of the session cookie's token (never the token), the store and
 * the person, and when it expires or was signed out.
 */
export const consoleSessions = sqliteTable(
  'console_sessions',
  {
    tokenHash: text('token_hash').primaryKey(),
    id: text('id').notNull(),
    storeId: text('store_id').notNull(),
    actor: text('actor').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    endedAt: integer('ended_at'),
  },
  (t) => [index('console_sessions_expiry_idx').on(t.expiresAt)],
);

/**
 * Shopify's webhooks (POST /shopify/webhooks), one row per delivery (X-Shopify-Webhook-Id): recorded before the 200,
 * so a repeat is known and not processed again; processed after it, and again later when that did not finish (a
 * crash, an error) until it has. What processing needs of the payload (a customer's id, the orders named) is kept
 * sealed with the box key, never in clear, and dropped once processed. `result` says what processing did, in words
 * that hold no personal data.
 */
export const shopifyWebhooks = sqliteTable(
  'shopify_webhooks',
  {
    webhookId: text('webhook_id').primaryKey(),
    topic: text('topic').notNull(),
    shopDomain: text('shop_domain').notNull(),
    apiVersion: text('api_version'),
    /** X-Shopify-Event-Id: the same event delivered to several subscriptions shares it. */
    eventId: text('event_id'),
    /** X-Shopify-Triggered-At (Shopify's clock), when it was given and readable. */
    triggeredAt: integer('triggered_at'),
    receivedAt: integer('received_at').notNull(),
    processedAt: integer('processed_at'),
    /** Processing runs begun (the first with the recording). */
    attempts: integer('attempts').notNull().default(0),
    /** A run in progress holds the row until then; after a failure, the next run waits until then. */
    leaseUntil: integer('lease_until'),
    /** The stable code of the last failed run, cleared by success. */
    lastError: text('last_error'),
    result: text('result'),
    payloadSealed: text('payload_sealed'),
  },
  (t) => [index('shopify_webhooks_pending_idx').on(t.receivedAt).where(sql`${t.processedAt} IS NULL`)],
);

/**
 * The app subscriptions hookrelay asked Shopify for (appSubscriptionCreate at /billing/subscribe), one row per
 * subscription: the store it was created for and the plan it sells. An app_subscriptions/update webhook is acted on
 * only for a subscription listed here for the header's store, and the plan then set is what Shopify reports of these
 * subscriptions (currentAppInstallation.activeSubscriptions), never what the webhook's body says.
 */
export const appSubscriptions = sqliteTable(
  'app_subscriptions',
  {
    /** Shopify's `gid://shopify/AppSubscription/<n>`. */
    subscriptionId: text('subscription_id').primaryKey(),
    storeId: text('store_id').notNull(),
    plan: text('plan').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('app_subscriptions_store_idx').on(t.storeId, t.createdAt)],
);

/**
 * The first effect of a Shopify webhook whose effect must happen once however often its signed body is sent again
 * (under new webhook ids): a customer's erasure request (keyed by the body's digest), a shop's erasure (keyed by the
 * uninstall it follows). Holds a hash and ids, never a payload value; never pruned, so a replay months later is known.
 */
export const shopifyWebhookEffects = sqliteTable('shopify_webhook_effects', {
  /** `<topic> <sha256 hex>`: what was done once. */
  effectKey: text('effect_key').primaryKey(),
  storeId: text('store_id').notNull(),
  /** The delivery that took it (its own retries may run it again until done). */
  webhookId: text('webhook_id').notNull(),
  createdAt: integer('created_at').notNull(),
});

/**
 * Downstream confirmations (Flow's "Confirm hookrelay event" action, POST /flow/actions/confirm): one row per Flow
 * action run, so Flow's resends of a run (same action_run_id) record nothing more. `delivered` keeps its meaning;
 * a confirmation says a workflow started from the event reached its confirming step, and how it ended.
 */
export const confirmations = sqliteTable(
  'confirmations',
  {
    actionRunId: text('action_run_id').primaryKey(),
    storeId: text('store_id').notNull(),
    eventId: text('event_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    /** `ok` or `error`, as the workflow's step said. */
    outcome: text('outcome').notNull(),
    /** The step's note, bounded; never a body or a secret. */
    note: text('note'),
    confirmedAt: integer('confirmed_at').notNull(),
  },
  (t) => [index('confirmations_event_idx').on(t.storeId, t.eventId), index('confirmations_store_idx').on(t.storeId, t.confirmedAt)],
);

/**
 * Alerts: an endpoint silent past its expected interval, a store's handoff paused for credentials, an uninstall, a
 * burst of failed authentications. One row per breach: raised once and recovered once. While it is open, `open_key`
 * (endpoint or `store`, and kind) is unique per store, so instances racing to raise the same alert make one row;
 * recovery clears it, and a new breach raises a new row. Each phase is handed to Flow as the `hookrelay-alert`
 * trigger (alert_handoffs).
 */
export const alerts = sqliteTable(
  'alerts',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    /** The endpoint concerned; null for a store-wide alert (paused, uninstalled). */
    endpointId: text('endpoint_id'),
    kind: text('kind').notNull(),
    /** `open` or `recovered`. */
    state: text('state').notNull(),
    openKey: text('open_key'),
    /** When the condition began (the last receipt before a silence, the pause's start). */
    since: integer('since').notNull(),
    raisedAt: integer('raised_at').notNull(),
    recoveredAt: integer('recovered_at'),
    /** Facts of the breach as JSON (expected interval, failure count): never a secret, a body or a header value. */
    detail: text('detail'),
  },
  (t) => [uniqueIndex('alerts_open_idx').on(t.storeId, t.openKey), index('alerts_store_idx').on(t.storeId, t.raisedAt)],
);

/** Each alert phase (`raised`, `recovered`) handed to Flow once: the row is the journal of its handoff. */
export const alertHandoffs = sqliteTable(
  'alert_handoffs',
  {
    alertId: text('alert_id').notNull(),
    phase: text('phase').notNull(),
    storeId: text('store_id').notNull(),
    /** `pending`, `sending`, `delivered`, `failed` (given up) or `skipped` (no Flow destination). */
    state: text('state').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at'),
    leaseUntil: integer('lease_until'),
    /** The stable code of the last failed attempt. */
    lastError: text('last_error'),
    deliveredAt: integer('delivered_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.alertId, t.phase] }), index('alert_handoffs_due_idx').on(t.nextAttemptAt).where(sql`${t.nextAttemptAt} IS NOT NULL`)],
);

/**
 * OAuth authorization requests (GET /oauth/authorize, src/oauth/authorization.ts): the client (from its metadata
 * document), what it asked for and the PKCE challenge, pending a person's decision for ten minutes. `id` is the
 * unguessable handle the browser that started the flow holds; `user_code` the short code a person may type instead.
 */
export const oauthRequests = sqliteTable(
  'oauth_requests',
  {
    id: text('id').primaryKey(),
    userCode: text('user_code').notNull(),
    clientId: text('client_id').notNull(),
    clientName: text('client_name').notNull(),
    clientUri: text('client_uri'),
    redirectUri: text('redirect_uri').notNull(),
    resource: text('resource').notNull(),
    /** The requested scopes, a JSON array. */
    scopes: text('scopes').notNull(),
    codeChallenge: text('code_challenge').notNull(),
    state: text('state'),
    /** `pending`, `approved`, `denied` or `finished` (its code minted); expiry is read from `expires_at`. */
    status: text('status').notNull(),
    grantId: text('grant_id'),
    storeId: text('store_id'),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [uniqueIndex('oauth_requests_user_code_idx').on(t.userCode), index('oauth_requests_expiry_idx').on(t.expiresAt)],
);

/**
 * Authorization codes: the SHA-256 of the code only, single use (`used_at`), 60 s, bound to the client, redirect URI,
 * PKCE challenge and resource; `family_id` names the tokens its exchange issued, revoked if the code comes again.
 */
export const oauthCodes = sqliteTable(
  'oauth_codes',
  {
    codeHash: text('code_hash').primaryKey(),
    grantId: text('grant_id').notNull(),
    familyId: text('family_id').notNull(),
    clientId: text('client_id').notNull(),
    redirectUri: text('redirect_uri').notNull(),
    codeChallenge: text('code_challenge').notNull(),
    resource: text('resource').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
  },
  (t) => [index('oauth_codes_expiry_idx').on(t.expiresAt)],
);

/**
 * Access (`hra_`) and refresh (`hrr_`) tokens: their SHA-256 only, each bound to a grant, a family (one code's
 * exchange and its rotations), a resource and an expiry. A rotated refresh token is marked `used_at`; a token is
 * revoked by `revoked_at` (RFC 7009, or its family's reuse). The grant's revocation ends them all where they are read.
 */
export const oauthTokens = sqliteTable(
  'oauth_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    /** `access` or `refresh`. */
    kind: text('kind').notNull(),
    grantId: text('grant_id').notNull(),
    familyId: text('family_id').notNull(),
    clientId: text('client_id').notNull(),
    resource: text('resource').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
    revokedAt: integer('revoked_at'),
  },
  (t) => [index('oauth_tokens_family_idx').on(t.familyId), index('oauth_tokens_grant_idx').on(t.grantId), index('oauth_tokens_expiry_idx').on(t.expiresAt)],
);
