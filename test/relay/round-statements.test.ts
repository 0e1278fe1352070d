/**
 * A handoff round's per-store work costs the same statements for 2 stores as for 50: their budgets are read in one
 * statement and spent in one (compare-and-set per store), their trigger readiness read in one. Counted from the
 * drivers with the stores bench's counter (scripts/bench/statement-counter.ts), on the backend under test.
 */
import { describe, expect, it } from 'bun:test';
import type { StoreRow } from '../../db/types.ts';
import { platformOf } from '../../src/platform/registry.ts';
import { shopifyPlatform } from '../../src/platform/shopify/platform.ts';
import { countStatements } from '../../scripts/bench/statement-counter.ts';
import { addStore, backend, createTestEnv, rows, type TestEnv } from '../helpers.ts';

const counter = countStatements();

/** Statements `fn` executes. Nothing else runs meanwhile: the test's env has no worker or writer going. */
async function statementsOf<T>(fn: () => Promise<T>): Promise<{ n: number; value: T }> {
  const before = counter.total;
  const value = await fn();
  return { n: counter.total - before, value };
}

/** `n` Shopify stores, each with a budget model (100 points, 10 a handoff) and a trigger Flow reports without a workflow. */
async function storesWithBudgets(n: number): Promise<{ env: TestEnv; stores: StoreRow[] }> {
  const env = await createTestEnv({ env: (v) => (v === 'TOKEN' ? 'shpat_round' : undefined) });
  const stores: StoreRow[] = [];
  for (let i = 0; i < n; i++) {
    const shop = `round-${i}.myshopify.com`;
    await addStore(env, { shopDomain: shop, destination: 'shopify', adminTokenEnv: 'TOKEN' });
    const store = (await env.core.repo.getStoreByShop(shop))!;
    await env.core.repo.links.observeBudget(store.id, { max: 100, available: 100, rate: 10, cost: 10 }, env.clock.now());
    await env.core.repo.setTriggerReadiness({ storeId: store.id, handle: `handle-${i}`, hasEnabledFlow: false, updatedAt: env.clock.now() });
    stores.push(store);
  }
  return { env, stores };
}

/** One round's pacing (every store wants 12 sends) and readiness read, each counted. */
async function round(n: number) {
  const { env, stores } = await storesWithBudgets(n);
  const pace = await statementsOf(() => shopifyPlatform(env.core).pace(stores.map((store) => ({ store, wanted: 12 }))));
  const readiness = await statementsOf(() =>
    platformOf('shopify').withoutWorkflow(
      env.core.repo,
      stores.map((s) => s.id),
    ),
  );
  const left = await rows<{ available: number }>(env, 'SELECT budget_available AS available FROM platform_links ORDER BY store_id');
  return { pace, readiness, left, stores };
}

describe('a handoff round over many stores', () => {
  it('reads and spends the budgets of 2 stores and of 50 in the same two statements, and reads readiness in one', async () => {
    const two = await round(2);
    const fifty = await round(50);
    // One read and one spend; SQLite's spend also sets PRAGMA synchronous around it (it commits relaxed).
    expect(two.pace.n).toBe(backend === 'sqlite' ? 4 : 2);
    expect(fifty.pace.n).toBe(two.pace.n);
    expect(two.readiness.n).toBe(1);
    expect(fifty.readiness.n).toBe(two.readiness.n);
    // Each store was paced on its own budget: 10 of 12 now (100 points, 10 each), 2 at send times one cost apart.
    for (const p of fifty.pace.value) {
      expect(p.granted).toBe(10);
      expect(p.later).toHaveLength(2);
      expect(p.later[1]! - p.later[0]!).toBe(1000);
    }
    expect(fifty.left).toHaveLength(50);
    for (const l of fifty.left) expect(l.available).toBe(0);
    expect(fifty.readiness.value.size).toBe(50);
    expect([...fifty.readiness.value.get(fifty.stores[7]!.id)!]).toEqual(['handle-7']);
  });

  it('spends only where the budget is still at the version it was worked out from (compare-and-set per store)', async () => {
    const { env, stores } = await storesWithBudgets(3);
    const { links } = env.core.repo;
    const before = new Map((await links.getMany(stores.map((s) => s.id))).map((l) => [l.storeId, l]));
    // Another instance spends from the middle store first: its version moves.
    const other = stores[1]!.id;
    expect(await links.spendBudgets([{ storeId: other, version: before.get(other)!.budgetVersion, available: 50, at: 1, horizon: null }])).toEqual(
      new Set([other]),
    );
    const spent = await links.spendBudgets(stores.map((s) => ({ storeId: s.id, version: before.get(s.id)!.budgetVersion, available: 7, at: 2, horizon: 9 })));
    expect(spent).toEqual(new Set([stores[0]!.id, stores[2]!.id]));
    const after = new Map((await links.getMany(stores.map((s) => s.id))).map((l) => [l.storeId, l]));
    expect(after.get(other)).toMatchObject({ budgetAvailable: 50, budgetAt: 1, budgetHorizon: null, budgetVersion: before.get(other)!.budgetVersion + 1 });
    expect(after.get(stores[0]!.id)).toMatchObject({
      budgetAvailable: 7,
      budgetAt: 2,
      budgetHorizon: 9,
      budgetVersion: before.get(stores[0]!.id)!.budgetVersion + 1,
    });
    // A store without a link row is not given one by a spend.
    expect(await links.spendBudgets([{ storeId: 'st_missing', version: 0, available: 1, at: 1, horizon: null }])).toEqual(new Set());
    expect(await links.get('st_missing')).toBeNull();
  });
});
