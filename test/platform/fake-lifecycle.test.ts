/**
 * The fake Shopify host (test/fixtures/fake-shopify.ts, startFakeShopifyHost) acts out the app's lifecycle as
 * Shopify does: many shops on one port, each at `/{shop}/…` with its own tokens; an install's code exchange; an
 * uninstall that revokes the shop's tokens before app/uninstalled is sent and schedules shop/redact 48 hours later;
 * every subscribed topic signed (base64 HMAC-SHA256 of the raw body with the app's secret) with Shopify's headers;
 * a delivery not answered 2xx retried 8 times over 4 hours with the same id, body and trigger time. Driven on a
 * manual clock against a loopback receiver that records what arrives, so nothing here waits on time.
 */
import { afterAll, afterEach, describe, expect, it } from 'bun:test';
import { hmacBase64 } from '../../src/lib/crypto.ts';
import { FAKE_WEBHOOK_TOPICS, SHOPIFY_WEBHOOK_RETRY_DELAYS_MS, startFakeShopifyHost, type FakeShopifyHost } from '../fixtures/fake-shopify.ts';

const APP = { clientId: 'lifecycle-client-0001', clientSecret: 'lifecycle-app-secret-canary-77f1', accessTokenTtlSeconds: 3600 };
const A = 'alpine-outfitters.myshopify.com';
const B = 'birch-and-bloom.myshopify.com';
const REDIRECT = 'https://relay.example.com/auth/callback';

let t = Date.parse('2026-11-01T00:00:00Z');
const clock = () => t;

/** What the app's webhook URL received: headers, raw body; answered with the scripted statuses (200 when none left). */
interface Arrival {
  headers: Record<string, string>;
  body: string;
}
const arrivals: Arrival[] = [];
const answers: number[] = [];
/** Run when a delivery arrives, before it is answered (what the app would check then); its results kept in order. */
let onArrival: (() => Promise<unknown>) | null = null;
const seenOnArrival: unknown[] = [];
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => {
      headers[k] = v;
    });
    arrivals.push({ headers, body: await req.text() });
    if (onArrival) seenOnArrival.push(await onArrival());
    const status = answers.shift() ?? 200;
    return status >= 300 && status < 400 ? new Response(null, { status, headers: { Location: '/elsewhere' } }) : new Response('{}', { status });
  },
});
const host: FakeShopifyHost = startFakeShopifyHost({ app: APP, now: clock, webhookUrl: `http://127.0.0.1:${receiver.port}/shopify/webhooks` });
afterEach(() => {
  host.reset();
  arrivals.length = 0;
  answers.length = 0;
  onArrival = null;
  seenOnArrival.length = 0;
});
afterAll(async () => {
  await host.stop();
  await receiver.stop(true);
});

/** The merchant approves the install on `shop`'s authorize page; the app exchanges the code for an expiring offline token. */
async function install(shop: string): Promise<{ access_token: string; refresh_token: string }> {
  const q = new URLSearchParams({ client_id: APP.clientId, scope: 'read_orders', redirect_uri: REDIRECT, state: 'st-1' });
  const page = await fetch(`${host.url}/${shop}/admin/oauth/authorize?${q}`, { redirect: 'manual' });
  expect(page.status).toBe(302);
  const back = new URL(page.headers.get('location')!);
  expect(back.origin + back.pathname).toBe(REDIRECT);
  expect(back.searchParams.get('shop')).toBe(shop);
  const res = await fetch(`${host.url}/${shop}/admin/oauth/access_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: APP.clientId, client_secret: APP.clientSecret, code: back.searchParams.get('code'), expiring: 1 }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; refresh_token: string };
}

const graphql = (shop: string, token: string, query: string, variables?: unknown) =>
  fetch(`${host.url}/${shop}/admin/api/2026-10/graphql.json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-shopify-access-token': token },
    body: JSON.stringify({ query, variables }),
  });
const shopDomainWith = async (shop: string, token: string) => {
  const res = await graphql(shop, token, 'query { shop { id myshopifyDomain } }');
  return res.status === 200 ? ((await res.json()) as any).data.shop.myshopifyDomain : res.status;
};

