/**
 * One deployment hosting the app for two merchants (SQLite here; every test deployment on PostgreSQL under
 * HOOKRELAY_TEST_BACKEND=postgres). Each merchant installs from /auth/install on a Shopify of its own — a fake per
 * shop behind one loopback router, reached as Shopify is, by shop: HOOKRELAY_SHOPIFY_ADMIN_URL=http://router/{shop}.
 * Each install is its own tenant: its own store, tokens and refreshes on the clock, its events handed off to its
 * own shop only; no read, replay or audit row crosses; one merchant's uninstall, reinstall and shop/redact leave
 * the other's relay running and its data whole; forged webhooks are refused, a replayed one is never processed
 * twice, not even after the reinstall it would undo, and a signed body sent again under a new webhook id uninstalls
 * and erases nothing while Shopify still accepts the store's token.
 */
import { afterAll, afterEach, describe, expect, it } from 'bun:test';
import { shopifyWebhooks } from '../../src/platform/shopify/webhook-handler.ts';
import { showStores } from '../../src/ops/stores.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { b, fakeShopifyForFile, lostAnswer, webhookPayloads, type FakeShopify } from '../fixtures/fake-shopify.ts';
import { dumpDatabase } from '../security/dump.ts';
import { addGrant, BASE, call, count, createEndpoint, createTestEnv, executeIntent, sendHook, type TestEnv } from '../helpers.ts';

const APP = { clientId: 'many-stores-client-0001', clientSecret: 'many-stores-app-secret-canary-8d02' };
const A = 'alpine-outfitters.myshopify.com';
const B = 'birch-and-bloom.myshopify.com';

let env: TestEnv | null = null;
const clock = () => (env ? env.clock.now() : Date.now());
const fakes: Record<string, FakeShopify> = {
  [A]: fakeShopifyForFile({ app: { ...APP, accessTokenTtlSeconds: 3600 }, shop: { domain: A, id: 601001 }, now: clock }),
  [B]: fakeShopifyForFile({ app: { ...APP, accessTokenTtlSeconds: 3600 }, shop: { domain: B, id: 602002 }, now: clock }),
};

/** Shopify as the app reaches it: each shop at its own address, here `/<shop>/…` on one port. */
const router = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const url = new URL(req.url);
    const [, shop = '', ...rest] = url.pathname.split('/');
    const fake = fakes[shop];
    if (!fake) return new Response(`no shop ${shop}`, { status: 404 });
    const headers = new Headers(req.headers);
    headers.delete('host');
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.arrayBuffer();
    try {
      return await fetch(`${fake.url}/${rest.join('/')}${url.search}`, { method: req.method, headers, body, redirect: 'manual' });
    } catch {
      return lostAnswer(); // the shop's answer was lost (dropNextTokenAnswer): lose it here too
    }
  },
});
afterAll(() => router.stop(true));

let app: ReturnType<typeof Bun.serve> | null = null;
afterEach(async () => {
  if (env) await shopifyWebhooks(env.core).idle();
  await app?.stop(true);
  app = null;
});

async function deployment() {
  env = await createTestEnv({
    shopifyAdminUrl: `http://127.0.0.1:${router.port}/{shop}`,
    env: (n) => ({ HOOKRELAY_SHOPIFY_CLIENT_ID: APP.clientId, HOOKRELAY_SHOPIFY_APP_SECRET: APP.clientSecret })[n],
  });
  app = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => env!.app.fetch(req) });
  return { e: env, worker: new HandoffWorker(env.core), webhooks: `http://127.0.0.1:${app.port}/shopify/webhooks` };
}

/**
 * One merchant's browser: /auth/install from an install link, its shop's authorize page (the fake approves), back to
 * /auth/callback; or from the admin (managed installation): the embedded app's first load, whose ID token hookrelay
 * exchanges for the store's tokens, rendering Home.
 */
