/** Fixed one-minute windows per grant and per store, per rate-limit class. In memory; the clock is injected. */
import { DEFAULT_RATE_LIMITS, type RateLimits } from '../contract/limits.ts';
import type { RateLimitClass } from '../contract/operations.ts';
import type { Clock } from '../lib/clock.ts';


const WINDOW_MS = 60_000;

export interface RateDecision {
  limited: boolean;
  scope: 'grant' | 'store';
  retryAfterSeconds: number;
  resetAt: number;
}

export class RateLimiter {
  private counts = new Map<string, number>();
  private window = -1;

  constructor(
    private readonly clock: Clock,
    private readonly limits: RateLimits = DEFAULT_RATE_LIMITS,
  ) {}

  /** Counts one call against both windows unless either is full. */
  take(cls: RateLimitClass, grantId: string, storeId: string): RateDecision {
    const now = this.clock.now();
    const w = Math.floor(now / WINDOW_MS);
    if (w !== this.window) {
      this.window = w;
      this.counts.clear();
    }
    const resetAt = (w + 1) * WINDOW_MS;
    const retryAfterSeconds = Math.max(1, Math.ceil((resetAt - now) / 1000));
    const gk = `${cls}|g|${grantId}`;
    const sk = `${cls}|s|${storeId}`;
    const g = this.counts.get(gk) ?? 0;
    const st = this.counts.get(sk) ?? 0;
    const limit = this.limits[cls];
    if (g >= limit.grant) return { limited: true, scope: 'grant', retryAfterSeconds, resetAt };
    if (st >= limit.store) return { limited: true, scope: 'store', retryAfterSeconds, resetAt };
    this.counts.set(gk, g + 1);
    this.counts.set(sk, st + 1);
    return { limited: false, scope: 'grant', retryAfterSeconds, resetAt };
  }
}
