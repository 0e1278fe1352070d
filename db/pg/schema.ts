/**
 * PostgreSQL schema: the same tables, columns and keys as db/sqlite/schema.ts (the repository speaks one set of
 * row types), plus what several instances need: a lease token on events and a dedupe key table. Timestamps are
 * bigint milliseconds since the epoch, read as JavaScript numbers.
 */
import { sql } from 'drizzle-orm';
import { bigint, boolean, customType, doublePrecision, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';

const ms = (name: string) => bigint(name, { mode: 'number' });
const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

export const stores = pgTable('stores', {
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
  uninstalledAt: ms('uninstalled_at'),
  createdAt: ms('created_at').notNull(),
  updatedAt: ms('updated_at').notNull(),
});

export const grants = pgTable(
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
    expiresAt: ms('expires_at').notNull(),
    revokedAt: ms('revoked_at'),
    createdAt: ms('created_at').notNull(),
    lastUsedAt: ms('last_used_at'),
    /** The OAuth client (its Client ID Metadata Document URL) whose consent issued the grant; null for a grant issued by hand. */
    clientId: text('client_id'),
    /** The client's name as its metadata document gave it (unverified); null for a grant issued by hand. */
    clientName: text('client_name'),
  },
  (t) => [uniqueIndex('grants_token_hash_idx').on(t.tokenHash), index('grants_store_idx').on(t.storeId, t.id)],
);

export const endpoints = pgTable(
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
    previousSecretExpiresAt: ms('previous_secret_expires_at'),
    sourceLabel: text('source_label').notNull(),
    eventType: text('event_type'),
    /** Silence watch: the longest quiet time expected between receipts, ms; null when not watched. */
    expectedEveryMs: ms('expected_every_ms'),
    configVersion: integer('config_version').notNull(),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [index('endpoints_store_idx').on(t.storeId, t.id)],
);

export const endpointVersions = pgTable(
  'endpoint_versions',
  {
    endpointId: text('endpoint_id')
      .notNull()
      .references(() => endpoints.id),
    version: integer('version').notNull(),
    config: text('config').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.endpointId, t.version] })],
);

export const events = pgTable(
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
    isTest: boolean('is_test').notNull(),
    duplicateOf: text('duplicate_of'),
    resourceId: text('resource_id'),
    relatedResourceId: text('related_resource_id'),
    bodyBytes: integer('body_bytes').notNull(),
    bodyRetention: text('body_retention').notNull(),
    receivedAt: ms('received_at').notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastAttemptAt: ms('last_attempt_at'),
    nextAttemptAt: ms('next_attempt_at'),
    leaseUntil: ms('lease_until'),
    deliveredAt: ms('delivered_at'),
    /** Set by each claim; journaling and recording an attempt check it, so a worker whose lease ended writes nothing. */
    leaseToken: text('lease_token'),
  },
  (t) => [
    index('events_store_idx').on(t.storeId, t.id),
    index('events_store_endpoint_idx').on(t.storeId, t.endpointId, t.id),
    // Every event but the delivered ones: a delivery's record removes its entry and writes none (db/types.ts, UNDELIVERED).
    index('events_store_outcome_idx').on(t.storeId, t.outcome, t.id).where(sql`${t.outcome} <> 'delivered'`),
    index('events_due_idx').on(t.nextAttemptAt).where(sql`${t.nextAttemptAt} IS NOT NULL`),
  ],
);

/**
 * The first accepted receipt per (endpoint, external event id), while its dedupe window lasts: the database
 * decides the winner by this key, so two instances receiving the same id store exactly one `accepted`.
 */
export const dedupeKeys = pgTable(
  'dedupe_keys',
  {
    endpointId: text('endpoint_id').notNull(),
    externalEventId: text('external_event_id').notNull(),
    eventId: text('event_id').notNull(),
    receivedAt: ms('received_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.endpointId, t.externalEventId] })],
);

export const eventBodies = pgTable(
  'event_bodies',
  {
    eventId: text('event_id').primaryKey(),
    body: bytea('body').notNull(),
    expiresAt: ms('expires_at').notNull(),
  },
  (t) => [index('event_bodies_expires_idx').on(t.expiresAt)],
);

export const attempts = pgTable(
  'attempts',
  {
    eventId: text('event_id').notNull(),
    number: integer('number').notNull(),
    destination: text('destination').notNull(),
    startedAt: ms('started_at').notNull(),
    finishedAt: ms('finished_at').notNull(),
    outcome: text('outcome').notNull(),
    httpStatus: integer('http_status'),
    code: text('code'),
    message: text('message'),
    /** The typed fields this attempt sent: JSON `{found, missing, wrongType, bodyCut}` (names, never a value); null without fields. */
    fieldCounts: text('field_counts'),
    retryAt: ms('retry_at'),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.number] })],
);

