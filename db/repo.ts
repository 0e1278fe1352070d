/**
 * The storage interfaces, split by area. Each consumer names the narrowest area it uses; `Repo`, the
 * intersection, is what db/open.ts returns. The areas that are one logic on both backends are written once
 * (db/areas/, one file per resource); a dialect (db/sqlite/repo.ts, db/pg/repo.ts) implements only what differs,
 * and says what it can do in `capabilities`, which code above db/ asks instead of naming a dialect. No handle
 * exposes its SQL runner or its dialect (db/dialect.ts): code above db/ reaches storage through these methods
 * only. Rules (dedupe, capacity hold, lease policy) are decided in db/areas/receipt-rules.ts, not here: an area
 * only stores and reads.
 */
import type {
  AuditRow,
  IdempotencyRow,
  IntentRow,
  RecordRow,
  TriggerReadinessRow,
  AttemptResult,
  AttemptStart,
  AttemptRow,
  AuthFailureRow,
  CommittedReceipt,
  DueEvent,
  EndpointRow,
  EventFilter,
  EventRow,
  GrantRow,
  IngestLease,
  PendingReceipt,
  StoreRow,
} from './types.ts';
import type { AlertStore } from './areas/alerts.ts';
import type { AppInstallStore } from './areas/app-installs.ts';
import type { ConsoleStore } from './areas/console.ts';
import type { OAuthStore } from './areas/oauth.ts';
import type { BulkReplayStore } from './areas/bulk-replay.ts';
import type { ConfirmationStore } from './areas/confirmations.ts';
import type { PlatformLinkStore } from './areas/platform-links.ts';
import type { RedactionStore } from './areas/redaction.ts';
import type { RetentionCut, RetentionSwept } from './areas/retention.ts';
import type { ShopifyWebhookStore } from './areas/shopify-webhooks.ts';
import type { BatchOutcome, Write } from './runner.ts';

/** A write an area builds for an intent's batch (IntentStore.executeIntent), and what the batch did. */
export type { BatchOutcome, Write };

/** The inbound path's one write: receipts and failed authentications, group-committed. */
export interface IngestStore {
  /**
   * One durable transaction for many receipts and auth failures (group commit), deciding duplicates inside it.
   * Resolves only after the commit is on disk.
   */
  commitIngest(receipts: PendingReceipt[], authFailures: PendingAuthFailure[], lease?: IngestLease | null): Promise<CommittedReceipt[]>;
}

/** The handoff queue: leases, the attempt journal, held events and retention (replays requeue through an intent's batch: db/areas/events.ts). */
export interface HandoffQueue {
  /**
   * Leases up to `limit` events due at `now` so no other worker takes them until `leaseUntil`. An attempt of a
   * claimed event still `sending` (its worker stopped or lost the lease mid-send) ends `unknown` and counts.
   */
  claimDue(now: number, limit: number, leaseUntil: number): Promise<DueEvent[]>;
  /**
   * Journals attempts `sending` before their sends, durably, in one transaction. Returns those journaled: an
   * attempt number already present (another worker has it) is left out and must not be sent.
   */
  journalAttempts(starts: AttemptStart[]): Promise<AttemptStart[]>;
  /**
   * Closes a round of journaled attempts and updates their events in one transaction. An attempt no longer
   * `sending` (a claim marked it `unknown` after its lease ran out) writes nothing: the stale worker is fenced.
   */
  recordAttempts(results: AttemptResult[]): Promise<void>;
  /** Earliest next_attempt_at of pending events, for the worker's sleep. */
  nextDueAt(): Promise<number | null>;
  /**
   * Retention: deletes raw bodies past their expiry, or of events received before `bodiesBeforeId` (an
   * `evt_<time>` floor: the body retention in effect now, which reaches bodies stored under a longer one), and
   * idempotency keys created before `keysBefore`, at most `limit` of each per call. Receipts stay (they outlive
   * their bodies).
   */
  sweepExpired(now: number, keysBefore: number, limit: number, bodiesBeforeId?: string): Promise<{ bodies: number; idempotencyKeys: number }>;
  /** Clears every lease and makes those events due by `now`: only for a single-process deployment at start-up. */
  releaseAllLeases(now: number): Promise<number>;
  /**
   * Queues the store's oldest `held` events, as many as the meter has room for below `hardLimit`, and counts
   * them on the meter in the same transaction. Returns how many.
   */
  releaseHeld(storeId: string, capacity: { meter: string; periodStart: number; hardLimit: number }, now: number): Promise<number>;
  /** The stores that have `held` events now (the worker releases only theirs, not every store's each second). */
  storesWithHeld(): Promise<string[]>;
  /** The retained body, for replay only; never returned by any read. */
  getEventBody(eventId: string): Promise<Uint8Array | null>;
}

