/** The storage interface. src/ops and src/relay use only this; each dialect implements it. */
import type {
  AttemptResult,
  AttemptRow,
  AuthFailureRow,
  CommittedReceipt,
  DueEvent,
  EndpointRow,
  EventFilter,
  EventRow,
  GrantRow,
  PendingReceipt,
  StoreRow,
} from './types.ts';

export interface Repo {
  readonly dialect: 'sqlite' | 'postgres';

  // stores
  getStore(id: string): Promise<StoreRow | null>;
  getStoreByShop(shopDomain: string): Promise<StoreRow | null>;
  listStores(): Promise<StoreRow[]>;
  insertStore(row: StoreRow): Promise<void>;

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
  commitIngest(receipts: PendingReceipt[], authFailures: AuthFailureRow[]): Promise<CommittedReceipt[]>;
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
  /** Clears every lease: only for a single-process deployment at start-up, after a crash. */
  releaseAllLeases(): Promise<number>;

  close(): Promise<void>;
}