export const authFailures = pgTable(
  'auth_failures',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    code: text('code').notNull(),
    /** Signature forensics: the usual mistake the failure matched (a DIAGNOSES code), never the value; null when none. */
    diagnosis: text('diagnosis'),
    at: ms('at').notNull(),
    count: integer('count').notNull().default(1),
  },
  (t) => [index('auth_failures_endpoint_idx').on(t.endpointId, t.at), index('auth_failures_store_idx').on(t.storeId, t.at)],
);

export const auditLog = pgTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    at: ms('at').notNull(),
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
    surface: text('surface'),
  },
  (t) => [index('audit_store_idx').on(t.storeId, t.at), index('audit_at_idx').on(t.at)],
);

export const intents = pgTable(
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
    confirmationExpiresAt: ms('confirmation_expires_at'),
    result: text('result'),
    refusal: text('refusal'),
    /** What the preview was built on (JSON, the kind's own): execute refuses `stale_preview` when the target moved since. */
    basis: text('basis'),
    /** The instance executing it (db/repo.ts `instance`): a dead one's claim is taken over, never left `executing`. */
    executor: text('executor'),
    /** The Idempotency-Key of the execute: its retry after a crash gets the outcome, not a refusal. */
    executeKey: text('execute_key'),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [index('intents_store_idx').on(t.storeId, t.id)],
);

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    storeId: text('store_id').notNull(),
    key: text('key').notNull(),
    operationId: text('operation_id').notNull(),
    requestHash: text('request_hash').notNull(),
    status: integer('status').notNull(),
    response: text('response').notNull(),
    createdAt: ms('created_at').notNull(),
    /** The instance holding a pending claim (status 0): a dead holder's claim is taken over at once. */
    owner: text('owner'),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.key] }), index('idempotency_created_idx').on(t.createdAt)],
);

export const triggerReadiness = pgTable(
  'trigger_readiness',
  {
    storeId: text('store_id').notNull(),
    handle: text('handle').notNull(),
    hasEnabledFlow: boolean('has_enabled_flow').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.handle] })],
);

export const usageCounters = pgTable(
  'usage_counters',
  {
    storeId: text('store_id').notNull(),
    meter: text('meter').notNull(),
    periodStart: ms('period_start').notNull(),
    used: integer('used').notNull(),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.meter, t.periodStart] })],
);

export const records = pgTable(
  'records',
  {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    kind: text('kind').notNull(),
    body: text('body').notNull(),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at'),
  },
  (t) => [index('records_store_kind_idx').on(t.storeId, t.kind, t.id)],
);

/**
 * event_stats, sharded: each writer adds to its own shard's row (a small integer), so concurrent commits of
 * several instances never wait on one hot counter row; reads sum the shards.
 */
export const eventStats = pgTable(
  'event_stats',
  {
    storeId: text('store_id').notNull(),
    width: ms('width').notNull(),
    bucket: ms('bucket').notNull(),
    metric: text('metric').notNull(),
    shard: integer('shard').notNull().default(0),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.storeId, t.width, t.bucket, t.metric, t.shard] })],
);

export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: ms('updated_at').notNull(),
});

/**
 * Rate-limit windows shared by every instance: one row per (class, grant or store, window start), counted
 * under the row lock so N instances enforce one limit. Old windows are swept.
 */
export const rateCounters = pgTable(
  'rate_counters',
  {
    key: text('key').notNull(),
    windowStart: ms('window_start').notNull(),
    n: integer('n').notNull(),
  },
  (t) => [primaryKey({ columns: [t.key, t.windowStart] }), index('rate_counters_window_idx').on(t.windowStart)],
);

/**
 * The live link of a store to its platform, one row per store, written only by the platform code and the handoff
 * worker: the access token hookrelay obtained (sealed with the box key, like endpoint secrets; never a static
 * token, which stays in its variable), the one renewal in progress (a lease, so instances renew once between
 * them), the API version the platform last answered with, and the handoff pause (reason, since, probes).
 */
