/** Plans, their 30-day periods and meter limits: pure math shared by the agent API (ops) and the hot path (relay). */
import type { METERS } from './limits.ts';

export type Meter = (typeof METERS)[number];

/** What the plan math reads of a store: its plan and the creation time its periods are anchored at. */
export interface PlanHolder {
  plan: string;
  createdAt: number;
}

interface PlanDef {
  /** What a deployment that bills through Shopify charges for it every 30 days, in USD; null: not sold. */
  priceUsd: number | null;
  /** Limits per 30-day period; null: no cap (the meter is still counted and published). */
  acceptedEvents: number | null;
  diagnosticsShares: number | null;
  replayExecutions: number | null;
  /** Fraction over the accepted-events limit tolerated before holding events. */
  eventGrace: number;
}

/**
 * `unlimited` is a self-hosted box's: nothing capped, nothing held, every meter counted. The capped plans are for
 * deployments that bill (a hosted relay for many merchants' stores).
 */
export const PLANS: Record<string, PlanDef> = {
  unlimited: { priceUsd: null, acceptedEvents: null, diagnosticsShares: null, replayExecutions: null, eventGrace: 0 },
  free: { priceUsd: null, acceptedEvents: 500, diagnosticsShares: 25, replayExecutions: 25, eventGrace: 0 },
  starter: { priceUsd: 19, acceptedEvents: 25_000, diagnosticsShares: 1_000, replayExecutions: 500, eventGrace: 0.1 },
  growth: { priceUsd: 79, acceptedEvents: 250_000, diagnosticsShares: 10_000, replayExecutions: 5_000, eventGrace: 0.1 },
  scale: { priceUsd: 249, acceptedEvents: 1_000_000, diagnosticsShares: 50_000, replayExecutions: 25_000, eventGrace: 0.1 },
};

/** The hard limit an uncapped meter is checked against: 2e9 accepted events in 30 days is 770 a second, sustained. */
const UNCAPPED = 2_000_000_000;

/** The plan `hookrelay init` gives a store: a self-hosted box holds nothing by default. */
export const DEFAULT_PLAN = 'unlimited';

export const PERIOD_MS = 30 * 86400_000;

function planOf(store: PlanHolder): PlanDef {
  return PLANS[store.plan] ?? PLANS.free!;
}

/** The 30-day period containing `now`, anchored at the store's creation. */
export function period(store: PlanHolder, now: number) {
  const start = store.createdAt + Math.floor((now - store.createdAt) / PERIOD_MS) * PERIOD_MS;
  return { start, end: start + PERIOD_MS };
}

export function limitOf(store: PlanHolder, meter: Meter): number | null {
  const p = planOf(store);
  if (meter === 'accepted_events') return p.acceptedEvents;
  if (meter === 'diagnostics_shares') return p.diagnosticsShares;
  if (meter === 'replay_executions') return p.replayExecutions;
  return null;
}

/** Where a meter is exhausted: the limit, plus the plan's grace for accepted events. */
function hardLimitOf(store: PlanHolder, meter: Meter): number | null {
  const limit = limitOf(store, meter);
  if (limit == null) return null;
  return meter === 'accepted_events' ? Math.floor(limit * (1 + planOf(store).eventGrace)) : limit;
}

export type Enforcement = 'ok' | 'warning' | 'grace' | 'exhausted';

export function enforcement(store: PlanHolder, meter: Meter, used: number): Enforcement {
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
export function acceptedCapacity(store: PlanHolder, now: number) {
  // Without a cap the receipt is still counted, against a limit no period reaches (and a 32-bit column holds).
  const hardLimit = hardLimitOf(store, 'accepted_events') ?? UNCAPPED;
  return { meter: 'accepted_events' satisfies Meter, periodStart: period(store, now).start, hardLimit };
}

/** The plans a deployment that bills sells, cheapest first: what billing handoff lists and a merchant can choose. */
export function paidPlans() {
  return Object.entries(PLANS).flatMap(([plan, p]) =>
    p.priceUsd != null && p.acceptedEvents != null && p.replayExecutions != null
      ? [{ plan, priceUsd: p.priceUsd, acceptedEventsPer30Days: p.acceptedEvents, replayExecutions: p.replayExecutions }]
      : [],
  );
}
