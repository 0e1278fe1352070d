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

let lastMs = NaN;
let lastIso = '';

/**
 * RFC 3339 UTC string for a millisecond timestamp. The last one is kept: a group commit's receipts, their
 * handoffs and their log lines mostly share a millisecond.
 */
export function iso(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

export function isoOrNull(ms: number | null | undefined): string | null {
  return ms == null ? null : iso(ms);
}