/** Every header Shopify sends with a webhook, checked on one arrival: the signature over the raw bytes with the app's secret. */
function expectSigned(a: Arrival, topic: string, shop: string) {
  expect(a.headers['x-shopify-hmac-sha256']).toBe(hmacBase64(APP.clientSecret, a.body));
  expect(a.headers['x-shopify-topic']).toBe(topic);
  expect(a.headers['x-shopify-shop-domain']).toBe(shop);
  expect(a.headers['x-shopify-webhook-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(a.headers['x-shopify-event-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(a.headers['x-shopify-api-version']).toBe('2026-10');
  expect(Date.parse(a.headers['x-shopify-triggered-at']!)).toBeGreaterThan(0);
  expect(a.headers['content-type']).toBe('application/json');
}

describe('many shops on one fake, routed by shop', () => {
  it('each shop installs at /{shop}/…, answers its own domain, and refuses the other shop’s token', async () => {
    const a = await install(A);
    const b = await install(B);
    expect(await shopDomainWith(A, a.access_token)).toBe(A);
    expect(await shopDomainWith(B, b.access_token)).toBe(B);
    expect(await shopDomainWith(B, a.access_token)).toBe(401);
    expect(await shopDomainWith(A, b.access_token)).toBe(401);
    const shops = Object.fromEntries(host.shops().map((s) => [s.domain, s]));
    expect(shops[A]).toMatchObject({ installed: true, liveTokens: 1 });
    expect(shops[B]).toMatchObject({ installed: true, liveTokens: 1 });
    expect(shops[A]!.id).not.toBe(shops[B]!.id);
    // Unprefixed paths are the default shop, as one fake always was.
    const res = await fetch(`${host.url}/admin/api/2026-10/graphql.json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(400);
  });
});

describe('uninstall', () => {
  it("revokes the shop's tokens before app/uninstalled arrives signed; the other shop is untouched; shop/redact follows 48 h later", async () => {
    const a = await install(A);
    const b = await install(B);
    // The receiver asks Shopify with the shop's token the moment app/uninstalled arrives, as hookrelay does.
    onArrival = () => shopDomainWith(A, a.access_token);
    const res = await fetch(`${host.url}/_fake/uninstall?shop=${A}`, { method: 'POST' });
    expect(res.status).toBe(200);
    const sent = (await res.json()) as any;
    expect(sent.appUninstalled).toMatchObject({ topic: 'app/uninstalled', shop: A, state: 'delivered', attempts: [{ status: 200 }] });
    expect(sent.shopRedact).toMatchObject({ topic: 'shop/redact', shop: A, state: 'scheduled', nextAt: t + 48 * 3600_000 });
    expect(seenOnArrival).toEqual([401]);
    expect(arrivals).toHaveLength(1);
    expectSigned(arrivals[0]!, 'app/uninstalled', A);
    expect(JSON.parse(arrivals[0]!.body)).toMatchObject({ domain: A, myshopify_domain: A });
    // Refresh tokens are revoked too; B goes on.
    const refresh = await fetch(`${host.url}/${A}/admin/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: APP.clientId, client_secret: APP.clientSecret, grant_type: 'refresh_token', refresh_token: a.refresh_token }),
    });
    expect(refresh.status).toBe(400);
    expect(((await refresh.json()) as any).error).toBe('invalid_grant');
    expect(await shopDomainWith(B, b.access_token)).toBe(B);
    expect(host.shops().find((s) => s.domain === A)).toMatchObject({ installed: false, uninstalledAt: t, liveTokens: 0 });
    // A second uninstall of what is not installed is refused.
    expect((await fetch(`${host.url}/_fake/uninstall?shop=${A}`, { method: 'POST' })).status).toBe(409);

    t += 48 * 3600_000 - 1;
    expect(await host.deliverDue()).toBe(0);
    t += 1;
    expect(await host.deliverDue()).toBe(1);
    expect(arrivals).toHaveLength(2);
    expectSigned(arrivals[1]!, 'shop/redact', A);
    expect(JSON.parse(arrivals[1]!.body)).toEqual({ shop_id: host.shop(A).shop.id, shop_domain: A });
    expect(await host.deliverDue()).toBe(0);
  });

  it('shop/redact asked for early is sent once, not again when its 48 hours come', async () => {
    await install(A);
    await host.uninstall(A);
    const early = await fetch(`${host.url}/_fake/webhook?shop=${A}&topic=shop/redact`, { method: 'POST' });
    expect(((await early.json()) as any).webhook).toMatchObject({ topic: 'shop/redact', state: 'delivered' });
    t += 48 * 3600_000;
    expect(await host.deliverDue()).toBe(0);
    expect(arrivals.map((a) => a.headers['x-shopify-topic'])).toEqual(['app/uninstalled', 'shop/redact']);
    // A reinstall is a new install: its tokens work again.
    const again = await install(A);
    expect(await shopDomainWith(A, again.access_token)).toBe(A);
  });
});

