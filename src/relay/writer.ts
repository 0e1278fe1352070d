/**
 * Group commit: receipts of concurrent requests share one durable transaction, and each request is answered
 * only after the commit that holds it. One fsync per batch instead of one per request.
 */
import type { Repo } from '../../db/repo.ts';
import type { AuthFailureRow, CommittedReceipt, PendingReceipt } from '../../db/types.ts';

interface Waiter<T> {
  item: T;
  resolve: (r: CommittedReceipt) => void;
  reject: (e: unknown) => void;
}

export class ReceiptWriter {
  private receipts: Waiter<PendingReceipt>[] = [];
  private failures: { item: AuthFailureRow; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;
  private flushing: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly repo: Repo,
    /** Called after each commit that held receipts to hand off (wakes the worker). */
    private readonly onCommitted: (receipts: CommittedReceipt[]) => void = () => {},
    private readonly maxBatch = 2048,
  ) {}

  /** Resolves once the receipt is durably committed. */
  submit(receipt: PendingReceipt): Promise<CommittedReceipt> {
    if (this.closed) return Promise.reject(new Error('writer closed'));
    return new Promise((resolve, reject) => {
      this.receipts.push({ item: receipt, resolve, reject });
      this.schedule();
    });
  }

  recordAuthFailure(row: AuthFailureRow): Promise<void> {
    if (this.closed) return Promise.reject(new Error('writer closed'));
    return new Promise((resolve, reject) => {
      this.failures.push({ item: row, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    // setImmediate lets every request already readable in this turn join the batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  /** Commits everything pending now. Safe to call concurrently: one commit runs at a time. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (!this.receipts.length && !this.failures.length) return;
    const batch = this.receipts.splice(0, this.maxBatch);
    const failures = this.failures.splice(0, this.maxBatch);
    this.flushing = (async () => {
      try {
        const committed = await this.repo.commitIngest(
          batch.map((w) => w.item),
          failures.map((f) => f.item),
        );
        batch.forEach((w, i) => w.resolve(committed[i]!));
        failures.forEach((f) => f.resolve());
        if (committed.length) this.onCommitted(committed);
      } catch (err) {
        batch.forEach((w) => w.reject(err));
        failures.forEach((f) => f.reject(err));
      }
    })();
    await this.flushing;
    this.flushing = null;
    if (this.receipts.length || this.failures.length) this.schedule();
  }

  /** Stops taking new receipts and commits what is in flight (SIGTERM). */
  async close(): Promise<void> {
    this.closed = true;
    while (this.receipts.length || this.failures.length || this.flushing) await this.flush();
  }
}
