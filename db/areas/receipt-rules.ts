/**
 * What a group commit stores for one receipt, decided once for every dialect. A dialect only answers the
 * questions (is this external id taken? does the meter have room?); these rules turn its answers into the row.
 */
import type { EventRow, IngestLease, PendingReceipt } from '../types.ts';

type Capacity = NonNullable<PendingReceipt['capacity']>;

/**
 * The row for a receipt: a duplicate links its first receipt and keeps no body; an accepted receipt the meter has
 * no room for is `held` (stored, never dropped). `takeRoom` is asked only for an accepted, non-duplicate receipt
 * with a meter (`capacity`), and counts it when it answers true. One `takeRoom` serves a whole commit: a closure
 * made per receipt was an allocation per receipt for a question most commits ask of one meter.
 */
export function receiptRow(
  e: EventRow,
  duplicateOf: string | null,
  capacity: Capacity | null | undefined,
  takeRoom: (e: EventRow, capacity: Capacity) => boolean,
): EventRow {
  if (duplicateOf) return { ...e, outcome: 'duplicate_suppressed', duplicateOf, nextAttemptAt: null, bodyRetention: 'none' };
  if (e.outcome === 'accepted' && capacity && !takeRoom(e, capacity)) return { ...e, outcome: 'held', code: 'SVC_OVER_CAPACITY', nextAttemptAt: null };
  return e;
}

/**
 * Leases an accepted receipt to the running worker in its own commit (IngestLease): stored `queued` with
 * `lease_until = next_attempt_at = lease.until`, and the pending event, which the worker takes, changed alike.
 * False when the commit has no lease room left or the receipt is not accepted.
 */
export function leaseToWorker(row: EventRow, lease: IngestLease | null, room: number): boolean {
  if (!lease || room <= 0 || row.outcome !== 'accepted') return false;
  row.outcome = 'queued';
  row.leaseUntil = lease.until;
  row.nextAttemptAt = lease.until;
  return true;
}