export const platformLinks = pgTable('platform_links', {
  storeId: text('store_id').primaryKey(),
  tokenSealed: text('token_sealed'),
  tokenExpiresAt: ms('token_expires_at'),
  tokenObtainedAt: ms('token_obtained_at'),
  tokenScope: text('token_scope'),
  /** The client id the token was issued to: a token of another app is never used after a settings change. */
  tokenClientId: text('token_client_id'),
  /** OAuth: the refresh token that came with the access token (sealed), and when it expires. Replaced on each refresh. */
  refreshSealed: text('refresh_sealed'),
  refreshExpiresAt: ms('refresh_expires_at'),
  /** Counts tokens obtained; a 401 renews only while the refused token is still the current one. */
  tokenGeneration: integer('token_generation').notNull().default(0),
  renewalLeaseUntil: ms('renewal_lease_until'),
  renewalOwner: text('renewal_owner'),
  lastRenewalAt: ms('last_renewal_at'),
  /** Stable code of the last failed renewal (a PAUSE_CODES key), cleared by the next success. */
  lastRenewalError: text('last_renewal_error'),
  /** X-Shopify-API-Version of the platform's replies, written when it changes. */
  answeredApiVersion: text('answered_api_version'),
  answeredApiVersionAt: ms('answered_api_version_at'),
  /** Set while the store's handoff is paused (PAUSE_REASONS); null while it is active. */
  pauseReason: text('pause_reason'),
  pauseCode: text('pause_code'),
  pauseMessage: text('pause_message'),
  pausedSince: ms('paused_since'),
  /** Probes made since the pause began; the next waits longer (backoff). */
  probes: integer('probes').notNull().default(0),
  nextProbeAt: ms('next_probe_at'),
  /** One probe at a time across instances: the probe in progress holds this lease. */
  probeLeaseUntil: ms('probe_lease_until'),
  lastProbeAt: ms('last_probe_at'),
  resumedAt: ms('resumed_at'),
  /**
   * The store's cost budget (Shopify's leaky bucket per app and store), shared by every instance: points available
   * at `budget_at`, the maximum, the restore rate per second, and what one handoff costs. Null until a reply
   * reported it. Sends spend it under compare-and-set on `budget_version`.
   */
  budgetMax: doublePrecision('budget_max'),
  budgetAvailable: doublePrecision('budget_available'),
  budgetRate: doublePrecision('budget_rate'),
  budgetCost: doublePrecision('budget_cost'),
  budgetAt: ms('budget_at'),
  /** The latest send time handed out to the store's waiting events: the next one waiting goes one cost later. */
  budgetHorizon: ms('budget_horizon'),
  budgetVersion: integer('budget_version').notNull().default(0),
  updatedAt: ms('updated_at').notNull(),
});

/**
 * The `state` of each app install whose callback verified, recorded as used (its SHA-256): a state is signed, not
 * stored, when /auth/install makes it, and used once. Kept an hour past its expiry.
 */
export const oauthStates = pgTable('oauth_states', {
  stateHash: text('state_hash').primaryKey(),
  shopDomain: text('shop_domain').notNull(),
  createdAt: ms('created_at').notNull(),
  expiresAt: ms('expires_at').notNull(),
  usedAt: ms('used_at'),
});

/**
 * The self-hosted console's sign-in links (`hookrelay console`): single use, short-lived, bound to a store. Only the
 * SHA-256 of a link's token is stored; `used_at` is set by the one sign-in it allows.
 */
export const consoleLinks = pgTable('console_links', {
  tokenHash: text('token_hash').primaryKey(),
  storeId: text('store_id').notNull(),
  actor: text('actor').notNull(),
  createdAt: ms('created_at').notNull(),
  expiresAt: ms('expires_at').notNull(),
  usedAt: ms('used_at'),
});

/**
 * The console's sessions, one per sign-in: the SHA-256 of the session cookie's token (never the token), the store and
 * the person, and when it expires or was signed out.
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    tokenHash: text('token_hash').primaryKey(),
    id: text('id').notNull(),
    storeId: text('store_id').notNull(),
    actor: text('actor').notNull(),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
    endedAt: ms('ended_at'),
  },
  (t) => [index('console_sessions_expiry_idx').on(t.expiresAt)],
);

/**
 * Shopify's webhooks (POST /shopify/webhooks), one row per delivery (X-Shopify-Webhook-Id): recorded before the 200,
 * processed after it and again until done. What processing needs of the payload is sealed, and dropped once processed.
 */
export const shopifyWebhooks = pgTable(
  'shopify_webhooks',
  {
    webhookId: text('webhook_id').primaryKey(),
    topic: text('topic').notNull(),
    shopDomain: text('shop_domain').notNull(),
    apiVersion: text('api_version'),
    eventId: text('event_id'),
    triggeredAt: ms('triggered_at'),
    receivedAt: ms('received_at').notNull(),
    processedAt: ms('processed_at'),
    attempts: integer('attempts').notNull().default(0),
    leaseUntil: ms('lease_until'),
    lastError: text('last_error'),
    result: text('result'),
    payloadSealed: text('payload_sealed'),
  },
  (t) => [index('shopify_webhooks_pending_idx').on(t.receivedAt).where(sql`${t.processedAt} IS NULL`)],
);

