/**
 * Records handoff attempts as they end, group-committed: a result waits for the commit in progress to finish and
 * goes with every other result that ended meanwhile, one transaction each time. A lane that awaits its result's
 * record before its next send leaves at most one send unrecorded at any moment, so a crash repeats only the sends
 * truly in flight (at most the worker's concurrency), not everything a round had delivered before it.
 */
import type { AttemptResult } from '../../db/types.ts';

/** Resolves on the event loop's next turn (after I/O callbacks queued meanwhile). */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class AttemptRecorder {
  private pending: { result: AttemptResult; done: () => void; fail: (err: unknown) => void }[] = [];
  private flushing = false;

  constructor(private readonly write: (results: AttemptResult[]) => Promise<void>) {}

  /** Resolves once the result is durably recorded (rejects when the commit holding it failed). */
  record(result: AttemptResult): Promise<void> {
    return new Promise((done, fail) => {
      this.pending.push({ result, done, fail });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    // The lanes whose sends ended in this turn join the first commit.
    await nextTurn();
    while (this.pending.length) {
      const batch = this.pending.splice(0);
      try {
        await this.write(batch.map((p) => p.result));
        for (const p of batch) p.done();
      } catch (err) {
        for (const p of batch) p.fail(err);
      }
    }
    this.flushing = false;
  }
}
