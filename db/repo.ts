/**
 * The storage interfaces, split by area. Each consumer names the narrowest area it uses; `Repo`, the
 * intersection, is what db/open.ts returns. The areas that are one logic on both backends are written once
 * (db/areas/); a dialect (db/sqlite/repo.ts, db/pg/repo.ts) implements only what differs, and says what it can do
 * in `capabilities`, which code above db/ asks instead of naming a dialect. Rules (dedupe, capacity hold, lease
 * policy) are decided in db/receipt-rules.ts, not here: an area only stores and reads.
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
import type { ConfirmationStore } from './areas/confirmations.ts';
import type { PlatformLinkStore } from './platform-links.ts';
import type { SqlRunner } from './runner.ts';

/** The inbound path's one write: receipts and failed authentications, group-committed. */
export interface IngestStore {
  /**
   * One durable transaction for many receipts and auth failures (group commit), deciding duplicates inside it.
   * Resolves only after the commit is on disk.
   */
  commitIngest(receipts: PendingReceipt[], authFailures: PendingAuthFailure[], lease?: IngestLease | null): Promise<CommittedReceipt[]>;
}

/** The handoff queue: leases, the attempt journal, held events and retention (replays requeue through db/intent-journal.ts). */
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
  /** Drops a pending claim whose request failed, so a retry may run. */
  releaseIdempotency(storeId: string, key: string): Promise<void>;
}

/** Fixed rate windows: the agent API's call limits (takeRate) and the shared failed-authentication limit (addRate). */
export interface LimitStore {
  /**
   * Counts one call in the window starting at `windowStart` against every key, unless one of them has reached
   * its limit: then nothing is counted and its index is returned (-1: counted). Exact across instances.
   */
  takeRate(keys: { key: string; limit: number }[], windowStart: number): Promise<number>;
  /**
   * Adds `n` to each key's count in the window starting at `windowStart` and returns the counts after, in the
   * order given; keys distinct. Never refuses: the caller decides from the counts (the failed-authentication
   * limiter, which batches its adds). Exact across instances: one atomic statement.
   */
  addRate(counts: { key: string; n: number }[], windowStart: number): Promise<number[]>;
}

/** Stores (tenants), box-wide settings and grants. */
export interface TenantStore {
  getStore(id: string): Promise<StoreRow | null>;
  /** Replaces the store's mutable fields (plan, billing status, destination, token variable). */
  updateStore(row: StoreRow): Promise<void>;
  getStoreByShop(shopDomain: string): Promise<StoreRow | null>;
  listStores(): Promise<StoreRow[]>;
  insertStore(row: StoreRow): Promise<void>;

  // box-wide settings (`hookrelay store set --public-url`): key -> JSON text
  getSetting(key: string): Promise<string | null>;
  putSetting(key: string, value: string, at: number): Promise<void>;

  insertGrant(row: GrantRow): Promise<void>;
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

/** Flow's lifecycle reports: which triggers have an enabled workflow. */
export interface ReadinessStore {
  listTriggerReadiness(storeId: string): Promise<TriggerReadinessRow[]>;
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
}

/** The operator's bookkeeping: tenants, endpoints, audit, readiness, meters and records. */
export type AdminStore = TenantStore & EndpointStore & AuditLog & ReadinessStore & UsageStore & RecordStore;

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

/** Where the two schemas differ, for the areas written once that clear a lease or find a raw body. */
export interface StorageLayout {
  /** The SET list that ends an event's lease (PostgreSQL's events also carry the claim's token). */
  readonly clearLease: string;
  /**
   * How event_bodies is keyed: SQLite by an integer the event row holds (`events.body_key`, cleared with the body
   * so a key used again never leads back), PostgreSQL by the event id.
   */
  readonly bodyKey: 'integer' | 'event-id';
}

/** Every area of one storage handle: what the factory returns. */
export interface Repo
  extends IngestStore,
    HandoffQueue,
    EventReads,
    IntentStore,
    IdempotencyStore,
    LimitStore,
    AdminStore,
    Signals,
    ConfirmationStore,
    AlertStore {
  readonly capabilities: Capabilities;
  readonly layout: StorageLayout;
  /** Each store's link to its platform: tokens, renewal, answered API version, handoff pause (db/platform-links.ts). */
  readonly links: PlatformLinkStore;
  /** The dialect's thin runner: a storage area written once for both dialects runs its plain SQL here (`?` placeholders). */
  readonly sql: SqlRunner;
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
