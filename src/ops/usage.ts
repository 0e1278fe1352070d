/** Plans, 30-day usage periods, meters and their enforcement. Billing itself is the platform's (human-only). */
import type { StoreRow } from '../../db/types.ts';
import { refuse } from '../contract/errors.ts';
import { METERS } from '../contract/limits.ts';
import type { Core } from '../core.ts';

export { METERS };
export type Meter = (typeof METERS)[number];

interface PlanDef {
  acceptedEvents: number;
  diagnosticsShares: number;
  replayExecutions: number;
  /** Fraction over the accepted-events limit tolerated before holding events. */
  eventGrace: number;
}

export const PLANS: Record<string, PlanDef> = {
  free: { acceptedEvents: 500, diagnosticsShares: 25, replayExecutions: 25, eventGrace: 0 },
  starter: { acceptedEvents: 25_000, diagnosticsShares: 1_000, replayExecutions: 500, eventGrace: 0.1 },
  growth: { acceptedEvents: 250_000, diagnosticsShares: 10_000, replayExecutions: 5_000, eventGrace: 0.1 },
  scale: { acceptedEvents: 1_000_000, diagnosticsShares: 50_000, replayExecutions: 25_000, eventGrace: 0.1 },
};

export const PERIOD_MS = 30 * 86400_000;

export function planOf(store: StoreRow): PlanDef {
  return PLANS[store.plan] ?? PLANS.free!;
}

/** The 30-day period containing `now`, anchored at the store's creation. */
export function period(store: StoreRow, now: number) {
  const start = store.createdAt + Math.floor((now - store.createdAt) / PERIOD_MS) * PERIOD_MS;
  return { start, end: start + PERIOD_MS };
}

export function limitOf(store: StoreRow, meter: Meter): number | null {
  const p = planOf(store);
  if (meter === 'accepted_events') return p.acceptedEvents;
  if (meter === 'diagnostics_shares') return p.diagnosticsShares;
  if (meter === 'replay_executions') return p.replayExecutions;
  return null;
}

/** Where a meter is exhausted: the limit, plus the plan's grace for accepted events. */
export function hardLimitOf(store: StoreRow, meter: Meter): number | null {
  const limit = limitOf(store, meter);
  if (limit == null) return null;
  return meter === 'accepted_events' ? Math.floor(limit * (1 + planOf(store).eventGrace)) : limit;
}

export type Enforcement = 'ok' | 'warning' | 'grace' | 'exhausted';

export function enforcement(store: StoreRow, meter: Meter, used: number): Enforcement {
  const limit = limitOf(store, meter);
  if (limit == null) return 'ok';
  if (used >= hardLimitOf(store, meter)!) return 'exhausted';
  if (used >= limit) return 'grace';
  if (used >= limit * 0.8) return 'warning';
  return 'ok';
}

/**
 * The accepted-events meter an inbound receipt counts against. The commit stores receipts past the hard limit
 * as `held`: kept, never dropped, handed off when capacity returns.
 */
export function acceptedCapacity(store: StoreRow, now: number) {
  return { meter: 'accepted_events' satisfies Meter, periodStart: period(store, now).start, hardLimit: hardLimitOf(store, 'accepted_events')! };
}

/**
 * Moves held events back into the handoff queue, oldest first, as far as each store's capacity now allows
 * (a new period, or a bigger plan). Returns how many were released.
 */
export async function releaseHeld(core: Core): Promise<number> {
  const now = core.clock.now();
  let released = 0;
  for (const store of await core.repo.listStores()) {
    const n = await core.repo.releaseHeld(store.id, acceptedCapacity(store, now), now);
    if (n) core.log.info(`released ${n} held events of ${store.shopDomain} into the handoff queue`);
    released += n;
  }
  return released;
}

export async function record(core: Core, store: StoreRow, meter: Meter, n = 1): Promise<void> {
  await core.repo.addUsage(store.id, meter, period(store, core.clock.now()).start, n);
}

/** 402 plan_capacity_exhausted when `meter` cannot take `n` more this period. */
export async function ensureCapacity(core: Core, store: StoreRow, meter: Meter, n = 1): Promise<void> {
  const limit = limitOf(store, meter);
  if (limit == null) return;
  const p = period(store, core.clock.now());
  const used = (await core.repo.getUsage(store.id, p.start))[meter] ?? 0;
  if (used + n > limit) {
    throw refuse(
      {
        category: 'usage',
        code: `${meter}_exhausted`,
        reason: `The ${store.plan} plan allows ${limit} ${meter.replaceAll('_', ' ')} per 30 days; ${used} are used.`,
        recommendedAction: `Wait for the reset at ${new Date(p.end).toISOString()}, or ask a human to change the plan (GET /agent/v1/billing-handoff).`,
      },
      { meter, used, limit, resetAt: new Date(p.end).toISOString() },
    );
  }
}
