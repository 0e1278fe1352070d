/**
 * Billing through Shopify, on the fake: with billing on, the merchant's own page (the install's landing page, or
 * the app opened from the admin) offers the plans behind links this app signed; following one creates the
 * subscription and sends the merchant to Shopify's confirmation page; an agent grant can neither create nor approve
 * one (403 human_only); app_subscriptions/update moves the plan and the meters follow. With billing off nothing
 * changes from a self-hosted box.
 */
import { describe, expect, it } from 'bun:test';
import { processPendingShopifyWebhooks, shopifyWebhooks } from '../../src/platform/shopify/webhook-handler.ts';
import { signChoice } from '../../src/platform/shopify/billing.ts';
import { fakeShopifyForFile, webhookPayloads } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, BASE, call, createTestEnv, type TestEnv } from '../helpers.ts';
import { runnerOf } from '../../db/runner.ts';

const CLIENT = { clientId: 'billing-app-client-0001', clientSecret: 'billing-app-secret-canary-77a0' };
const SHOP = 'billed-store.myshopify.com';
/** Two other stores on the same box: one installed through the app (Shopify's shop id known), one set up by hand. */
const OTHER_SHOP = 'other-billed.myshopify.com';
const HAND_SHOP = 'hand-made.myshopify.com';
let env: TestEnv | null = null;
const fake = fakeShopifyForFile({ app: CLIENT, shop: { domain: SHOP }, now: () => (env ? env.clock.now() : Date.now()) });

async function setup(billing: 'shopify-test' | 'off') {
  env = await createTestEnv({
    shopifyAdminUrl: fake.url,
    env: (n) => ({ HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT.clientId, HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT.clientSecret, HOOKRELAY_BILLING: billing })[n],
  });
  return env;
}

/** The merchant's install, as a browser does it; returns the landing page's HTML. */
async function install(e: TestEnv): Promise<string> {
  const begin = await e.app.fetch(new Request(`${BASE}/auth/install?shop=${SHOP}`));
  const cookie = begin.headers.get('set-cookie')!.split(';')[0]!;
  const back = (await fetch(begin.headers.get('location')!, { redirect: 'manual' })).headers.get('location')!;
  const landed = await e.app.fetch(new Request(back, { headers: { cookie } }));
  expect(landed.status).toBe(200);
  return landed.text();
}

/** The choose links of a page, by plan. */
function links(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<a href="([^"]+)">([a-z]+)<\/a>/g)) out[m[2]!] = m[1]!.replace(/&#38;/g, '&');
  return out;
}

