/** Injected time source, so tests control expiry, rate windows and the 30-minute failure pair. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.parse('2026-06-17T12:00:00Z')) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}

/**
 * An RFC 3339 formatter that keeps the last string it made: a group commit's receipts, their handoffs and their
 * log lines mostly share a millisecond. Each caller whose times interleave with another's keeps its own: the log
 * lines' (the time now) and a handoff payload's `received at` (the receipt's time) alternated per handoff through
 * one kept string, and each formatted its own every time.
 */
export function isoFormatter(): (ms: number) => string {
  let lastMs = NaN;
  let lastIso = '';
  return (ms) => {
    if (ms !== lastMs) {
      lastIso = new Date(ms).toISOString();
      lastMs = ms;
    }
    return lastIso;
  };
}

/** RFC 3339 UTC string for a millisecond timestamp (the last one kept, see isoFormatter). */
export const iso = isoFormatter();

export function isoOrNull(ms: number | null | undefined): string | null {
  return ms == null ? null : iso(ms);
}
