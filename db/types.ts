/** Row types shared by every dialect: the repository speaks these, never a driver's types. */
import type * as s from './sqlite/schema.ts';

export type StoreRow = typeof s.stores.$inferSelect;
export type GrantRow = typeof s.grants.$inferSelect;
export type EndpointRow = typeof s.endpoints.$inferSelect;
/** An event as every dialect stores it; SQLite's link to the event's body (`bodyKey`) stays inside its repository. */
export type EventRow = Omit<typeof s.events.$inferSelect, 'bodyKey'>;
/** An attempt; `fieldCounts` only where the endpoint hands typed fields off. */
export type AttemptRow = Omit<typeof s.attempts.$inferSelect, 'fieldCounts'> & { fieldCounts?: string | null };
export type AuthFailureRow = typeof s.authFailures.$inferSelect;
export type AuditRow = typeof s.auditLog.$inferSelect;
export type IntentRow = typeof s.intents.$inferSelect;
export type IdempotencyRow = typeof s.idempotencyKeys.$inferSelect;
export type TriggerReadinessRow = typeof s.triggerReadiness.$inferSelect;
export type RecordRow = typeof s.records.$inferSelect;

/** A receipt waiting for the group commit. `dedupeKey` is the sender's external_event_id, when it has one. */
export interface PendingReceipt {
  event: EventRow;
  body: Uint8Array | null;
  bodyExpiresAt: number;
  /** Suppress as duplicate when the same endpoint saw this external id since this time. */
  dedupeSince: number | null;
  /**
   * The store's accepted-events meter for this receipt's period. An accepted receipt that would pass
   * `hardLimit` is stored `held` (never dropped); the commit counts the rest in the same transaction.
   */
  capacity?: { meter: string; periodStart: number; hardLimit: number } | null;
}

/** What the commit decided for one receipt. */
export interface CommittedReceipt {
  eventId: string;
  receiptId: string;
  /** The receipt's outcome (accepted, held, rejected, duplicate_suppressed, test): the 202's status. */
  outcome: string;
  duplicateOf: string | null;
  /** Claimed for the running worker by this commit: stored `queued` under the commit's lease. */
  leased?: boolean;
}

/**
 * A claim made by the ingest commit itself, for the worker running in the same process: up to `max` accepted
 * receipts are stored `queued` with `lease_until = next_attempt_at = until`, exactly as if the worker had claimed
 * them right after the commit, without a second write; the commit sets those three fields on the pending event
 * too, so the worker gets the stored row in memory. If it never records an attempt (a crash), the lease runs
 * out and they are due again like any claimed event.
 */
export interface IngestLease {
  until: number;
  max: number;
}

export interface EventFilter {
  storeId: string;
  endpointId?: string;
  /** Only events whose sender's external_event_id is exactly this. */
  externalEventId?: string;
  /** Only events of the store's endpoints whose trigger variant is this now (a deleted endpoint's events match none). */
  triggerVariant?: string;
  outcome?: string;
  since?: number;
  until?: number;
  /** Exclusive upper bound on id (ids sort by creation): the cursor. */
  beforeId?: string;
  /**
   * Inclusive lower bound on id, implied by `since` (an id is minted no earlier than its receipt): it bounds the
   * index range, where `since` alone is checked row by row.
   */
  sinceId?: string;
  /** Only delivered events handed off before this time (ms) that no confirmation names: workflows that did not finish. */
  unconfirmedBefore?: number;
  limit: number;
}

/** Outcomes of events not yet handed off for good: the backlog. */
export const PENDING_OUTCOMES = ['accepted', 'queued', 'held'] as const;

/**
 * events_store_outcome_idx holds every event but the delivered ones (most of them): the worker's record of a
 * delivery removes the event's `queued` entry and inserts none, where it used to move it (a fifth fewer SQLite
 * instructions in the record, 0.98 of serve's CPU per receipt and 0.92 of the bytes written, paired; see
 * docs/benchmarks.md, "Fourteenth session: storage"). A read that seeks on the index states this term as written,
 * beside its own outcome: SQLite uses a partial index only when the query's WHERE names the index's condition, and
 * PostgreSQL cannot prove it from a bound parameter. Delivered events are read on events_store_idx (store, id).
 */
