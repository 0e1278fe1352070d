/** The storage interface. src/ops and src/relay use only this; each dialect implements it. */
import type {
  AuditRow,
  IdempotencyRow,
  IntentRow,
  RecordRow,
  TriggerReadinessRow,
  AttemptResult,
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

export interface Repo {
  readonly dialect: 'sqlite' | 'postgres';

  // stores
  getStore(id: string): Promise<StoreRow | null>;
  /** Replaces the store's mutable fields (plan, billing status, destination, token variable). */
  updateStore(row: StoreRow): Promise<void>;
  getStoreByShop(shopDomain: string): Promise<StoreRow | null>;
  listStores(): Promise<StoreRow[]>;
  insertStore(row: StoreRow): Promise<void>;

  // box-wide settings (`hookrelay store set --public-url`): key -> JSON text
  getSetting(key: string): Promise<string | null>;
  putSetting(key: string, value: string, at: number): Promise<void>;

  // grants
  insertGrant(row: GrantRow): Promise<void>;
  getGrantByTokenHash(tokenHash: string): Promise<GrantRow | null>;
  listGrants(storeId?: string): Promise<GrantRow[]>;
  revokeGrant(id: string, at: number): Promise<GrantRow | null>;

  // endpoints
  insertEndpoint(row: EndpointRow, config: unknown): Promise<void>;
  /** Scoped read: null for an id of another store. */
  getEndpoint(storeId: string, id: string): Promise<EndpointRow | null>;
  /** Unscoped read for the inbound path, which knows only the endpoint id. */
  getEndpointById(id: string): Promise<EndpointRow | null>;
  listEndpoints(storeId: string): Promise<EndpointRow[]>;

  // inbound
  /**
   * One durable transaction for many receipts and auth failures (group commit), deciding duplicates inside it.
   * Resolves only after the commit is on disk.
   */
  commitIngest(receipts: PendingReceipt[], authFailures: AuthFailureRow[], lease?: IngestLease | null): Promise<CommittedReceipt[]>;
  listAuthFailures(storeId: string, endpointId?: string, limit?: number): Promise<AuthFailureRow[]>;

  // reads
  listEvents(filter: EventFilter): Promise<EventRow[]>;
  getEvent(storeId: string, id: string): Promise<EventRow | null>;
  latestEvent(storeId: string, endpointId?: string): Promise<EventRow | null>;
  listAttempts(eventId: string): Promise<AttemptRow[]>;

  // handoff worker
  /** Leases up to `limit` events due at `now` so no other worker takes them until `leaseUntil`. */
  claimDue(now: number, limit: number, leaseUntil: number): Promise<DueEvent[]>;
  /** Records a round of attempts in one transaction (one fsync for the round, not one per event). */
  recordAttempts(results: AttemptResult[]): Promise<void>;
  /** Earliest next_attempt_at of pending events, for the worker's sleep. */
  nextDueAt(): Promise<number | null>;
  /**
   * Retention: deletes raw bodies past their expiry and idempotency keys created before `keysBefore`, at most
   * `limit` of each per call. Receipts stay (they outlive their bodies).
   */
  sweepExpired(now: number, keysBefore: number, limit: number): Promise<{ bodies: number; idempotencyKeys: number }>;
  /** Clears every lease and makes those events due by `now`: only for a single-process deployment at start-up. */
  releaseAllLeases(now: number): Promise<number>;
  /**
   * Queues the store's oldest `held` events, as many as the meter has room for below `hardLimit`, and counts
   * them on the meter in the same transaction. Returns how many.
   */
  releaseHeld(storeId: string, capacity: { meter: string; periodStart: number; hardLimit: number }, now: number): Promise<number>;

  // endpoints: changes
  /** Writes a new config version (the row's configVersion) with its snapshot. */
  updateEndpoint(row: EndpointRow, config: unknown): Promise<void>;
  /** Permanent delete of an archived endpoint; receipts stay. */
  deleteEndpoint(storeId: string, id: string): Promise<void>;

  // replay
  /** The retained body, for replay only; never returned by any read. */
  getEventBody(eventId: string): Promise<Uint8Array | null>;
  /** Queues a retained event for a new attempt now (replay). */
  requeueEvent(eventId: string, at: number): Promise<void>;

  // audit, intents, idempotency
  insertAudit(row: AuditRow): Promise<void>;
  listAudit(filter: { storeId?: string; since?: number; limit: number }): Promise<AuditRow[]>;
  insertIntent(row: IntentRow): Promise<void>;
  getIntent(storeId: string, id: string): Promise<IntentRow | null>;
  /** Moves an intent from `fromState` only (compare-and-set); false when it was not in that state. */
  transitionIntent(id: string, fromState: string, patch: Partial<IntentRow>): Promise<boolean>;
  getIdempotency(storeId: string, key: string, since: number): Promise<IdempotencyRow | null>;
  putIdempotency(row: IdempotencyRow): Promise<void>;

  // readiness, usage, records
  listTriggerReadiness(storeId: string): Promise<TriggerReadinessRow[]>;
  setTriggerReadiness(row: TriggerReadinessRow): Promise<void>;
  addUsage(storeId: string, meter: string, periodStart: number, n: number): Promise<void>;
  getUsage(storeId: string, periodStart: number): Promise<Record<string, number>>;
  insertRecord(row: RecordRow): Promise<void>;
  getRecord(storeId: string, kind: string, id: string): Promise<RecordRow | null>;

  /** Whether any event of the store has this outcome now. */
  hasOutcome(storeId: string, outcome: string): Promise<boolean>;

  // reliability
  /** event_stats summed per metric from the 5-minute bucket holding `from` until now (see db/types.ts). */
  sumStats(storeId: string, from: number): Promise<Record<string, number>>;
  countAuthFailures(storeId: string, since: number): Promise<{ endpointId: string; n: number }[]>;
  /** Events not yet handed off for good (accepted, queued, held): the store's, or one endpoint's. */
  pendingStats(storeId: string, endpointId?: string): Promise<{ backlog: number; oldestReceivedAt: number | null }>;

  close(): Promise<void>;
}
