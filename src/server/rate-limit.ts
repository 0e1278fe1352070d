/** Fixed one-minute windows: calls per grant and per store by rate-limit class, counted by the storage; the clock is injected. */
import { DEFAULT_RATE_LIMITS, type RateLimits } from '../contract/limits.ts';
import type { RateLimitClass } from '../contract/operations.ts';
import type { Clock } from '../lib/clock.ts';
import type { LimitStore } from '../../db/repo.ts';

const WINDOW_MS = 60_000;

export interface RateDecision {
  limited: boolean;
  scope: 'grant' | 'store';
  retryAfterSeconds: number;
  resetAt: number;
}

/**
 * The rule for simple and rich reads and previews: one fixed one-minute window per grant and one per store, by
 * class (DESIGN limits). The storage counts; this decides the keys, windows and answer.
 */
export class RateLimiter {
  constructor(
    /** Where the windows are counted: exact across instances on PostgreSQL; in memory for SQLite's one process. */
    private readonly store: LimitStore,
    private readonly clock: Clock,
    private readonly limits: RateLimits = DEFAULT_RATE_LIMITS,
  ) {}

  /** Counts one call against both windows unless either is full. */
  async take(cls: RateLimitClass, grantId: string, storeId: string): Promise<RateDecision> {
    const now = this.clock.now();
    const w = Math.floor(now / WINDOW_MS);
    const resetAt = (w + 1) * WINDOW_MS;
    const retryAfterSeconds = Math.max(1, Math.ceil((resetAt - now) / 1000));
    const limit = this.limits[cls];
    const full = await this.store.takeRate(
      [
        { key: `${cls}|g|${grantId}`, limit: limit.grant },
        { key: `${cls}|s|${storeId}`, limit: limit.store },
      ],
      w * WINDOW_MS,
    );
    return { limited: full >= 0, scope: full === 1 ? 'store' : 'grant', retryAfterSeconds, resetAt };
  }
}