/** What the agent API and the operator read about events, attempts, failed authentications and reliability. */
export interface EventReads {
  listEvents(filter: EventFilter): Promise<EventRow[]>;
  getEvent(storeId: string, id: string): Promise<EventRow | null>;
  latestEvent(storeId: string, endpointId?: string): Promise<EventRow | null>;
  listAttempts(eventId: string): Promise<AttemptRow[]>;
  /** Newest first; a row stands for `count` failures, the last at `at`. */
  listAuthFailures(storeId: string, endpointId?: string, limit?: number): Promise<AuthFailureRow[]>;
  /** Failures (rows' counts summed, not rows) per endpoint with `at` since `since`, and the first and last of them. */
  countAuthFailures(storeId: string, since: number): Promise<{ endpointId: string; n: number; first: number; last: number }[]>;
  /** Whether any event of the store has this outcome now. */
  hasOutcome(storeId: string, outcome: string): Promise<boolean>;
  /** event_stats summed per metric from the 5-minute bucket holding `from` until now (see db/types.ts). */
  sumStats(storeId: string, from: number): Promise<Record<string, number>>;
  /** Events not yet handed off for good (accepted, queued, held): the store's, or one endpoint's. */
  pendingStats(storeId: string, endpointId?: string): Promise<{ backlog: number; oldestReceivedAt: number | null }>;
  /** The same figures for the whole store at scrape cost: the count read from the index alone, the oldest by id order. */
  handoffBacklog(storeId: string): Promise<{ backlog: number; oldestReceivedAt: number | null }>;
}

/** Intents: preview → confirm → execute, moved by compare-and-set. */
export interface IntentStore {
  insertIntent(row: IntentRow): Promise<void>;
  getIntent(storeId: string, id: string): Promise<IntentRow | null>;
  /** Moves an intent from `fromState` only (compare-and-set); false when it was not in that state. */
  transitionIntent(id: string, fromState: string, patch: Partial<IntentRow>): Promise<boolean>;
  /**
   * Claims an intent for execution: `previewed`, or `executing` by `from` (an executor no longer alive, whose change
   * never committed). The confirmation hash stays until the intent ends, so a reopened intent can still be executed.
   */
  claimIntent(
    id: string,
    from: { state: 'previewed' } | { state: 'executing'; executor: string },
    to: { executor: string; key: string | null; at: number },
  ): Promise<boolean>;
  /**
   * Commits an execute's writes (compare-and-set, each from the state its preview showed) and the intent's
   * completion in one transaction, the completion last so `result` can count the rows each write changed. It is the
   * batch's fence: only the executor holding the claim completes it, so one whose claim was taken over rolls its
   * change back. A failed outcome names the write that found its state gone (`writes.length`: the completion).
   */
  executeIntent(id: string, executor: string, writes: Write[], result: (changes: number[]) => string, at: number): Promise<BatchOutcome>;
  /** Ends an execution that changed nothing: `refused` or `failed`, with its refusal. */
  endIntent(id: string, executor: string, state: 'refused' | 'failed', refusal: string | null, at: number): Promise<boolean>;
  /** Puts an execution that changed nothing back to `previewed` (its storage failed): the confirmation works again. */
  reopenIntent(id: string, executor: string, at: number): Promise<boolean>;
  /**
   * Reopens every intent left `executing` by an executor no longer alive (killed mid-execute): nothing it meant to
   * change was committed, so it is `previewed` again. Returns how many.
   */
  reopenDeadExecutions(at: number): Promise<number>;
}

