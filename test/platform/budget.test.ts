/**
 * Pacing inside a store's cost budget, on the fake's enforced bucket and the test clock: the first sends teach the
 * budget, the rest are given send times one cost apart and go when the bucket pays for them (no THROTTLED, no
 * attempt spent waiting); a THROTTLED answer costs no attempt; stores are served fairly; on PostgreSQL two
 * instances share one budget.
 */
import { describe, expect, it } from 'bun:test';
import { openPgRepo } from '../../db/pg/repo.ts';
import { createCore, defaultConfig, type Core } from '../../src/core.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { hmacHex, newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { initStore } from '../../src/ops/stores.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { createApp } from '../../src/server/app.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { TEST_DATABASE_URL, testSchema } from '../fixtures/storage.ts';
import { addGrant, addStore, BASE, call, count, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

const TOKEN = 'shpat_budget_static_token';
let clock = new ManualClock();
/** 100 points, 50 restored a second, 10 a handoff: 10 sends at once, then one every 200 ms. */
const fake = fakeShopifyForFile({ token: TOKEN, bucket: { maximumAvailable: 100, restoreRate: 50 }, now: () => clock.now() });

async function setup(stores = ['demo.myshopify.com']) {
  const env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => (n === 'TOKEN' ? TOKEN : undefined), handoff: { concurrency: 4, batchSize: 64 } });
  clock = env.clock;
  const endpoints = [];
  for (const shop of stores) {
    await addStore(env, { shopDomain: shop, destination: 'shopify', adminTokenEnv: 'TOKEN' });
    endpoints.push(await createEndpoint(env, await addGrant(env, 'admin_assistant', { shop })));
  }
  return { env, endpoints, worker: new HandoffWorker(env.core) };
}

async function send(env: TestEnv, ep: Awaited<ReturnType<typeof createEndpoint>>, prefix: string, n: number) {
  for (let i = 0; i < n; i++) expect((await sendHook(env, ep.endpoint, ep.secret, orderEvent(`${prefix}-${i}`, 100 + i))).status).toBe(202);
}

describe('pacing inside the cost budget', () => {
  it('sends 10 at once, then one every 200 ms as the bucket restores: no THROTTLED, no attempt spent waiting', async () => {
    const { env, endpoints, worker } = await setup();
    await send(env, endpoints[0]!, 'paced', 40);
    await worker.drain();
    expect(fake.requests.filter((r) => r.behaviour === 'ok')).toHaveLength(10);
    // What waits and why: setup state shows the budget and until when events wait for it.
    const grant = await addGrant(env, 'observer');
    const budget = (await call(env, 'GET', '/agent/v1/setup-state', { token: grant })).json.data.platform.budget;
    expect(budget).toMatchObject({ maximum: 100, restoreRate: 50, costPerHandoff: 10 });
    expect(Date.parse(budget.pacedUntil) - clock.now()).toBeGreaterThanOrEqual(29 * 200);
    let sent = 10;
    const sentAt: number[] = [];
    for (let step = 0; step < 40 && sent < 40; step++) {
      clock.advance(200);
      await worker.drain();
      const now = fake.requests.filter((r) => r.behaviour === 'ok').length;
      for (let k = sent; k < now; k++) sentAt.push(clock.now());
      sent = now;
    }
    expect(sent).toBe(40);
    expect(fake.requests.filter((r) => r.behaviour !== 'ok')).toEqual([]); // never THROTTLED
    // Paced at the restore rate: 30 more in 30 x 200 ms, one a step (give or take the step a slot rounds into).
    expect(sentAt[sentAt.length - 1]! - sentAt[0]!).toBeGreaterThanOrEqual(27 * 200);
    expect(await count(env, 'events', "outcome = 'delivered'")).toBe(40);
    expect(await count(env, 'attempts', "outcome <> 'delivered'")).toBe(0);
    expect(await count(env, 'events', 'attempts <> 1')).toBe(0);
  });

  it('serves stores fairly: a store with a backlog does not hold up another store', async () => {
    const { env, endpoints, worker } = await setup(['big.myshopify.com', 'small.myshopify.com']);
    await send(env, endpoints[0]!, 'big', 50);
    await send(env, endpoints[1]!, 'small', 3);
    await worker.drain();
    // The bucket is per app and store, but the fake has one: the small store's 3 go within the first sends.
    const first = fake.requests.slice(0, 13).map((r) => String(r.payload['external event id']).split('-')[0]);
    expect(first.filter((x) => x === 'small')).toHaveLength(3);
  });
});

describe.if(!!TEST_DATABASE_URL)('two instances on one PostgreSQL', () => {
  it('share one budget: together they send no faster than it restores, and are never throttled', async () => {
    const schema = testSchema();
    const key = newSecretKey();
    const shared = new ManualClock();
    clock = shared;
    const open = async (): Promise<Core> =>
      createCore({
        repo: await openPgRepo({ url: TEST_DATABASE_URL!, schema, max: 4 }),
        box: new SecretBox(key),
        clock: shared,
        log: memoryLog(),
        config: defaultConfig({ publicUrl: BASE, shopifyAdminUrl: fake.url, env: (n) => (n === 'TOKEN' ? TOKEN : undefined) }),
      });
    const a = await open();
    const b = await open();
    try {
      await initStore(a, { shopDomain: 'demo.myshopify.com', destination: 'shopify', adminTokenEnv: 'TOKEN' });
      const grant = await issueGrant(a, { shopDomain: 'demo.myshopify.com', tier: 'admin_assistant', ttlMs: 3600_000 });
      const app = createApp(a);
      const created = (await (
        await app.fetch(
          new Request(`${BASE}/agent/v1/endpoints`, {
            method: 'POST',
            headers: { authorization: `Bearer ${grant.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
          }),
        )
      ).json()) as { data: { endpoint: { id: string }; secret: string } };
      for (let i = 0; i < 40; i++) {
        const body = orderEvent(`pg-${i}`, 200 + i);
        const res = await app.fetch(
          new Request(`${BASE}/hooks/${created.data.endpoint.id}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(created.data.secret, body) },
            body,
          }),
        );
        expect(res.status).toBe(202);
      }
      await app.writer.close();
      const workers = [new HandoffWorker(a), new HandoffWorker(b)];
      let sent = 0;
      for (let step = 0; step < 60 && sent < 40; step++) {
        await Promise.all(workers.map((w) => w.drain()));
        sent = fake.requests.filter((r) => r.behaviour === 'ok').length;
        // Never ahead of the bucket: 10 at once, then at most one per 200 ms step (both instances together).
        expect(sent).toBeLessThanOrEqual(10 + step + 1);
        shared.advance(200);
      }
      expect(sent).toBe(40);
      expect(fake.requests.filter((r) => r.behaviour === 'throttled')).toHaveLength(0);
    } finally {
      await Promise.all([a.repo.close(), b.repo.close()]);
    }
  });
});
