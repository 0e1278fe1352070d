/**
 * Billing through Shopify, on the fake: with billing on, the merchant's own page (the install's landing page, or
 * the app opened from the admin) offers the plans behind links this app signed; following one creates the
 * subscription and sends the merchant to Shopify's confirmation page; an agent grant can neither create nor approve
 * one (403 human_only); app_subscriptions/update moves the plan and the meters follow. With billing off nothing
 * changes from a self-hosted box.
 */
import { describe, expect, it } from 'bun:test';
import { applySubscription } from '../../src/ops/billing.ts';
import { signChoice } from '../../src/platform/shopify/billing.ts';
import { fakeShopifyForFile, webhookPayloads } from '../fixtures/fake-shopify.ts';
import { addGrant, BASE, call, createTestEnv, type TestEnv } from '../helpers.ts';

const CLIENT = { clientId: 'billing-app-client-0001', clientSecret: 'billing-app-secret-canary-77a0' };
const SHOP = 'billed-store.myshopify.com';
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
    await waitFor(async () => (await e.repo.getStoreByShop(SHOP))!.plan === 'growth');
    expect((await e.repo.getStoreByShop(SHOP))!.billingStatus).toBe('active');
    const grant = await addGrant(e, 'observer', { shop: SHOP });
    const usage = (await call(e, 'GET', '/agent/v1/plan-usage', { token: grant })).json.data;
    expect(usage.plan).toBe('growth');
    expect(usage.meters.find((m: { meter: string }) => m.meter === 'accepted_events').limit).toBe(250_000);

    // Cancelled: back to free.
    const cancelled = webhookPayloads.appSubscriptionsUpdate({
      id: sub.id,
      name: 'hookrelay growth',
      status: 'CANCELLED',
      shopId: fake.shop.id,
      createdAt: '2026-06-17T12:00:00Z',
      updatedAt: '2026-06-17T12:05:00Z',
    });
    const r2 = await e.app.fetch(
      new Request(`${BASE}/shopify/webhooks`, {
        method: 'POST',
        headers: await signedHeaders('app_subscriptions/update', cancelled),
        body: JSON.stringify(cancelled),
      }),
    );
    expect(r2.status).toBe(200);
    await waitFor(async () => (await e.repo.getStoreByShop(SHOP))!.plan === 'free');
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
      expect(await applySubscription(e.core, SHOP, { name: `hookrelay ${plan}`, status: 'ACTIVE', id: 'gid://shopify/AppSubscription/9' })).toBeNull();
    }
    expect(fake.subscriptions).toHaveLength(0);
    expect((await e.repo.getStoreByShop(SHOP))!.plan).toBe('free');
  });

  it('shows the plans on the app page Shopify opens (signed launch) and nothing without the signature', async () => {
    const e = await setup('shopify-test');
    await install(e);
    const q = new URLSearchParams({ host: 'YWRtaW4', shop: SHOP, timestamp: String(Math.floor(e.clock.now() / 1000)) });
    const sorted = new URLSearchParams([...q].sort(([a], [b]) => a.localeCompare(b)));
    q.set('hmac', new Bun.CryptoHasher('sha256', CLIENT.clientSecret).update(sorted.toString()).digest('hex'));
    const page = await e.app.fetch(new Request(`${BASE}/app?${q}`));
    expect(page.status).toBe(200);
    expect(Object.keys(links(await page.text()))).toEqual(['starter', 'growth', 'scale']);
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
    await Bun.sleep(50);
    expect((await e.repo.getStoreByShop(SHOP))!.plan).toBe('unlimited');
  });
});

let webhookN = 0;
async function signedHeaders(topic: string, payload: unknown): Promise<Record<string, string>> {
  const body = JSON.stringify(payload);
  return {
    'content-type': 'application/json',
    'x-shopify-topic': topic,
    'x-shopify-hmac-sha256': new Bun.CryptoHasher('sha256', CLIENT.clientSecret).update(body).digest('base64'),
    'x-shopify-shop-domain': SHOP,
    'x-shopify-webhook-id': `billing-test-${++webhookN}-${Math.random().toString(36).slice(2)}`,
    'x-shopify-api-version': '2026-10',
    'x-shopify-triggered-at': new Date(env!.clock.now()).toISOString(),
  };
}

async function waitFor(ok: () => Promise<boolean>, ms = 2000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await ok()) return;
    await Bun.sleep(10);
  }
  expect(await ok()).toBe(true);
}