/** Idempotency-Key claims and stored responses of the agent API. */
export interface IdempotencyStore {
  getIdempotency(storeId: string, key: string, since: number): Promise<IdempotencyRow | null>;
  putIdempotency(row: IdempotencyRow): Promise<void>;
  /**
   * Claims an Idempotency-Key for a request about to run: stores it pending (`status` 0) unless a live row holds
   * it. A row older than `since` (expired) or pending since before `staleBefore` (its instance died) is taken
   * over. Returns null when claimed, else the row that holds the key (pending: in flight elsewhere).
   */
  claimIdempotency(
    row: Pick<IdempotencyRow, 'storeId' | 'key' | 'operationId' | 'requestHash' | 'createdAt' | 'owner'>,
    since: number,
    staleBefore: number,
  ): Promise<IdempotencyRow | null>;
  /** Takes over a pending claim whose holder is gone (`from`), for `to`; false when another took it first. */
  takeOverIdempotency(storeId: string, key: string, from: string | null, to: string, at: number): Promise<boolean>;
  /** Drops a pending claim whose request failed, so a retry may run. */
  releaseIdempotency(storeId: string, key: string): Promise<void>;
}

/** Fixed rate windows: the agent API's call limits (takeRate) and the shared failed-authentication limit (addRate). */
export interface LimitStore {
  /**
   * Counts one call in the window starting at `windowStart` against every key (distinct), unless one of them has
   * reached its limit: then nothing is counted and its index is returned (-1: counted). Exact across instances.
   */
  takeRate(keys: { key: string; limit: number }[], windowStart: number): Promise<number>;
  /**
   * Adds `n` to each key's count in the window starting at `windowStart` and returns the counts after, in the
   * order given; keys distinct. Never refuses: the caller decides from the counts (the failed-authentication
   * limiter, which batches its adds). Exact across instances: one atomic statement.
   */
  addRate(counts: { key: string; n: number }[], windowStart: number): Promise<number[]>;
}

/** Box-wide settings (`hookrelay store set --public-url`, metrics tokens, the box key check): key -> JSON text. */
export interface SettingStore {
  getSetting(key: string): Promise<string | null>;
  putSetting(key: string, value: string, at: number): Promise<void>;
  /** Writes the setting unless it is set already (the first of two racing writers wins). */
  addSetting(key: string, value: string, at: number): Promise<void>;
  /** The settings whose key starts with `prefix`, in no order. */
  listSettings(prefix: string): Promise<{ key: string; value: string }[]>;
  /** A sealed value of the box (an endpoint's secret, else the box key check's), or null when it holds none. */
  sealedSample(): Promise<string | null>;
}

/** Stores (tenants), box-wide settings and grants. */
export interface TenantStore extends SettingStore {
  getStore(id: string): Promise<StoreRow | null>;
  /** Replaces the store's mutable fields (plan, billing status, destination, token variable). */
  updateStore(row: StoreRow): Promise<void>;
  getStoreByShop(shopDomain: string): Promise<StoreRow | null>;
  listStores(): Promise<StoreRow[]>;
  insertStore(row: StoreRow): Promise<void>;

  insertGrant(row: GrantRow): Promise<void>;
  getGrant(id: string): Promise<GrantRow | null>;
  getGrantByTokenHash(tokenHash: string): Promise<GrantRow | null>;
  listGrants(storeId?: string): Promise<GrantRow[]>;
  revokeGrant(id: string, at: number): Promise<GrantRow | null>;
}