export const UNDELIVERED = "outcome <> 'delivered'";

/**
 * The WHERE term for events of one outcome, its one parameter the outcome: any outcome but delivered seeks on
 * (store_id, outcome, id) and so states UNDELIVERED; delivered (most events) is read on (store_id, id).
 */
export function outcomeTerm(outcome: string): string {
  return outcome === 'delivered' ? 'outcome = ?' : `outcome = ? AND ${UNDELIVERED}`;
}

/** A due event for the handoff worker, with what it needs to build the platform payload. */
export interface DueEvent {
  event: EventRow;
  endpoint: EndpointRow;
  store: StoreRow;
}

/**
 * Claimed events with their endpoint and store, each looked up once per claim. An event whose endpoint or store
 * is gone meanwhile is left out: its lease runs out and the next claim decides again.
 */
export async function withEndpointsAndStores(
  claimed: EventRow[],
  reads: { getEndpointById(id: string): Promise<EndpointRow | null>; getStore(id: string): Promise<StoreRow | null> },
): Promise<DueEvent[]> {
  if (!claimed.length) return [];
  const eps = new Map<string, EndpointRow | null | undefined>();
  const sts = new Map<string, StoreRow | null | undefined>();
  for (const id of new Set(claimed.map((e) => e.endpointId))) eps.set(id, await reads.getEndpointById(id));
  for (const id of new Set(claimed.map((e) => e.storeId))) sts.set(id, await reads.getStore(id));
  return claimed.flatMap((event) => {
    const ep = eps.get(event.endpointId);
    const st = sts.get(event.storeId);
    return ep && st ? [{ event, endpoint: ep, store: st }] : [];
  });
}

/**
 * event_stats keeps every counter at three widths (5 minutes, 1 hour, 1 day, UTC-aligned), so a window sums at
 * most 12 + 23 + 7 buckets per metric however long it is.
 */
export const STATS_WIDTHS_MS = [5 * 60_000, 3600_000, 86400_000] as const;
const STATS_BUCKET_MS = STATS_WIDTHS_MS[0];
export const statsBucket = (ms: number, width: number = STATS_BUCKET_MS) => ms - (ms % width);

/** The names of event_stats metrics, in one place for the ingest commit, the worker and the reads. */
export const METRIC = {
  /** A receipt, by its outcome when committed (accepted, held, rejected, duplicate_suppressed, test). */
  received: (outcome: string) => `received:${outcome}`,
  /** Every handoff attempt, by its outcome (retry included). */
  attempt: (outcome: string) => `attempt:${outcome}`,
  /** A handoff that ended: delivered, failed or no_workflow. */
  handoff: (outcome: string) => `handoff:${outcome}`,
  /** An attempt's error class (throttled, server_error, timeout, …). */
  error: (errorClass: string) => `error:${errorClass}`,
  /** A delivery whose receipt-to-delivered latency was at most `boundMs` (histogram bucket). */
  latency: (boundMs: number) => `latency_le:${boundMs}`,
} as const;

/** An attempt journaled `sending` before its send; closed by recordAttempts, or found `unknown` by a later claim. */
export type AttemptStart = Pick<AttemptRow, 'eventId' | 'number' | 'destination' | 'startedAt'>;

export interface AttemptResult {
  /** attempt.eventId is the event updated. */
  attempt: AttemptRow;
  /**
   * Nothing was sent (the store's handoff is paused): the journaled attempt is removed instead of closed, and the
   * event waits, `queued`, until `event.nextAttemptAt`, its attempt count unchanged.
   */
  unsent?: boolean;
  /**
   * A local send (a destination with `external: false`: nothing left the box): no attempt was journaled before it.
   * The record writes the attempt whole, and only while the event still holds the lease it was sent under
   * (`leaseUntil`): one row written once instead of journaled and rewritten.
   */
  unjournaled?: { leaseUntil: number | null };
  storeId: string;
  /** event_stats metrics this attempt adds one to, in the bucket of attempt.finishedAt. */
  metrics: string[];
  /** Event columns to set with the attempt, in the same transaction. */
  event: Pick<EventRow, 'outcome' | 'code' | 'nextAttemptAt' | 'deliveredAt' | 'leaseUntil'>;
}
