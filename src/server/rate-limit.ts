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
  /** Which of the refusals this limiter answers get their own audit row. */
  readonly refusals: RefusalFolds;

  constructor(
    /** Where the windows are counted: exact across instances on PostgreSQL; in memory for SQLite's one process. */
    private readonly store: LimitStore,
    private readonly clock: Clock,
    private readonly limits: RateLimits = DEFAULT_RATE_LIMITS,
  ) {
    this.refusals = new RefusalFolds(clock);
  }

  /** Counts one call against both windows unless either is full. */
  /** `holder`: the grant's id, or the human's key (ops/context.ts holderOf). */
  async take(cls: RateLimitClass, holder: string, storeId: string): Promise<RateDecision> {
    const now = this.clock.now();
    const w = Math.floor(now / WINDOW_MS);
    const resetAt = (w + 1) * WINDOW_MS;
    const retryAfterSeconds = Math.max(1, Math.ceil((resetAt - now) / 1000));
    const limit = this.limits[cls];
    const full = await this.store.takeRate(
      [
        { key: `${cls}|g|${holder}`, limit: limit.grant },
        { key: `${cls}|s|${storeId}`, limit: limit.store },
      ],
      w * WINDOW_MS,
    );
    return { limited: full >= 0, scope: full === 1 ? 'store' : 'grant', retryAfterSeconds, resetAt };
  }
}

/** A grant's refused calls of one operation in a window that got no audit row of their own. */
export interface FoldedRefusals {
  storeId: string;
  /** The grant's id or the human's key (holderOf): what the fold is keyed by. */
  holder: string;
  grantId: string | null;
  actorKind: 'agent' | 'human';
  actorLabel: string;
  operationId: string;
  count: number;
  from: number;
  to: number;
  lastAt: number;
}

/**
 * Which 429s get an audit row: the first of each grant and operation in a window gets its own; the rest are counted
 * and written as one summary row once the window has ended (see takeFolded), so a loop hammering a limit leaves
 * a bounded trail. Memory is bounded: each window starts empty and tracks at most `maxTracked` keys.
 */
export class RefusalFolds {
  private window = -1;
  private seen = new Set<string>();
  private folded = new Map<string, Omit<FoldedRefusals, 'from' | 'to'>>();
  private closed: FoldedRefusals[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly maxTracked = 10_000,
  ) {}

  /** True when this refusal gets its own audit row; else it is folded into its window's summary. */
  own(r: Omit<FoldedRefusals, 'count' | 'from' | 'to' | 'lastAt'>): boolean {
    const now = this.clock.now();
    this.roll(now);
    const key = `${r.holder}\u0000${r.operationId}`;
    if (!this.seen.has(key) && this.seen.size < this.maxTracked) {
      this.seen.add(key);
      return true;
    }
    const f = this.folded.get(key);
    if (f) {
      f.count++;
      f.lastAt = now;
    } else if (this.folded.size < this.maxTracked) this.folded.set(key, { ...r, count: 1, lastAt: now });
    return false;
  }

  /** The folded counts of windows that have ended, once each. */
  takeFolded(): FoldedRefusals[] {
    this.roll(this.clock.now());
    return this.closed.splice(0);
  }

  private roll(now: number): void {
    const w = Math.floor(now / WINDOW_MS);
    if (w === this.window) return;
    const from = this.window * WINDOW_MS;
    for (const f of this.folded.values()) this.closed.push({ ...f, from, to: from + WINDOW_MS });
    this.window = w;
    this.seen.clear();
    this.folded.clear();
  }
}