/** Inbound endpoints and their config versions. */
export interface EndpointStore {
  insertEndpoint(row: EndpointRow, config: unknown): Promise<void>;
  /** Scoped read: null for an id of another store. */
  getEndpoint(storeId: string, id: string): Promise<EndpointRow | null>;
  /** Unscoped read for the inbound path, which knows only the endpoint id. */
  getEndpointById(id: string): Promise<EndpointRow | null>;
  listEndpoints(storeId: string): Promise<EndpointRow[]>;
  /** Writes a new config version (the row's configVersion) with its snapshot. */
  updateEndpoint(row: EndpointRow, config: unknown): Promise<void>;
}

/** The audit log. */
export interface AuditLog {
  insertAudit(row: AuditRow): Promise<void>;
  /** The newest `limit` rows (at or after `since`), returned oldest first so they read as a log. */
  listAudit(filter: { storeId?: string; since?: number; limit: number }): Promise<AuditRow[]>;
}

/** Units counted on a plan meter of a store, in a 30-day period. */
export interface UsageUnits {
  storeId: string;
  meter: string;
  periodStart: number;
  n: number;
}

/**
 * A call's audit row with the units it counts on its plan meter (the agent API's reads and previews): both or neither.
 * On SQLite one commit, relaxed as insertAudit and addUsage each are (no fsync of its own: the next synced commit
 * covers it); on PostgreSQL one statement.
 */
export interface MeteredAudit {
  insertAuditMetered(row: AuditRow, usage: UsageUnits): Promise<void>;
}

/** A page of one store's audit rows, newest first: after `before` (the previous page's last row), filtered. */
export interface AuditPageFilter {
  storeId: string;
  actorKind?: string;
  operationId?: string;
  grantId?: string;
  since?: number;
  until?: number;
  before?: { at: number; id: string };
  limit: number;
}

/** The store's own read of its audit log (the contract's listAuditEntries). */
export interface AuditReads {
  pageAudit(filter: AuditPageFilter): Promise<AuditRow[]>;
}

/** Flow's lifecycle reports: which triggers have an enabled workflow. */
export interface ReadinessStore {
  listTriggerReadiness(storeId: string): Promise<TriggerReadinessRow[]>;
  /** The readiness rows of several stores in one statement (a handoff round's). */
  readinessOfStores(storeIds: readonly string[]): Promise<TriggerReadinessRow[]>;
  setTriggerReadiness(row: TriggerReadinessRow): Promise<void>;
}

/** Plan meters, per store and 30-day period. */
export interface UsageStore {
  addUsage(storeId: string, meter: string, periodStart: number, n: number): Promise<void>;
  getUsage(storeId: string, periodStart: number): Promise<Record<string, number>>;
}

/** Diagnostics shares, support, expansion and feature requests, kept as records. */
export interface RecordStore {
  insertRecord(row: RecordRow): Promise<void>;
  getRecord(storeId: string, kind: string, id: string): Promise<RecordRow | null>;
  /** The operator's read across stores: the newest first, at most `limit`, of these kinds, with the filing shop. */
  listRecords(filter: { kinds: readonly string[]; storeId?: string; since?: number; limit: number }): Promise<ShopRecordRow[]>;
  /** One record by id, whichever store filed it, when it is of one of these kinds. */
  findRecord(id: string, kinds: readonly string[]): Promise<ShopRecordRow | null>;
  /** How many records of each of these kinds the store holds (kinds with none left out). */
  countRecords(storeId: string, kinds: readonly string[]): Promise<{ kind: string; n: number }[]>;
}

/** A record with the shop domain of the store that filed it (null when the store is gone). */
export type ShopRecordRow = RecordRow & { shopDomain: string | null };

/** The operator's bookkeeping: tenants, endpoints, audit, readiness, meters and records. */
export type AdminStore = TenantStore & EndpointStore & AuditLog & AuditReads & MeteredAudit & ReadinessStore & UsageStore & RecordStore;

