/**
 * Group commit: receipts of concurrent requests share one durable transaction, and each request is answered
 * only after the commit that holds it. One fsync per batch instead of one per request.
 */
import type { IngestStore, PendingAuthFailure } from '../../db/repo.ts';
import type { CommittedReceipt, EventRow, IngestLease, PendingReceipt } from '../../db/types.ts';
import { metrics } from '../lib/instruments.ts';
import { faultCode, outcomeUnknown, stalled, type StorageHealth } from './storage-health.ts';

/**
 * The running worker's side of a commit: it may take receipts straight from the commit (claimed in the same
 * transaction, see IngestLease) instead of claiming them with a second write after it.
 */
export interface DirectHandoff {
  /** How many receipts the worker takes from the next commit, and its lease; null when it takes none. */
  lease(): IngestLease | null;
  /** The receipts the commit leased to the worker, as stored; `due`: it also left accepted receipts to the claim. */
  take(events: EventRow[], due: boolean): void;
}

/**
 * Where a group commit goes: the storage itself, or the relay thread that holds its own connection to it (see
 * relay-host.ts). Resolves only after the commit is durable.
 */
export type IngestTarget = IngestStore;

/** How far past its gather bound a batch may wait for turns the loop spent elsewhere (see schedule). */
const BLOCKED_TURNS_MAX = 4;

/** A receipt offered after close (shutdown): refused, not a failure of storage. */
export class WriterClosedError extends Error {
  constructor() {
    super('writer closed');
    this.name = 'WriterClosedError';
  }
}

interface Waiter<T> {
  item: T;
  resolve: (r: CommittedReceipt) => void;
  reject: (e: unknown) => void;
}

export class ReceiptWriter {
  private receipts: Waiter<PendingReceipt>[] = [];
  private failures: { item: PendingAuthFailure; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;
  private flushing: Promise<void> | null = null;
  private closed = false;
  private direct: DirectHandoff | null = null;
  private health: StorageHealth | null = null;

  constructor(
    private target: IngestTarget,
    /** Called after each commit that held receipts to hand off (wakes the worker). */
    private readonly onCommitted: (receipts: CommittedReceipt[]) => void = () => {},
    private readonly maxBatch = 2048,
    /** How long a commit may wait for turns that keep bringing receipts (see schedule). */
    private readonly gatherMs = 1,
  ) {}

  /** Sends the following commits to `target` (serve's relay thread) instead. */
  commitTo(target: IngestTarget): void {
    this.target = target;
  }

  /** Lets the running worker take receipts from each commit (null: it claims them itself). */
  handOffTo(direct: DirectHandoff | null): void {
    this.direct = direct;
  }

  /** Records each commit's success or storage failure there (GET /status reads it). */
  reportHealthTo(health: StorageHealth): void {
    this.health = health;
  }

  /** Resolves once the receipt is durably committed. */
  submit(receipt: PendingReceipt): Promise<CommittedReceipt> {
    if (this.closed) return Promise.reject(new WriterClosedError());
    return new Promise((resolve, reject) => {
      this.receipts.push({ item: receipt, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once the failure is committed, as a row of its own or folded into its window's newest (see PendingAuthFailure). */
  recordAuthFailure(row: PendingAuthFailure): Promise<void> {
    if (this.closed) return Promise.reject(new WriterClosedError());
    return new Promise((resolve, reject) => {
      this.failures.push({ item: row, resolve, reject });
      this.schedule();
    });
  }

  /**
   * The commit runs at the first event-loop turn that brings no new receipt, after `gatherMs`, or once a batch
   * is full. A request's handler finishes over several turns (its body and its endpoint are awaited), so
   * committing at the first turn cut each batch short: over sockets commits held about 35 receipts of 64
   * concurrent requests, and every commit rewrites the last page of each B-tree it touches. A turn without
   * new receipts is immediate when nothing else is ready, so an idle server commits at once.
   *
   * A turn that took longer than `gatherMs` (the loop was busy elsewhere: a worker transaction, a collection)
   * does not end the batch, whatever it brought: the requests that arrived during it are read in the turn after,
   * and the batch takes them. A run of such turns still commits after `BLOCKED_TURNS_MAX × gatherMs`. Under the
   * bench's load (64 connections), a fifth of the commits held 32 receipts or fewer without this, one in 25 with it.
   */
  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    const started = performance.now();
    let last = started;
    let seen = this.pending();
    const check = () => {
      const n = this.pending();
      const now = performance.now();
      const blocked = now - last > this.gatherMs;
      last = now;
      const gathering = n > seen && now - started < this.gatherMs;
      if (n < this.maxBatch && (gathering || (blocked && now - started < BLOCKED_TURNS_MAX * this.gatherMs))) {
        seen = n;
        setImmediate(check);
        return;
      }
      this.scheduled = false;
      void this.flush();
    };
    setImmediate(check);
  }

  private pending(): number {
    return this.receipts.length + this.failures.length;
  }

  /** Commits everything pending now. Safe to call concurrently: one commit runs at a time. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (!this.pending()) return;
    const batch = this.receipts.splice(0, this.maxBatch);
    const failures = this.failures.splice(0, this.maxBatch);
    this.flushing = (async () => {
      try {
        const direct = this.direct;
        const lease = batch.length ? (direct?.lease() ?? null) : null;
        const started = performance.now();
        const committed = await this.target.commitIngest(
          batch.map((w) => w.item),
          failures.map((f) => f.item),
          lease,
        );
        metrics.commit(batch.length + failures.length, (performance.now() - started) / 1000);
        this.health?.succeeded();
        for (const [i, w] of batch.entries()) w.resolve(committed[i]!);
        for (const f of failures) f.resolve();
        if (lease) {
          const leased = batch.flatMap((w, i) => (committed[i]!.leased ? [w.item.event] : []));
          direct!.take(
            leased,
            committed.some((c) => c.outcome === 'accepted' && !c.leased),
          );
        }
        if (committed.length) this.onCommitted(committed);
      } catch (err) {
        this.health?.failed(err);
        for (const w of batch) w.reject(err);
        for (const f of failures) f.reject(err);
        // The database stopped answering (a deadline passed): what queued behind this commit would wait as long
        // again for the same silent database. Refused now, before any of it was sent (nothing stored), so that no
        // sender waits more than one deadline; the next receipt tries the database again. They are refused with
        // the cause, not with "may be stored", which is this batch's alone.
        if (stalled(err)) {
          const cause = (err as { cause?: unknown }).cause;
          const refusal = outcomeUnknown(err) && faultCode(cause) ? cause : err;
          for (const w of this.receipts.splice(0)) w.reject(refusal);
          for (const f of this.failures.splice(0)) f.reject(refusal);
        }
      }
    })();
    await this.flushing;
    this.flushing = null;
    if (this.pending()) this.schedule();
  }

  /** Stops taking new receipts and commits what is in flight (SIGTERM). */
  async close(): Promise<void> {
    this.closed = true;
    while (this.pending() || this.flushing) await this.flush();
  }
}
