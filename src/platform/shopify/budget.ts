/**
 * Pacing inside a store's cost budget. Shopify limits the GraphQL Admin API per app and store with a leaky bucket
 * (about 100 points a second restored on Standard, 1,000 on Plus; a flowTriggerReceive costs about 10) and answers
 * THROTTLED when a call cannot be paid. Every reply reports the bucket (`extensions.cost.throttleStatus`). Here the
 * bucket is modelled in platform_links, shared by every instance: before a round's sends to a store, as many are
 * granted as the bucket pays for now (spent under compare-and-set), and each of the rest is given a send time one
 * cost apart after the last one handed out (`budget_horizon`), so it comes due when the bucket can pay for it and
 * is deferred once, not again and again. The model follows its own spending; a reply rewrites it only when it
 * teaches something: the first report, a THROTTLED answer, another maximum, rate or cost.
 */
import type { BudgetSpend, PlatformLinkRow, PlatformLinkStore } from '../../../db/areas/platform-links.ts';
import type { CoreWith } from '../../core.ts';
import type { QueryCost } from './admin-api.ts';

/**
 * Sends granted to a store whose budget no reply has reported yet (a tenth of the smallest bucket, 1,000 points);
 * the rest are due again at once: the next round, which starts once these are answered, knows the budget.
 */
const FIRST_GRANT = 10;
const LEARN_DELAY_MS = 0;
/** A handoff's cost until a reply says (Shopify's documented cost of a mutation). */
const DEFAULT_COST = 10;
/** Attempts at spending when instances keep moving the budget under each other. */
const SPEND_TRIES = 5;

export interface Pace {
  /** How many of the sends wanted go now. */
  granted: number;
  /** When each of the others is due, one cost of restore apart (ms on the core's clock). */
  later: number[];
}

type BudgetCore = CoreWith<{ links: PlatformLinkStore }>;

type BudgetColumns = Pick<PlatformLinkRow, 'budgetMax' | 'budgetAvailable' | 'budgetRate' | 'budgetAt' | 'budgetCost'>;

/**
 * The store's bucket as modelled, projected to `now` (restored at its rate since it was last written, never above
 * its maximum), with what a handoff costs; null until a reply has reported it.
 */
export function projectedBudget(link: BudgetColumns | null, now: number): { max: number; available: number; rate: number; cost: number } | null {
  if (!link || link.budgetMax == null || link.budgetAvailable == null || link.budgetRate == null || link.budgetAt == null || !(link.budgetRate > 0))
    return null;
  return {
    max: link.budgetMax,
    available: Math.min(link.budgetMax, link.budgetAvailable + (link.budgetRate * Math.max(0, now - link.budgetAt)) / 1000),
    rate: link.budgetRate,
    cost: link.budgetCost && link.budgetCost > 0 ? link.budgetCost : DEFAULT_COST,
  };
}

const shapeOf = (max: number, rate: number, cost: number) => `${max}/${rate}/${cost}`;

/**
 * Of `wanted` sends, those the projected budget pays for now (none when `grant` is false), what is left of it, and
 * a send time for each of the others: the next the bucket pays for, or one cost after the last handed out
 * (`horizon`), whichever is later.
 */
function plan(
  budget: { available: number; rate: number; cost: number },
  horizonBefore: number | null,
  wanted: number,
  grant: boolean,
  now: number,
): Pace & { left: number; horizon: number | null } {
  const { cost, rate, available } = budget;
  const granted = grant ? Math.min(wanted, Math.floor(available / cost)) : 0;
  const left = available - granted * cost;
  const later: number[] = [];
  let horizon = horizonBefore;
  if (granted < wanted) {
    const interval = (cost / rate) * 1000;
    let slot = Math.max(horizon == null ? 0 : horizon + interval, now + (Math.max(0, cost - left) / rate) * 1000);
    for (let i = granted; i < wanted; i++) {
      later.push(Math.ceil(slot));
      horizon = Math.ceil(slot);
      slot += interval;
    }
  }
  return { granted, later, left, horizon };
}

export class CostBudget {
  /** Sends granted in this process and not answered yet, per store: a report made while they fly has not paid them. */
  private readonly flying = new Map<string, number>();
  /** Budgets this process has seen reported or stored, with their maximum, rate and cost (a change is written). */
  private readonly seen = new Map<string, string>();

  constructor(private readonly core: BudgetCore) {}

