/**
 * A merchant installs the app on the fake Shopify, from /auth/install to a handed-off event; then, on the clock:
 * the 60-minute token refreshed (the refresh token rotated, the newest pair stored before use) while events flow;
 * a refresh answer lost on the way recovered with the previous refresh token; a revoked refresh token pausing the
 * store until a reinstall; an uninstall keeping every event and a reinstall draining them.
 */
import { describe, expect, it } from 'bun:test';
import { markUninstalled } from '../../src/platform/shopify/app-install.ts';
import { credentialVariableMissing, describeDestination } from '../../src/ops/stores.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { addGrant, BASE, call, count, createEndpoint, createTestEnv, orderEvent, row, sendHook, type TestEnv } from '../helpers.ts';

const CLIENT = { clientId: 'oauth-app-client-0001', clientSecret: 'oauth-app-secret-canary-31c7' };
const SHOP = 'merchant-one.myshopify.com';
let env: TestEnv | null = null;
const fake = fakeShopifyForFile({ app: { ...CLIENT, accessTokenTtlSeconds: 3600 }, shop: { domain: SHOP }, now: () => (env ? env.clock.now() : Date.now()) });

async function setup() {
  env = await createTestEnv({
    shopifyAdminUrl: fake.url,
    env: (n) => ({ HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT.clientId, HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT.clientSecret })[n],
  });
  return { env, worker: new HandoffWorker(env.core) };
}

/** The merchant's browser: /auth/install, Shopify's authorize page (the fake approves), back to /auth/callback. */
async function install(e: TestEnv, shop = SHOP): Promise<Response> {
  const begin = await e.app.fetch(new Request(`${BASE}/auth/install?shop=${shop}`));
  expect(begin.status).toBe(302);
  const cookie = begin.headers.get('set-cookie')!.split(';')[0]!;
  const authorize = await fetch(begin.headers.get('location')!, { redirect: 'manual' });
  expect(authorize.status).toBe(302);
  const back = new URL(authorize.headers.get('location')!);
  expect(back.origin + back.pathname).toBe(`${BASE}/auth/callback`);
  return e.app.fetch(new Request(back.toString(), { headers: { cookie } }));
}

async function endpointFor(e: TestEnv) {
  const grant = await addGrant(e, 'admin_assistant', { shop: SHOP, ttlMs: 30 * 86400_000 });
  return { grant, ...(await createEndpoint(e, grant)) };
}

