/** Meters counted and enforced for the agent API (the plan math is src/contract/plans.ts). Billing itself is the platform's (human-only). */
import type { UsageStore, UsageUnits } from '../../db/repo.ts';
import type { StoreRow } from '../../db/types.ts';
import { type AppError, refuse } from '../contract/errors.ts';
import { limitOf, period, type Meter } from '../contract/plans.ts';
import type { CoreWith, Runtime } from '../core.ts';

/** `n` units of `meter` for `store` in its current period: what a call counts, written with its audit row (steps/audit.ts). */
export function usageUnits(core: Pick<Runtime, 'clock'>, store: StoreRow, meter: Meter, n = 1): UsageUnits {
  return { storeId: store.id, meter, periodStart: period(store, core.clock.now()).start, n };
}

/**
 * 402 plan_capacity_exhausted when `meter` cannot take `n` more this period: the early answer (a preview, a plan).
 * What holds under concurrency is the execute's count itself, made only below the cap (countUsage), which
 * refuses with exhausted() when it finds the meter full.
 */
export async function ensureCapacity(core: CoreWith<UsageStore>, store: StoreRow, meter: Meter, n = 1): Promise<void> {
  const limit = limitOf(store, meter);
  if (limit == null) return;
  const p = period(store, core.clock.now());
  const used = (await core.repo.getUsage(store.id, p.start))[meter] ?? 0;
  if (used + n > limit) throw exhausted(store, meter, used, limit, p.end);
}

/** The 402 of a meter at its limit this period. */
function exhausted(store: StoreRow, meter: Meter, used: number, limit: number, periodEnd: number): AppError {
  return refuse(
    {
      category: 'usage',
      code: `${meter}_exhausted`,
      reason: `The ${store.plan} plan allows ${limit} ${meter.replaceAll('_', ' ')} per 30 days; ${used} are used.`,
      recommendedAction: `Wait for the reset at ${new Date(periodEnd).toISOString()}, or ask a human to change the plan (GET /agent/v1/billing-handoff).`,
    },
    { meter, used, limit, resetAt: new Date(periodEnd).toISOString() },
  );
}

/**
 * The 402 of an execute whose count found `meter` full (another execute took the last unit meanwhile): the
 * meter read again for the numbers; its limit is what it holds at least.
 */
export async function exhaustedNow(core: CoreWith<UsageStore>, store: StoreRow, meter: Meter): Promise<AppError> {
  const limit = limitOf(store, meter) ?? 0;
  const p = period(store, core.clock.now());
  const used = (await core.repo.getUsage(store.id, p.start).catch(() => ({}) as Record<string, number>))[meter] ?? limit;
  return exhausted(store, meter, Math.max(used, limit), limit, p.end);
}