  /**
   * Grants what each store's budget pays for now of the sends it wants, and send times for the rest (one entry per
   * store, in the order asked). The stores' budgets are read in one statement and spent in one (compare-and-set per
   * store: a store whose budget another instance moved meanwhile is worked out again from what it left), so a round
   * costs the same statements for two stores as for two hundred. `grant: false` grants none: every send gets a send
   * time (a send the platform just threw back). `read`: given the links read first (the caller's cache may take
   * what it needs of them instead of reading each again).
   */
  async pace(wants: readonly { storeId: string; wanted: number }[], grant = true, read?: (links: PlatformLinkRow[]) => void): Promise<Pace[]> {
    const { links } = this.core.repo;
    const paced = new Map<string, Pace>();
    let open = wants;
    for (let t = 0; t < SPEND_TRIES && open.length; t++) {
      const now = this.core.clock.now();
      const rows = await links.getMany(open.map((w) => w.storeId));
      if (t === 0) read?.(rows);
      const byStore = new Map(rows.map((l) => [l.storeId, l]));
      const spends: BudgetSpend[] = [];
      const planned = new Map<string, Pace>();
      for (const { storeId, wanted } of open) {
        const link = byStore.get(storeId) ?? null;
        const budget = projectedBudget(link, now);
        if (!link || !budget) {
          const granted = grant ? Math.min(wanted, FIRST_GRANT) : 0;
          this.fly(storeId, granted);
          paced.set(storeId, { granted, later: Array.from({ length: wanted - granted }, () => now + LEARN_DELAY_MS) });
          continue;
        }
        const { granted, later, left, horizon } = plan(budget, link.budgetHorizon, wanted, grant, now);
        spends.push({ storeId, version: link.budgetVersion, available: left, at: now, horizon });
        planned.set(storeId, { granted, later });
      }
      const spent = spends.length ? await links.spendBudgets(spends) : new Set<string>();
      for (const [storeId, p] of planned) {
        if (!spent.has(storeId)) continue;
        this.fly(storeId, p.granted);
        paced.set(storeId, p);
      }
      open = open.filter((w) => !paced.has(w.storeId));
    }
    const now = this.core.clock.now();
    for (const { storeId, wanted } of open) paced.set(storeId, { granted: 0, later: Array.from({ length: wanted }, () => now + LEARN_DELAY_MS) });
    return wants.map((w) => paced.get(w.storeId)!);
  }

  /** The budget shapes (maximum, rate, cost) stored with these links: a reply of the same shape teaches nothing new. */
  know(links: readonly PlatformLinkRow[]): void {
    for (const l of links) {
      if (this.seen.has(l.storeId) || l.budgetMax == null || l.budgetRate == null || l.budgetCost == null) continue;
      this.seen.set(l.storeId, shapeOf(l.budgetMax, l.budgetRate, l.budgetCost));
    }
  }

  /**
   * A send's reply. Its report of the bucket replaces the model when it teaches something: the first one seen, a
   * THROTTLED answer (the model was wrong), or another maximum, rate or cost. The sends still flying from this
   * process are taken off what it reports, as the model has spent them already.
   */
  async answered(storeId: string, cost: QueryCost | null, throttled: boolean): Promise<void> {
    this.fly(storeId, -1);
    if (!cost || cost.maximumAvailable == null || cost.currentlyAvailable == null || cost.restoreRate == null) return;
    const each = cost.requested ?? cost.actual ?? DEFAULT_COST;
    const shape = shapeOf(cost.maximumAvailable, cost.restoreRate, each);
    if (!throttled && this.seen.get(storeId) === shape) return;
    this.seen.set(storeId, shape);
    const available = Math.max(0, cost.currentlyAvailable - each * (this.flying.get(storeId) ?? 0));
    await this.core.repo.links
      .observeBudget(storeId, { max: cost.maximumAvailable, available, rate: cost.restoreRate, cost: each }, this.core.clock.now())
      .catch(() => undefined);
  }

  /** When a THROTTLED send may go again: the next send time handed out (the bucket, as reported, pays for it then). */
  async retryAt(storeId: string): Promise<number> {
    return (await this.pace([{ storeId, wanted: 1 }], false))[0]!.later[0]!;
  }

  private fly(storeId: string, n: number): void {
    const next = Math.max(0, (this.flying.get(storeId) ?? 0) + n);
    if (next) this.flying.set(storeId, next);
    else this.flying.delete(storeId);
  }
}