async function install(e: TestEnv, shop: string, from: 'link' | 'admin' = 'link'): Promise<void> {
  const start = `${BASE}/auth/install?shop=${shop}`;
  if (from === 'admin') {
    const opened = await e.app.fetch(new Request(fakes[shop]!.embeddedAppUrl(`${BASE}/app`)));
    expect(opened.status).toBe(200);
    expect(await opened.text()).toContain(`hookrelay on ${shop}`);
    return;
  }
  const begin = await e.app.fetch(new Request(start));
  expect(begin.status).toBe(302);
  expect(begin.headers.get('location')).toStartWith(`http://127.0.0.1:${router.port}/${shop}/admin/oauth/authorize?`);
  const cookie = begin.headers.get('set-cookie')!.split(';')[0]!;
  const authorize = await fetch(begin.headers.get('location')!, { redirect: 'manual' });
  expect(authorize.status).toBe(302);
  const landed = await e.app.fetch(new Request(authorize.headers.get('location')!, { headers: { cookie } }));
  expect(landed.status).toBe(200);
  expect(await landed.text()).toContain(`hookrelay is installed on ${shop}`);
}

interface Tenant {
  shop: string;
  storeId: string;
  grant: string;
  endpoint: { id: string; auth: { headerName: string; mode: string } };
  secret: string;
  sent: string[];
  send(note?: string): Promise<string>;
}

/** Both merchants install (A from a link, B from its admin); each gets an agent grant (recovery operator: it reads, replays) and an endpoint. */
async function twoInstalled(e: TestEnv): Promise<Record<'a' | 'b', Tenant>> {
  const tenant = async (shop: string, orderBase: number, from: 'link' | 'admin'): Promise<Tenant> => {
    await install(e, shop, from);
    const store = (await e.repo.getStoreByShop(shop))!;
    const grant = await addGrant(e, 'recovery_operator', { shop, ttlMs: 30 * 86400_000 });
    const { endpoint, secret } = await createEndpoint(e, grant);
    const t: Tenant = {
      shop,
      storeId: store.id,
      grant,
      endpoint,
      secret,
      sent: [],
      async send(note = 'private') {
        const r = await sendHook(
          e,
          endpoint,
          secret,
          JSON.stringify({
            event_type: 'order.flagged',
            external_event_id: `${shop}-${t.sent.length}`,
            order: { id: orderBase + t.sent.length },
            note: `${note}-${shop}`,
          }),
        );
        expect(r.status).toBe(202);
        t.sent.push(r.json.eventId);
        return r.json.eventId as string;
      },
    };
    return t;
  };
  return { a: await tenant(A, 1000, 'link'), b: await tenant(B, 2000, 'admin') };
}

/** The hookrelay event ids a shop's Flow received. */
const received = (shop: string) => fakes[shop]!.requests.filter((r) => r.behaviour === 'ok').map((r) => r.payload['hookrelay event id'] as string);
const outcomes = async (e: TestEnv, t: Tenant, outcome: string) => count(e, 'events', 'store_id = ? AND outcome = ?', t.storeId, outcome);