/**
 * Cross-instance signals (PostgreSQL LISTEN/NOTIFY): `endpoint` carries an endpoint id whose cached config is
 * stale, `due` says events became due. A single-process dialect has no peers and leaves both out.
 */
export interface Signals {
  notify?(channel: Signal, payload: string): Promise<void>;
  /** Calls `fn` for each signal from any instance (this one included) until the returned stop is called. */
  listen?(fn: (channel: Signal, payload: string) => void): Promise<() => Promise<void>>;
}

/** What a storage handle can do, asked above db/ instead of its dialect. */
export interface Capabilities {
  /**
   * Several serve instances may share this storage (PostgreSQL): limits count in the database, leases end with
   * their holder's liveness, and a peer's interrupted executions are reopened while this one runs. False: one
   * process owns it (SQLite: serve holds the data directory's lock), so every lease left at start is its own.
   */
  readonly multiInstance: boolean;
  /** The file another connection of this process may open to write beside this handle (serve's relay thread); null when none. */
  readonly relayFile: { path: string; synchronous: 'FULL' | 'NORMAL' } | null;
}

/** Retention of every kind of row but raw bodies and Idempotency-Keys (db/areas/retention.ts). */
export interface RetentionStore {
  sweepRetention(cut: RetentionCut): Promise<RetentionSwept>;
}

/** The areas written once for both dialects (db/areas/index.ts), as a handle carries them. */
export type SharedAreas = AdminStore &
  EventReads &
  IntentStore &
  IdempotencyStore &
  Pick<HandoffQueue, 'nextDueAt' | 'storesWithHeld'> &
  ConfirmationStore &
  AlertStore &
  RetentionStore & {
    /** Each store's link to its platform: tokens, renewal, answered API version, handoff pause. */
    readonly links: PlatformLinkStore;
    /** App installs: used OAuth states, the store's identity, the subscriptions hookrelay asked for. */
    readonly installs: AppInstallStore;
    /** The console's sign-in links and sessions (hashes only). */
    readonly console: ConsoleStore;
    /** The OAuth authorization server's requests, codes and tokens (hashes only). */
    readonly oauth: OAuthStore;
    /** Shopify's webhook deliveries and their once-only effects. */
    readonly shopifyWebhooks: ShopifyWebhookStore;
    /** Erasure (shop/redact, customers/redact) and a customer data request's reads. */
    readonly redaction: RedactionStore;
    /** Bulk replay's selection and requeue. */
    readonly bulkReplays: BulkReplayStore;
  };

/** Every area of one storage handle: what the factory returns. */
export interface Repo extends IngestStore, HandoffQueue, LimitStore, Signals, SharedAreas {
  readonly capabilities: Capabilities;
  /** This handle as an executor of intents and holder of Idempotency-Key claims, and whether another still lives. */
  readonly instance: Instance;
  close(): Promise<void>;
}

/**
 * An auth failure to record. Once its endpoint holds `keepRows` rows of its code with `at >= foldSince`, it is added
 * to the newest of them (count, at) instead of inserted: a flood is a count, not a row per request. Without the two
 * fields it is inserted as it is.
 */
export interface PendingAuthFailure extends Omit<AuthFailureRow, 'diagnosis'> {
  /**
   * Signature forensics' finding (AuthFailureRow.diagnosis): a code, or null when the failure was examined and matched
   * none. Absent: not examined (past the failure limits). A fold takes the newest examined finding and keeps the row's
   * own when none of the failures it adds was examined; an inserted row without one holds null.
   */
  diagnosis?: string | null;
  foldSince?: number;
  keepRows?: number;
}

export type Signal = 'endpoint' | 'due';

/**
 * Who holds a claim: an execution in flight, or a pending Idempotency-Key. A claim of a handle that no longer lives
 * is taken over at once rather than when it turns stale: on SQLite (one process: serve holds the data directory's
 * lock) every other handle is dead; on PostgreSQL a handle lives while it holds its liveness lock.
 */
export interface Instance {
  id(): Promise<string>;
  alive(id: string): Promise<boolean>;
}