describe('installing the app', () => {
  it("creates the store from Shopify's answer (OAuth, expiring token, identity) and hands its events off", async () => {
    const { env: e, worker } = await setup();
    const landed = await install(e);
    expect(landed.status).toBe(200);
    const html = await landed.text();
    expect(html).toContain(`hookrelay is installed on ${SHOP}`);
    // The landing page sends the merchant to Home (the app in their admin), not to the operator's terminal.
    expect(html).toContain(`https://admin.shopify.com/store/${SHOP.replace('.myshopify.com', '')}/apps/${CLIENT.clientId}`);
    expect(html).not.toContain('hookrelay grant issue');
    expect(html).not.toContain(CLIENT.clientSecret);
    expect(fake.tokenRequests.map((t) => [t.grantType, t.outcome])).toEqual([['authorization_code', 'issued']]);

    const store = (await e.repo.getStoreByShop(SHOP))!;
    expect(store).toMatchObject({
      destination: 'shopify',
      credentialMode: 'oauth',
      clientId: CLIENT.clientId,
      clientSecretEnv: 'HOOKRELAY_SHOPIFY_APP_SECRET',
      uninstalledAt: null,
    });
    expect(store.platformAccountId).toBe(String(fake.shop.id));
    expect(store.installationId).toMatch(/^\d+$/);
    const link = (await e.repo.links.get(store.id))!;
    expect(link.tokenSealed).toMatch(/^v1\./);
    expect(link.refreshSealed).toMatch(/^v1\./);
    expect(link.tokenExpiresAt).toBe(e.clock.now() + 3600_000);

    const { grant, endpoint, secret } = await endpointFor(e);
    const id = (await sendHook(e, endpoint, secret, orderEvent('after-install'))).json.eventId;
    await worker.drain();
    expect((await call(e, 'GET', `/agent/v1/events/${id}`, { token: grant })).json.data.event.outcome).toBe('delivered');
    const setup2 = (await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data;
    expect(setup2.platform.credentials).toMatchObject({ mode: 'oauth', variableSet: true });
    expect(setup2.platform.check.result).toBe('ok');
  });

  it("is described at serve's start as an OAuth install whose secret variable is set, not as a static token that is missing", async () => {
    const { env: e } = await setup();
    expect((await install(e)).status).toBe(200);
    const env = e.core.config.env;
    let store = (await e.repo.getStoreByShop(SHOP))!;
    expect(credentialVariableMissing(store, env)).toBe(false);
    expect(describeDestination(store, env)).toBe(
      `store ${SHOP}: destination shopify (app install, OAuth: client id ${CLIENT.clientId}, secret from $HOOKRELAY_SHOPIFY_APP_SECRET, set; tokens refreshed by hookrelay)`,
    );
    expect(credentialVariableMissing(store, () => undefined)).toBe(true);
    fake.uninstall();
    store = (await markUninstalled(e.core, SHOP, e.clock.now()))!;
    expect(describeDestination(store, env)).toContain(`; uninstalled ${new Date(e.clock.now()).toISOString()}, events wait for an install again)`);
  });

  it('refreshes the 60-minute token on the clock, rotating the refresh token, with events flowing: 0 failed', async () => {
    const { env: e, worker } = await setup();
    expect((await install(e)).status).toBe(200);
    const { endpoint, secret } = await endpointFor(e);
    let n = 0;
    // 4 hours, an event every 10 minutes: four refreshes (at 45 min of each hour's token).
    for (let t = 0; t < 240; t += 10) {
      await sendHook(e, endpoint, secret, orderEvent(`flow-${n++}`));
      await worker.drain();
      e.clock.advance(10 * 60_000);
    }
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(n);
    expect(fake.requests.filter((r) => r.behaviour === 'unauthorized')).toHaveLength(0);
    const refreshes = fake.tokenRequests.filter((t) => t.grantType === 'refresh_token' && t.outcome === 'issued').length;
    expect(refreshes).toBeGreaterThanOrEqual(4);
    expect(refreshes).toBeLessThanOrEqual(6);
    // Only the newest refresh token (and the one before, until the new one is used) works: rotation happened.
    expect(fake.liveRefreshTokens()).toBeLessThanOrEqual(2);
  });

  it('recovers from a lost refresh answer with the refresh token it still holds', async () => {
    const { env: e, worker } = await setup();
    expect((await install(e)).status).toBe(200);
    const { endpoint, secret } = await endpointFor(e);
    e.clock.advance(46 * 60_000); // past 3/4 of the token's hour: the next handoff renews
    fake.dropNextTokenAnswer();
    await sendHook(e, endpoint, secret, orderEvent('lost-1'));
    await worker.drain(); // the token held is alive: the event goes; the renewal beside it lost its answer
    e.clock.advance(15 * 60_000); // the old token is dead now: a renewal must succeed
    await sendHook(e, endpoint, secret, orderEvent('lost-2'));
    await worker.drain();
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(2);
    const refreshes = fake.tokenRequests.filter((t) => t.grantType === 'refresh_token');
    expect(refreshes.some((t) => t.dropped)).toBe(true);
    expect(refreshes[refreshes.length - 1]!.outcome).toBe('issued');
    const store = (await e.repo.getStoreByShop(SHOP))!;
    expect((await e.repo.links.get(store.id))!.pauseReason).toBeNull();
  });

  it('pauses the store when its refresh token is revoked (reinstall required), and a reinstall drains the backlog', async () => {
    const { env: e, worker } = await setup();
    expect((await install(e)).status).toBe(200);
    const { grant, endpoint, secret } = await endpointFor(e);
    fake.revokeRefreshTokens();
    e.clock.advance(61 * 60_000);
    for (let i = 0; i < 3; i++) await sendHook(e, endpoint, secret, orderEvent(`revoked-${i}`));
    await worker.drain();
    const state = (await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data;
    expect(state.handoff).toMatchObject({ state: 'paused', code: 'SVC_REINSTALL_REQUIRED' });
    expect(state.handoff.recommendedAction).toContain('/auth/install?shop=');
    expect(await count(e, 'events', "outcome = 'queued'")).toBe(3);

    expect((await install(e)).status).toBe(200);
    e.clock.advance(5_000);
    await worker.drain();
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(3);
  });

  it('an uninstall keeps every event waiting (none sent, none failed); an install again drains them', async () => {
    const { env: e, worker } = await setup();
    expect((await install(e)).status).toBe(200);
    const { grant, endpoint, secret } = await endpointFor(e);
    fake.uninstall();
    await markUninstalled(e.core, SHOP, e.clock.now());
    for (let i = 0; i < 4; i++) await sendHook(e, endpoint, secret, orderEvent(`gone-${i}`));
    for (let t = 0; t < 10; t++) {
      e.clock.advance(60_000);
      await worker.drain();
    }
    expect(fake.requests).toHaveLength(0);
    expect(await count(e, 'events', "outcome = 'queued'")).toBe(4);
    const store = (await e.repo.getStoreByShop(SHOP))!;
    expect(await row<Record<string, unknown>>(e, 'SELECT token_sealed, refresh_sealed FROM platform_links WHERE store_id = ?', store.id)).toEqual({
      token_sealed: null,
      refresh_sealed: null,
    });
    const state = (await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data;
    expect(state.handoff).toMatchObject({ state: 'paused', reason: 'uninstalled', code: 'SVC_APP_UNINSTALLED' });
    expect(state.checklist.find((c: { item: string }) => c.item === 'store_installed').done).toBe(false);

    expect((await install(e)).status).toBe(200);
    await worker.drain();
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(4);
    expect((await e.repo.getStoreByShop(SHOP))!.uninstalledAt).toBeNull();
  });
});