describe('billing through Shopify', () => {
  it('starts on free; the merchant picks a plan behind a signed link; Shopify confirms; the webhook moves the plan and the meters', async () => {
    const e = await setup('shopify-test');
    const html = await install(e);
    const store = (await e.repo.getStoreByShop(SHOP))!;
    expect(store.plan).toBe('free');
    const choose = links(html);
    expect(Object.keys(choose)).toEqual(['starter', 'growth', 'scale']);

    const started = await e.app.fetch(new Request(choose.growth!));
    expect(started.status).toBe(302);
    expect(started.headers.get('location')).toMatch(new RegExp(`^https://${SHOP}/admin/charges/\\d+/confirm_recurring_application_charge`));
    expect(fake.subscriptions).toHaveLength(1);
    const sub = fake.subscriptions[0]!;
    expect(sub).toMatchObject({ name: 'hookrelay growth', status: 'PENDING', test: true });
    expect(JSON.stringify(sub.lineItems)).toContain('"amount":79');

    // Approved in the admin: Shopify's webhook, signed with the app secret, moves the plan.
    const approved = fake.approveSubscription(sub.id);
    const res = await e.app.fetch(
      new Request(`${BASE}/shopify/webhooks`, {
        method: 'POST',
        headers: await signedHeaders('app_subscriptions/update', approved),
        body: JSON.stringify(approved),
      }),
    );
    expect(res.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect((await e.repo.getStoreByShop(SHOP))!.plan).toBe('growth');
    expect((await e.repo.getStoreByShop(SHOP))!.billingStatus).toBe('active');
    const grant = await addGrant(e, 'observer', { shop: SHOP });
    const usage = (await call(e, 'GET', '/agent/v1/plan-usage', { token: grant })).json.data;
    expect(usage.plan).toBe('growth');
    expect(usage.meters.find((m: { meter: string }) => m.meter === 'accepted_events').limit).toBe(250_000);

    // Cancelled (Shopify reports it so when asked): back to free.
    const cancelled = fake.cancelSubscription(sub.id);
    const r2 = await e.app.fetch(
      new Request(`${BASE}/shopify/webhooks`, {
        method: 'POST',
        headers: await signedHeaders('app_subscriptions/update', cancelled),
        body: JSON.stringify(cancelled),
      }),
    );
    expect(r2.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await planOf(e)).toBe('free/cancelled');
  });

  it('refuses a tampered or expired choose link, and the agent API only reads and links (403 human_only)', async () => {
    const e = await setup('shopify-test');
    const choose = links(await install(e));
    const tampered = choose.starter!.replace('plan=starter', 'plan=scale');
    expect((await e.app.fetch(new Request(tampered))).status).toBe(401);
    e.clock.advance(16 * 60_000);
    expect((await e.app.fetch(new Request(choose.starter!))).status).toBe(401);
    expect(fake.subscriptions).toHaveLength(0);

    const grant = await addGrant(e, 'admin_assistant', { shop: SHOP });
    const read = (await call(e, 'GET', '/agent/v1/billing-handoff', { token: grant })).json.data;
    expect(read).toMatchObject({
      billing: 'shopify-test',
      currentPlan: 'free',
      humanOnly: true,
      appBillingUrl: `https://admin.shopify.com/store/billed-store/apps/${CLIENT.clientId}`,
    });
    expect(read.paidPlanOptions.map((p: { plan: string; priceUsd: number }) => [p.plan, p.priceUsd])).toEqual([
      ['starter', 19],
      ['growth', 79],
      ['scale', 249],
    ]);
    const write = await call(e, 'POST', '/agent/v1/billing-handoff', { token: grant, body: { plan: 'growth' } });
    expect(write.status).toBe(403);
    expect(write.json.refusal.category).toBe('human_only');
    expect(fake.subscriptions).toHaveLength(0);
  });

  it('takes only a plan this deployment sells: neither a signed link nor an ACTIVE subscription names another into the store', async () => {
    const e = await setup('shopify-test');
    await install(e);
    const expires = e.clock.now() + 60_000;
    for (const plan of ['unlimited', 'free', 'constructor', '__proto__']) {
      const q = new URLSearchParams({ shop: SHOP, plan, expires: String(expires), sig: signChoice(CLIENT.clientSecret, SHOP, plan, expires) });
      expect([plan, (await e.app.fetch(new Request(`${BASE}/billing/subscribe?${q}`))).status]).toEqual([plan, 401]);
      // A signed ACTIVE body naming it: no subscription hookrelay created, so nothing to read back.
      const body = subscriptionBody(`gid://shopify/AppSubscription/9`, `hookrelay ${plan}`, 'ACTIVE');
      expect((await deliver(e, 'app_subscriptions/update', body)).status).toBe(200);
    }
    await shopifyWebhooks(e.core).idle();
    expect(fake.subscriptions).toHaveLength(0);
    expect((await e.repo.getStoreByShop(SHOP))!.plan).toBe('free');
  });

  // The plan choice moved from /app (now Home, test/seat/) to the seat's Plan page.
  it('answers a signed launch of /app without an ID token with no plan page: the seat asks App Bridge for a token', async () => {
    const e = await setup('shopify-test');
    await install(e);
    const q = new URLSearchParams({ host: 'YWRtaW4', shop: SHOP, timestamp: String(Math.floor(e.clock.now() / 1000)) });
    const sorted = new URLSearchParams([...q].sort(([a], [b]) => a.localeCompare(b)));
    q.set('hmac', new Bun.CryptoHasher('sha256', CLIENT.clientSecret).update(sorted.toString()).digest('hex'));
    const page = await e.app.fetch(new Request(`${BASE}/app?${q}`));
    expect(page.status).toBe(401);
    expect(Object.keys(links(await page.text()))).toEqual([]);
    expect((await e.app.fetch(new Request(`${BASE}/app?shop=${SHOP}`))).status).toBe(401);
  });

  it('with billing off: installs cap nothing, no plan links, subscriptions and their webhooks change nothing', async () => {
    const e = await setup('off');
    const html = await install(e);
    expect(Object.keys(links(html))).toEqual([]);
    expect((await e.repo.getStoreByShop(SHOP))!.plan).toBe('unlimited');
    expect((await e.app.fetch(new Request(`${BASE}/billing/subscribe?shop=${SHOP}&plan=growth&expires=9999999999999&sig=${'0'.repeat(64)}`))).status).toBe(404);
    const grant = await addGrant(e, 'observer', { shop: SHOP });
    expect((await call(e, 'GET', '/agent/v1/billing-handoff', { token: grant })).json.data).toMatchObject({ billing: 'off', currentPlan: 'unlimited' });
    const active = webhookPayloads.appSubscriptionsUpdate({
      id: 'gid://shopify/AppSubscription/1',
      name: 'hookrelay scale',
      status: 'ACTIVE',
      shopId: fake.shop.id,
      createdAt: '2026-06-17T12:00:00Z',
      updatedAt: '2026-06-17T12:05:00Z',
    });
    const res = await e.app.fetch(
      new Request(`${BASE}/shopify/webhooks`, {
        method: 'POST',
        headers: await signedHeaders('app_subscriptions/update', active),
        body: JSON.stringify(active),
      }),
    );
    expect(res.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect((await e.repo.getStoreByShop(SHOP))!.plan).toBe('unlimited');
  });
});

let webhookN = 0;
async function signedHeaders(topic: string, payload: unknown, shop = SHOP): Promise<Record<string, string>> {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return {
    'content-type': 'application/json',
    'x-shopify-topic': topic,
    'x-shopify-hmac-sha256': new Bun.CryptoHasher('sha256', CLIENT.clientSecret).update(body).digest('base64'),
    'x-shopify-shop-domain': shop,
    'x-shopify-webhook-id': `billing-test-${++webhookN}-${Math.random().toString(36).slice(2)}`,
    'x-shopify-api-version': '2026-10',
    'x-shopify-triggered-at': new Date(env!.clock.now()).toISOString(),
  };
}

/** A signed webhook, as Shopify (or anyone holding its bytes) sends it: a string payload goes as those exact bytes. */
async function deliver(e: TestEnv, topic: string, payload: unknown, shop = SHOP) {
  const headers = await signedHeaders(topic, payload, shop);
  const res = await e.app.fetch(
    new Request(`${BASE}/shopify/webhooks`, { method: 'POST', headers, body: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
  );
  return { status: res.status, webhookId: headers['x-shopify-webhook-id']! };
}

function subscriptionBody(id: string, name: string, status: string) {
  return webhookPayloads.appSubscriptionsUpdate({
    id,
    name,
    status,
    shopId: fake.shop.id,
    createdAt: '2026-06-17T12:00:00Z',
    updatedAt: '2026-06-17T12:05:00Z',
  });
}

const resultOf = async (e: TestEnv, webhookId: string) => (await e.repo.shopifyWebhooks.get(webhookId))?.result;
const planOf = async (e: TestEnv, shop = SHOP) => {
  const s = (await e.repo.getStoreByShop(shop))!;
  return `${s.plan}/${s.billingStatus}`;
};

/** The merchant chooses `plan` on the store's page; returns the subscription Shopify (the fake) created. */
async function choose(e: TestEnv, html: string, plan: string) {
  const started = await e.app.fetch(new Request(links(html)[plan]!));
  expect(started.status).toBe(302);
  return fake.subscriptions[fake.subscriptions.length - 1]!;
}

describe('app_subscriptions/update moves a plan only as Shopify reports it (issue 35, finding 1)', () => {
  it('an old signed ACTIVE body sent again under new webhook ids after a cancellation keeps the store free', async () => {
    const e = await setup('shopify-test');
    const sub = await choose(e, await install(e), 'growth');
    // The approval's exact bytes, as someone who saw them once keeps them.
    const activeBytes = JSON.stringify(fake.approveSubscription(sub.id));
    expect((await deliver(e, 'app_subscriptions/update', activeBytes)).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await planOf(e)).toBe('growth/active');

    const cancelled = await deliver(e, 'app_subscriptions/update', fake.cancelSubscription(sub.id));
    await shopifyWebhooks(e.core).idle();
    expect(await planOf(e)).toBe('free/cancelled');

    // The ACTIVE body sent again under new webhook ids: Shopify says the subscription is no longer active.
    for (let i = 0; i < 3; i++) {
      const replay = await deliver(e, 'app_subscriptions/update', activeBytes);
      expect(replay.status).toBe(200);
      await shopifyWebhooks(e.core).idle();
      expect(await planOf(e)).toBe('free/cancelled');
      expect(await resultOf(e, replay.webhookId)).toMatch(/^no change: Shopify reports no subscription of hookrelay active; plan free/);
    }
    expect(await resultOf(e, cancelled.webhookId)).toContain('Shopify reports no subscription of hookrelay active');
  });

  it('the same signed ACTIVE bytes under the header of another installed shop change nothing there', async () => {
    const e = await setup('shopify-test');
    await addStore(e, { shopDomain: OTHER_SHOP, plan: 'free', platformAccountId: '777000111' });
    await addStore(e, { shopDomain: HAND_SHOP, plan: 'free' });
    const sub = await choose(e, await install(e), 'scale');
    const scaleBytes = JSON.stringify(fake.approveSubscription(sub.id));
    await deliver(e, 'app_subscriptions/update', scaleBytes);
    await shopifyWebhooks(e.core).idle();
    expect(await planOf(e)).toBe('scale/active'); // Shopify does report it ACTIVE while the others are tried
    const queries = fake.shopQueries.length;
    const onOther = await deliver(e, 'app_subscriptions/update', scaleBytes, OTHER_SHOP);
    const onHand = await deliver(e, 'app_subscriptions/update', scaleBytes, HAND_SHOP);
    expect([onOther.status, onHand.status]).toEqual([200, 200]);
    await shopifyWebhooks(e.core).idle();
    expect(await planOf(e, OTHER_SHOP)).toBe('free/active');
    expect(await planOf(e, HAND_SHOP)).toBe('free/active');
    expect(await resultOf(e, onOther.webhookId)).toMatch(/^not acted on: the payload names another shop id/);
    expect(await resultOf(e, onHand.webhookId)).toMatch(/^not acted on: the subscription is not one hookrelay created for store/);
    expect(fake.shopQueries.length).toBe(queries); // neither asked Shopify anything
    expect(e.log.lines.some((l) => l.includes(onOther.webhookId) && l.includes('recorded, not acted on'))).toBe(true);
  });

  it('while Shopify cannot be asked, an approval waits (the delivery fails and is retried) and then applies; a decline of a second choice keeps the first plan; an uninstall ends it', async () => {
    const e = await setup('shopify-test');
    const html = await install(e);
    const starter = await choose(e, html, 'starter');
    const approved = fake.approveSubscription(starter.id);
    fake.setDown(true);
    const r = await deliver(e, 'app_subscriptions/update', approved);
    expect(r.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await e.repo.shopifyWebhooks.get(r.webhookId)).toMatchObject({ processedAt: null, lastError: 'shopify_unconfirmed' });
    expect(await planOf(e)).toBe('free/active');
    fake.setDown(false);
    e.clock.advance(31_000);
    expect(await processPendingShopifyWebhooks(e.core)).toBe(1);
    expect(await planOf(e)).toBe('starter/active');

    // The merchant picks growth, then declines it: Shopify still bills starter.
    const growth = await choose(e, html, 'growth');
    const declined = await deliver(e, 'app_subscriptions/update', fake.declineSubscription(growth.id));
    await shopifyWebhooks(e.core).idle();
    expect(await resultOf(e, declined.webhookId)).toMatch(/^no change: Shopify reports starter ACTIVE/);
    expect(await planOf(e)).toBe('starter/active');

    // The merchant uninstalls: Shopify cancels the subscription with it, and the store's paid plan ends; the
    // approval's bytes sent again afterwards change nothing.
    const uninstalled = await deliver(e, 'app/uninstalled', fake.uninstall());
    await shopifyWebhooks(e.core).idle();
    expect(await resultOf(e, uninstalled.webhookId)).toContain('plan starter -> free');
    expect(await planOf(e)).toBe('free/cancelled');
    const replay = await deliver(e, 'app_subscriptions/update', approved);
    await shopifyWebhooks(e.core).idle();
    expect(await resultOf(e, replay.webhookId)).toMatch(/^not acted on: store st_\w+ is uninstalled/);
    expect(await planOf(e)).toBe('free/cancelled');
  });

  it('a subscription that could not be recorded is not offered to the merchant (503, no confirmation page)', async () => {
    const e = await setup('shopify-test');
    const html = await install(e);
    const run = runnerOf(e.repo).run.bind(runnerOf(e.repo));
    runnerOf(e.repo).run = async (sql, params) => {
      if (sql.includes('INSERT INTO app_subscriptions')) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
      return run(sql, params);
    };
    const started = await e.app.fetch(new Request(links(html).growth!));
    runnerOf(e.repo).run = run;
    expect(started.status).toBe(503);
    expect(started.headers.get('location')).toBeNull();
    expect(fake.subscriptions.map((s) => s.status)).toEqual(['PENDING']); // left to expire unapproved
    expect(e.log.lines.join('\n')).not.toContain('database is locked');
  });

  it("a body that is not the topic's own is refused (400) and changes nothing", async () => {
    const e = await setup('shopify-test');
    const sub = await choose(e, await install(e), 'growth');
    const approved = fake.approveSubscription(sub.id) as { app_subscription: Record<string, unknown> };
    const cases: unknown[] = [
      { ...approved, shop_domain: SHOP }, // another topic's field
      { app_subscription: { ...approved.app_subscription, admin_graphql_api_id: '1029266950' } }, // not a subscription GID
      { app_subscription: { name: 'hookrelay growth', status: 'ACTIVE' } }, // no id
      webhookPayloads.shopRedact(fake.shop),
    ];
    for (const body of cases) expect((await deliver(e, 'app_subscriptions/update', body)).status).toBe(400);
    await shopifyWebhooks(e.core).idle();
    expect(await planOf(e)).toBe('free/active');
  });
});