/** The app subscriptions hookrelay created (see db/sqlite/schema.ts). */
export const appSubscriptions = pgTable(
  'app_subscriptions',
  {
    subscriptionId: text('subscription_id').primaryKey(),
    storeId: text('store_id').notNull(),
    plan: text('plan').notNull(),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [index('app_subscriptions_store_idx').on(t.storeId, t.createdAt)],
);

/** The once-only effects of Shopify webhooks (see db/sqlite/schema.ts). */
export const shopifyWebhookEffects = pgTable('shopify_webhook_effects', {
  effectKey: text('effect_key').primaryKey(),
  storeId: text('store_id').notNull(),
  webhookId: text('webhook_id').notNull(),
  createdAt: ms('created_at').notNull(),
});

/**
 * Downstream confirmations (Flow's "Confirm hookrelay event" action, POST /flow/actions/confirm): one row per Flow
 * action run, so Flow's resends of a run (same action_run_id) record nothing more. `delivered` keeps its meaning;
 * a confirmation says a workflow started from the event reached its confirming step, and how it ended.
 */
export const confirmations = pgTable(
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
    confirmedAt: ms('confirmed_at').notNull(),
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
export const alerts = pgTable(
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
    since: ms('since').notNull(),
    raisedAt: ms('raised_at').notNull(),
    recoveredAt: ms('recovered_at'),
    /** Facts of the breach as JSON (expected interval, failure count): never a secret, a body or a header value. */
    detail: text('detail'),
  },
  (t) => [uniqueIndex('alerts_open_idx').on(t.storeId, t.openKey), index('alerts_store_idx').on(t.storeId, t.raisedAt)],
);

/** Each alert phase (`raised`, `recovered`) handed to Flow once: the row is the journal of its handoff. */
export const alertHandoffs = pgTable(
  'alert_handoffs',
  {
    alertId: text('alert_id').notNull(),
    phase: text('phase').notNull(),
    storeId: text('store_id').notNull(),
    /** `pending`, `sending`, `delivered`, `failed` (given up) or `skipped` (no Flow destination). */
    state: text('state').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ms('next_attempt_at'),
    leaseUntil: ms('lease_until'),
    /** The stable code of the last failed attempt. */
    lastError: text('last_error'),
    deliveredAt: ms('delivered_at'),
    createdAt: ms('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.alertId, t.phase] }), index('alert_handoffs_due_idx').on(t.nextAttemptAt).where(sql`${t.nextAttemptAt} IS NOT NULL`)],
);

/**
 * OAuth authorization requests (GET /oauth/authorize, src/oauth/authorization.ts): the client (from its metadata
 * document), what it asked for and the PKCE challenge, pending a person's decision for ten minutes. `id` is the
 * unguessable handle the browser that started the flow holds; `user_code` the short code a person may type instead.
 */
export const oauthRequests = pgTable(
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
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
  },
  (t) => [uniqueIndex('oauth_requests_user_code_idx').on(t.userCode), index('oauth_requests_expiry_idx').on(t.expiresAt)],
);

/**
 * Authorization codes: the SHA-256 of the code only, single use (`used_at`), 60 s, bound to the client, redirect URI,
 * PKCE challenge and resource; `family_id` names the tokens its exchange issued, revoked if the code comes again.
 */
export const oauthCodes = pgTable(
  'oauth_codes',
  {
    codeHash: text('code_hash').primaryKey(),
    grantId: text('grant_id').notNull(),
    familyId: text('family_id').notNull(),
    clientId: text('client_id').notNull(),
    redirectUri: text('redirect_uri').notNull(),
    codeChallenge: text('code_challenge').notNull(),
    resource: text('resource').notNull(),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
    usedAt: ms('used_at'),
  },
  (t) => [index('oauth_codes_expiry_idx').on(t.expiresAt)],
);

/**
 * Access (`hra_`) and refresh (`hrr_`) tokens: their SHA-256 only, each bound to a grant, a family (one code's
 * exchange and its rotations), a resource and an expiry. A rotated refresh token is marked `used_at`; a token is
 * revoked by `revoked_at` (RFC 7009, or its family's reuse). The grant's revocation ends them all where they are read.
 */
export const oauthTokens = pgTable(
  'oauth_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    /** `access` or `refresh`. */
    kind: text('kind').notNull(),
    grantId: text('grant_id').notNull(),
    familyId: text('family_id').notNull(),
    clientId: text('client_id').notNull(),
    resource: text('resource').notNull(),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
    usedAt: ms('used_at'),
    revokedAt: ms('revoked_at'),
  },
  (t) => [index('oauth_tokens_family_idx').on(t.familyId), index('oauth_tokens_grant_idx').on(t.grantId), index('oauth_tokens_expiry_idx').on(t.expiresAt)],
);