describe('signed webhooks for every topic hookrelay subscribes to', () => {
  it('sends each documented payload for the shop, signed, with every header', async () => {
    const a = await install(A);
    const made = await graphql(
      A,
      a.access_token,
      'mutation s($name: String!, $returnUrl: URL!, $lineItems: [AppSubscriptionLineItemInput!]!) { appSubscriptionCreate(name: $name, returnUrl: $returnUrl, lineItems: $lineItems) { appSubscription { id } } }',
      {
        name: 'growth',
        returnUrl: 'https://relay.example.com/app',
        lineItems: [{ plan: { appRecurringPricingDetails: { price: { amount: 79, currencyCode: 'USD' }, interval: 'EVERY_30_DAYS' } } }],
      },
    );
    expect(made.status).toBe(200);
    const subId = ((await made.json()) as any).data.appSubscriptionCreate.appSubscription.id;
    for (const topic of FAKE_WEBHOOK_TOPICS) {
      const res = await fetch(`${host.url}/_fake/webhook?shop=${A}&topic=${topic}&customer=42&orders=7,8`, { method: 'POST' });
      expect(res.status).toBe(200);
    }
    expect(arrivals.map((a) => a.headers['x-shopify-topic'])).toEqual([...FAKE_WEBHOOK_TOPICS]);
    for (const [i, topic] of FAKE_WEBHOOK_TOPICS.entries()) expectSigned(arrivals[i]!, topic, A);
    const body = (topic: string) => JSON.parse(arrivals.find((a) => a.headers['x-shopify-topic'] === topic)!.body);
    const shopId = host.shop(A).shop.id;
    expect(body('app_subscriptions/update').app_subscription).toMatchObject({
      admin_graphql_api_id: subId,
      name: 'growth',
      status: 'PENDING',
      admin_graphql_api_shop_id: `gid://shopify/Shop/${shopId}`,
      currency: 'USD',
      price: '79.00',
      interval: 'every_30_days',
    });
    expect(body('customers/redact')).toMatchObject({ shop_id: shopId, shop_domain: A, customer: { id: 42 }, orders_to_redact: [7, 8] });
    expect(body('customers/data_request')).toMatchObject({
      shop_id: shopId,
      shop_domain: A,
      customer: { id: 42 },
      orders_requested: [7, 8],
      data_request: { id: expect.any(Number) },
    });
    // Each delivery is its own: distinct webhook and event ids.
    expect(new Set(arrivals.map((a) => a.headers['x-shopify-webhook-id'])).size).toBe(FAKE_WEBHOOK_TOPICS.length);
  });

  it('refuses what it cannot send: an unknown topic, a bad shop, a subscription report with no subscription', async () => {
    const post = (q: string) => fetch(`${host.url}/_fake/webhook?${q}`, { method: 'POST' });
    expect((await post(`shop=${A}&topic=orders/create`)).status).toBe(400);
    expect((await post('shop=not-a-shop&topic=shop/redact')).status).toBe(400);
    expect((await post(`shop=${B}&topic=app_subscriptions/update`)).status).toBe(409);
    expect((await post(`shop=${A}&topic=customers/redact&customer=x`)).status).toBe(400);
    expect((await fetch(`${host.url}/_fake/nothing`, { method: 'POST' })).status).toBe(404);
    expect(arrivals).toHaveLength(0);
  });
});

describe('what an outsider holding a delivered body can send', () => {
  it('resend: the same bytes with their valid signature, under a new webhook id, another topic or another shop', async () => {
    const w = await host.sendWebhook(A, 'customers/data_request', { customer: 9 });
    const res = await host.resend(w, { topic: 'customers/redact', shop: B });
    expect(res.status).toBe(200);
    const [first, again] = arrivals;
    expect(again!.body).toBe(first!.body);
    expect(again!.headers['x-shopify-hmac-sha256']).toBe(first!.headers['x-shopify-hmac-sha256']!);
    expect(again!.headers['x-shopify-topic']).toBe('customers/redact');
    expect(again!.headers['x-shopify-shop-domain']).toBe(B);
    expect(again!.headers['x-shopify-webhook-id']).not.toBe(first!.headers['x-shopify-webhook-id']!);
    expect(again!.headers['x-shopify-event-id']).not.toBe(first!.headers['x-shopify-event-id']!);
    // Not a delivery of Shopify's: the host's record is unchanged.
    expect(host.webhooks).toHaveLength(1);
    expect(w.attempts).toHaveLength(1);
  });
});

describe("Shopify's retries", () => {
  it('a delivery not answered 2xx (5xx, a redirect) is retried on schedule with the same id, body and trigger time, until a 2xx', async () => {
    answers.push(500, 302, 503);
    const w = await host.sendWebhook(A, 'customers/data_request');
    expect(w).toMatchObject({ state: 'retrying', nextAt: t + SHOPIFY_WEBHOOK_RETRY_DELAYS_MS[0]! });
    for (const delay of SHOPIFY_WEBHOOK_RETRY_DELAYS_MS.slice(0, 3)) {
      t += delay - 1;
      expect(await host.deliverDue()).toBe(0);
      t += 1;
      expect(await host.deliverDue()).toBe(1);
    }
    expect(w.state).toBe('delivered');
    expect(w.attempts.map((a) => a.status)).toEqual([500, 302, 503, 200]);
    expect(arrivals).toHaveLength(4);
    for (const a of arrivals) {
      expectSigned(a, 'customers/data_request', A);
      expect(a.body).toBe(arrivals[0]!.body);
      for (const h of ['x-shopify-webhook-id', 'x-shopify-event-id', 'x-shopify-triggered-at']) expect(a.headers[h]).toBe(arrivals[0]!.headers[h]!);
    }
  });

  it('gives up after 8 retries over 4 hours', async () => {
    answers.push(...Array.from({ length: 9 }, () => 500));
    const w = await host.sendWebhook(A, 'shop/redact');
    const first = t;
    while (w.state === 'retrying') {
      t = w.nextAt!;
      await host.deliverDue();
    }
    expect(w.state).toBe('failed');
    expect(w.attempts).toHaveLength(9);
    expect(t - first).toBe(4 * 3600_000);
    t += 86400_000;
    expect(await host.deliverDue()).toBe(0);
  });
});
