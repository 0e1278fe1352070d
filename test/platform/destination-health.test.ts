/**
 * Health while the destination fails: the reliability reads say degraded from the first failed attempts (before
 * any event runs out of retries or the store pauses), with refused connections counted apart from 5xx answers;
 * GET /status says degraded (HTTP 200: the box still takes receipts) while a store's handoff is paused, and
 * operational again once it resumes.
 */
import { afterEach, describe, expect, it } from 'bun:test';
import { defaultConfig } from '../../src/core.ts';
import { OUTAGE_AFTER_FAILURES } from '../../src/relay/pauses.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { BASE, addGrant, addStore, call, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';

const TOKEN = 'shpat_destination_health_token';
let env: TestEnv | null = null;
const fake = fakeShopifyForFile({ token: TOKEN, now: () => (env ? env.clock.now() : Date.now()) });
afterEach(() => fake.setDown(false));

async function setup(adminUrl = fake.url) {
  env = await createTestEnv({
    shopifyAdminUrl: adminUrl,
    env: (n) => (n === 'TOKEN' ? TOKEN : undefined),
    handoff: { ...defaultConfig().handoff, timeoutMs: 500, concurrency: 1 },
  });
  const e = env;
  await addStore(e, { destination: 'shopify', adminTokenEnv: 'TOKEN' });
  const grant = await addGrant(e, 'admin_assistant', { ttlMs: 7 * 86400_000 });
  const { endpoint, secret } = await createEndpoint(e, grant);
  const worker = new HandoffWorker(e.core);
  worker.random = () => 1;
  worker.pauses.random = () => 1;
  const send = async (n: number, prefix: string) => {
    for (let i = 0; i < n; i++) expect((await sendHook(e, endpoint, secret, orderEvent(`${prefix}-${i}`, 7000 + i))).status).toBe(202);
  };
  const reliability = async () => (await call(e, 'GET', '/agent/v1/reliability/destination', { token: grant })).json.data;
  const status = async () => {
    const res = await e.app.fetch(new Request(`${BASE}/status`));
    return { http: res.status, body: (await res.json()) as any };
  };
  return { e, worker, send, reliability, status };
}

describe('a failing destination', () => {
  it('is degraded in the reliability read from the first failed attempts, before the store pauses', async () => {
    const { worker, send, reliability, status } = await setup();
    fake.setDown(true);
    await send(OUTAGE_AFTER_FAILURES - 2, 'early');
    await worker.drain();
    const health = await reliability();
    expect(health.handoff.state).toBe('active');
    expect(health.counts.failed).toBe(0); // every event still has its retries
    expect(health.destinationErrors).toMatchObject({ serverErrors: OUTAGE_AFTER_FAILURES - 2, network: 0 });
    expect(health.verdict).toBe('degraded');
    expect(health.reasons.join(' ')).toContain('The destination is failing');
    // Not paused yet: /status has nothing box-wide to say.
    expect((await status()).body.components.find((c: { name: string }) => c.name === 'handoff').status).toBe('operational');
  });

  it('counts refused connections as network, apart from 5xx answers', async () => {
    const closed = Bun.serve({ port: 0, fetch: () => new Response() });
    const url = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    const { worker, send, reliability } = await setup(url);
    await send(2, 'refused');
    await worker.drain();
    const health = await reliability();
    expect(health.destinationErrors).toMatchObject({ network: 2, serverErrors: 0 });
    expect(health.verdict).toBe('degraded');
  });

  it('makes /status degraded (HTTP 200, no store named) while a store is paused, and operational once it resumes', async () => {
    const { e, worker, send, status } = await setup();
    expect((await status()).body.status).toBe('operational');
    fake.setDown(true);
    await send(OUTAGE_AFTER_FAILURES + 1, 'down');
    await worker.drain();
    const during = await status();
    expect(during.http).toBe(200);
    expect(during.body.status).toBe('degraded');
    const handoff = during.body.components.find((c: { name: string }) => c.name === 'handoff');
    expect(handoff).toMatchObject({ status: 'degraded', code: 'handoff_paused' });
    expect(handoff.detail).toContain('platform_unavailable');
    expect(JSON.stringify(during.body)).not.toContain('myshopify.com');
    expect(during.body.components.find((c: { name: string }) => c.name === 'storage').status).toBe('operational');

    fake.setDown(false);
    e.clock.advance(300_000);
    await worker.drain();
    expect((await status()).body).toMatchObject({ status: 'operational' });

    // A store its merchant uninstalled waits for the merchant: no fault of the box's.
    const store = (await e.repo.listStores())[0]!;
    await e.repo.links.pause(
      store.id,
      { reason: 'uninstalled', code: 'SVC_APP_UNINSTALLED', message: 'uninstalled' },
      e.clock.now(),
      0,
      e.clock.now() + 60_000,
    );
    expect((await status()).body).toMatchObject({ status: 'operational' });
  });
});