describe('two merchants install the app on one deployment', () => {
  it('each install is its own store with its own tokens, refreshed on the clock, its events handed to its own shop only', async () => {
    const { e, worker } = await deployment();
    const { a, b: bb } = await twoInstalled(e);
    expect(a.storeId).not.toBe(bb.storeId);
    const [sa, sb] = [(await e.repo.getStoreByShop(A))!, (await e.repo.getStoreByShop(B))!];
    expect([sa.platformAccountId, sb.platformAccountId]).toEqual(['601001', '602002']);
    expect([sa.credentialMode, sb.credentialMode]).toEqual(['oauth', 'oauth']);
    const [la, lb] = [(await e.repo.links.get(a.storeId))!, (await e.repo.links.get(bb.storeId))!];
    expect(la.tokenSealed).not.toBe(lb.tokenSealed);
    // Opened from its admin now that it is installed, the app shows the store's own page.
    const opened = await e.app.fetch(new Request(fakes[B]!.embeddedAppUrl(`${BASE}/app`)));
    expect(opened.status).toBe(200);
    expect(await opened.text()).toContain(`hookrelay on ${B}`);

    // Three hours, each merchant sending every 10 minutes; at 1 h 50 A's refresh answer is lost on the way.
    for (let minute = 0; minute < 180; minute += 10) {
      if (minute === 110) fakes[A]!.dropNextTokenAnswer();
      await a.send();
      await bb.send();
      await worker.drain();
      e.clock.advance(10 * 60_000);
    }
    expect(await outcomes(e, a, 'delivered')).toBe(a.sent.length);
    expect(await outcomes(e, bb, 'delivered')).toBe(bb.sent.length);
    expect(received(A).sort()).toEqual([...a.sent].sort());
    expect(received(B).sort()).toEqual([...bb.sent].sort());
    for (const shop of [A, B]) {
      const refreshes = fakes[shop]!.tokenRequests.filter((t) => t.grantType === 'refresh_token' && t.outcome === 'issued');
      expect(refreshes.length).toBeGreaterThanOrEqual(3);
      expect(fakes[shop]!.requests.filter((r) => r.behaviour === 'unauthorized')).toHaveLength(0);
    }
    expect(fakes[A]!.tokenRequests.some((t) => t.dropped)).toBe(true);
    for (const id of [a.storeId, bb.storeId]) expect((await e.repo.links.get(id))!.pauseReason).toBeNull();
  });

  it("no read, replay or audit row crosses: the other store's ids are 404 as unknown ids are; lists, bulk replay and audit hold one store", async () => {
    const { e, worker } = await deployment();
    const { a, b: bb } = await twoInstalled(e);
    await a.send();
    fakes[B]!.script(b.userErrors({ field: null, message: 'Flow refused it' }));
    const bFailed = await bb.send();
    await bb.send();
    await worker.drain();
    expect(await outcomes(e, bb, 'failed')).toBe(1);

    // Reads and single replays of B's ids with A's grant: the same 404 as for an id that does not exist.
    const as = (method: string, path: string, body?: unknown) => call(e, method, path, { token: a.grant, body });
    const unknownEvent = await as('GET', '/agent/v1/events/evt_doesnotexist');
    expect(unknownEvent.status).toBe(404);
    for (const [method, path, body] of [
      ['GET', `/agent/v1/events/${bFailed}`],
      ['GET', `/agent/v1/endpoints/${bb.endpoint.id}`],
      ['POST', `/agent/v1/events/${bFailed}/replay-intents`, { mode: 'preview', input: { reason: 'cross' } }],
      ['POST', `/agent/v1/endpoints/${bb.endpoint.id}/edit-intents`, { mode: 'preview', input: { name: 'cross' } }],
      ['POST', `/agent/v1/endpoints/${bb.endpoint.id}/secret-rotation-intents`, { mode: 'preview', input: {} }],
    ] as const) {
      const r = await as(method, path, body);
      expect([path, r.status]).toEqual([path, 404]);
      expect(r.text).not.toContain(bFailed);
      expect(r.text).not.toContain('Flow refused it');
    }

    // The latest result of B's event, asked with A's grant: none, as for an id that does not exist.
    const result = await as('GET', `/agent/v1/event-result?eventId=${bFailed}`);
    expect(result.json.data).toEqual((await as('GET', '/agent/v1/event-result?eventId=evt_doesnotexist')).json.data);
    expect(result.json.data.result).toBeNull();

    // Lists and a bulk replay of every failed event in the window: A's grant sees A's store only.
    const listed = (await as('GET', '/agent/v1/events?limit=100')).json.data.events as { id: string }[];
    expect(listed.map((ev) => ev.id).sort()).toEqual([...a.sent].sort());
    const since = new Date(e.clock.now() - 3600_000).toISOString();
    const bulk = (token: string) =>
      call(e, 'POST', '/agent/v1/replay-intents', { token, body: { mode: 'preview', input: { reason: 'Flow fixed', filter: { since } } } });
    const bulkA = await bulk(a.grant);
    expect([bulkA.status, bulkA.json.refusal?.code]).toEqual([403, 'nothing_to_replay']);
    expect(bulkA.text).not.toContain(bFailed);
    const bulkB = await bulk(bb.grant);
    expect(bulkB.status).toBe(201);
    expect(bulkB.json.data.intent.preview.selection).toMatchObject({ count: 1, throughEventId: bFailed });
    expect((await as('GET', '/agent/v1/reliability/tenant')).text).not.toContain(B);

    // B replays its own failed event: handed to B's shop, never A's.
    const preview = await call(e, 'POST', `/agent/v1/events/${bFailed}/replay-intents`, {
      token: bb.grant,
      body: { mode: 'preview', input: { reason: 'Flow fixed' } },
    });
    expect(preview.status).toBe(201);
    expect((await executeIntent(e, bb.grant, `/agent/v1/events/${bFailed}/replay-intents`, preview.json.data.intent, 'replay-b-1')).status).toBe(200);
    await worker.drain();
    expect(received(B)).toContain(bFailed);
    expect(received(A)).not.toContain(bFailed);

    // The audit: every row of A's grant is A's store (its 404s included); B's store holds none of them.
    const audit = await e.repo.listAudit({ limit: 1000 });
    const [aGrantId, bGrantId] = [
      (await as('GET', '/agent/v1/grant')).json.data.grant.id,
      (await call(e, 'GET', '/agent/v1/grant', { token: bb.grant })).json.data.grant.id,
    ];
    const byA = audit.filter((r) => r.grantId === aGrantId);
    expect(byA.length).toBeGreaterThanOrEqual(9);
    expect(byA.every((r) => r.storeId === a.storeId)).toBe(true);
    expect(byA.filter((r) => r.status === 404)).toHaveLength(6);
    const ofB = await e.repo.listAudit({ storeId: bb.storeId, limit: 1000 });
    expect(ofB.length).toBeGreaterThan(0);
    expect(ofB.every((r) => r.storeId === bb.storeId && r.grantId !== aGrantId)).toBe(true);
    expect(ofB.some((r) => r.grantId === bGrantId && r.operationId === 'createReplayIntent' && r.transition === 'executed')).toBe(true);
    expect(
      (await e.repo.listAudit({ storeId: a.storeId, limit: 1000 })).some((r) => r.operationId === 'createReplayIntent' && r.transition === 'executed'),
    ).toBe(false);
  });

  it("one merchant's uninstall, reinstall and shop/redact leave the other's relay running and its data whole; forged webhooks 401, a replayed one processed once", async () => {
    const { e, worker, webhooks } = await deployment();
    const { a, b: bb } = await twoInstalled(e);
    await a.send();
    await bb.send();
    await worker.drain();

    // A forged app/uninstalled for A (signed with another secret): 401, recorded nowhere, A untouched.
    const forged = await fakes[A]!.deliverWebhook(webhooks, {
      topic: 'app/uninstalled',
      payload: webhookPayloads.appUninstalled(fakes[A]!.shop),
      signWith: 'not-the-app-secret',
    });
    expect(forged.status).toBe(401);
    expect(await count(e, 'shopify_webhooks')).toBe(0);
    expect((await e.repo.getStoreByShop(A))!.uninstalledAt).toBeNull();

    // A uninstalls: A's handoff pauses with every event kept; B goes on being handed off.
    const uninstalled = await fakes[A]!.deliverWebhook(webhooks, { topic: 'app/uninstalled', payload: fakes[A]!.uninstall() });
    expect(uninstalled.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    for (let i = 0; i < 3; i++) {
      await a.send();
      await bb.send();
    }
    for (let t = 0; t < 5; t++) {
      e.clock.advance(60_000);
      await worker.drain();
    }
    expect(await outcomes(e, a, 'queued')).toBe(3);
    expect(await outcomes(e, a, 'failed')).toBe(0);
    expect(await outcomes(e, bb, 'delivered')).toBe(4);
    const stateOf = async (t: Tenant) => (await call(e, 'GET', '/agent/v1/setup-state', { token: t.grant })).json.data.handoff;
    expect(await stateOf(a)).toMatchObject({ state: 'paused', reason: 'uninstalled', code: 'SVC_APP_UNINSTALLED' });
    expect((await stateOf(bb)).state).toBe('active');
    // What the operator's `hookrelay store show` prints for each.
    const shown = Object.fromEntries((await showStores(e.core)).stores.map((st) => [st.shopDomain, st]));
    expect(shown[A]).toMatchObject({
      installed: false,
      uninstalledAt: expect.any(String),
      credentials: { mode: 'oauth', token: { expiresAt: null } },
      handoff: { state: 'paused', code: 'SVC_APP_UNINSTALLED' },
    });
    expect(shown[B]).toMatchObject({ installed: true, uninstalledAt: null, credentials: { mode: 'oauth' }, handoff: { state: 'active' } });
    expect(Date.parse(shown[B]!.credentials.token!.expiresAt!)).toBeGreaterThan(e.clock.now());

    // A installs again: its backlog drains to A's shop. The same app/uninstalled delivered again (Shopify retries,
    // or someone replays it) is answered 200 and not processed again: A stays installed.
    await install(e, A);
    await worker.drain();
    expect(await outcomes(e, a, 'delivered')).toBe(4);
    expect(received(A).sort()).toEqual([...a.sent].sort());
    const again = await fakes[A]!.deliverWebhook(webhooks, {
      topic: 'app/uninstalled',
      payload: webhookPayloads.appUninstalled(fakes[A]!.shop),
      webhookId: uninstalled.webhookId,
    });
    expect(again.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await count(e, 'shopify_webhooks', 'webhook_id = ?', uninstalled.webhookId)).toBe(1);
    expect((await e.repo.getStoreByShop(A))!.uninstalledAt).toBeNull();
    expect((await stateOf(a)).state).toBe('active');
    // The signature covers the body, not the headers: the same signed bodies sent again under new webhook ids are
    // recorded and answered 200, but Shopify still accepts A's token, so neither uninstalls nor erases anything.
    const bodyAgain = await fakes[A]!.deliverWebhook(webhooks, { topic: 'app/uninstalled', payload: webhookPayloads.appUninstalled(fakes[A]!.shop) });
    const redactEarly = await fakes[A]!.deliverWebhook(webhooks, { topic: 'shop/redact', payload: webhookPayloads.shopRedact(fakes[A]!.shop) });
    expect([bodyAgain.status, redactEarly.status]).toEqual([200, 200]);
    await shopifyWebhooks(e.core).idle();
    for (const id of [bodyAgain.webhookId, redactEarly.webhookId]) {
      expect((await e.repo.shopifyWebhooks.get(id))!.result).toContain('not applied: Shopify still accepts');
    }
    expect((await stateOf(a)).state).toBe('active');
    expect(await count(e, 'event_bodies', 'event_id IN (SELECT id FROM events WHERE store_id = ?)', a.storeId)).toBe(4);

    // A leaves for good: uninstall, then shop/redact 48 hours later. A's bodies are gone from the database, its
    // rows and counts kept; B's bodies, tokens and handoff are untouched.
    expect((await fakes[A]!.deliverWebhook(webhooks, { topic: 'app/uninstalled', payload: fakes[A]!.uninstall() })).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    e.clock.advance(48 * 3600_000);
    expect((await fakes[A]!.deliverWebhook(webhooks, { topic: 'shop/redact', payload: webhookPayloads.shopRedact(fakes[A]!.shop) })).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    const bodiesOf = (t: Tenant) => count(e, 'event_bodies', 'event_id IN (SELECT id FROM events WHERE store_id = ?)', t.storeId);
    expect(await bodiesOf(a)).toBe(0);
    expect(await count(e, 'events', 'store_id = ?', a.storeId)).toBe(4);
    expect(await bodiesOf(bb)).toBe(4);
    expect((await e.repo.links.get(bb.storeId))!.tokenSealed).toMatch(/^v1\./);
    const dump = JSON.stringify(await dumpDatabase(e));
    expect(dump).not.toContain(`private-${A}`);
    expect(dump).toContain(`private-${B}`);
    await bb.send();
    await worker.drain();
    expect(await outcomes(e, bb, 'delivered')).toBe(5);
    expect(e.log.lines.join('\n')).not.toMatch(/private-|many-stores-app-secret/);
  });
});
