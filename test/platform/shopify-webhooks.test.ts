/**
 * Shopify's webhooks at POST /shopify/webhooks, on the fake Shopify: what is not signed with the app's secret is
 * refused (401) and never recorded; a delivery is recorded once by its webhook id and processed once, after the 200;
 * app/uninstalled pauses the store with its events kept and a reinstall drains them; shop/redact erases that store's
 * bodies and free text (another store untouched); customers/redact erases that customer's bodies only;
 * customers/data_request is recorded for the operator without an email, a phone or a body; a crash or an error
 * between recording and processing is made good later, once. Deliveries are signed here with openssl-independent
 * hmacBase64 over the exact bytes, or sent by the fake as Shopify sends them.
 */
import { afterEach, describe, expect, it } from 'bun:test';
import { hmacBase64 } from '../../src/lib/crypto.ts';
import { CUSTOMER_DATA_REQUEST, processPendingShopifyWebhooks, shopifyWebhooks } from '../../src/platform/shopify/webhook-handler.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { fakeShopifyForFile, webhookPayloads } from '../fixtures/fake-shopify.ts';
import { dumpDatabase } from '../security/dump.ts';
import { addGrant, addStore, BASE, call, count, createEndpoint, createTestEnv, row, rows, sendHook, type TestEnv } from '../helpers.ts';

const CLIENT = { clientId: 'webhooks-app-client-0001', clientSecret: 'webhooks-app-secret-canary-5e21' };
const SHOP = 'merchant-two.myshopify.com';
const OTHER_SHOP = 'bystander.myshopify.com';
/** What Shopify's compliance payloads carry about the customer: never to be found in the database or the log. */
const EMAIL = 'customer-canary-5531@example.com';
const PHONE = '+15550006671';
const CUSTOMER = 207119551;

let env: TestEnv | null = null;
const fake = fakeShopifyForFile({ app: { ...CLIENT, accessTokenTtlSeconds: 3600 }, shop: { domain: SHOP }, now: () => (env ? env.clock.now() : Date.now()) });
const shopInfo = () => fake.shop;

let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(async () => {
  if (env) await shopifyWebhooks(env.core).idle();
  await server?.stop(true);
  server = null;
});

async function setup(vars: Record<string, string> = { HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT.clientId, HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT.clientSecret }) {
  env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => vars[n] });
  return { env, worker: new HandoffWorker(env.core) };
}

/** The merchant's browser: /auth/install, Shopify's authorize page (the fake approves), back to /auth/callback. */
async function install(e: TestEnv): Promise<void> {
  const begin = await e.app.fetch(new Request(`${BASE}/auth/install?shop=${SHOP}`));
  const cookie = begin.headers.get('set-cookie')!.split(';')[0]!;
  const authorize = await fetch(begin.headers.get('location')!, { redirect: 'manual' });
  const back = new URL(authorize.headers.get('location')!);
  const landed = await e.app.fetch(new Request(back.toString(), { headers: { cookie } }));
  expect(landed.status).toBe(200);
}

/** The app on a loopback port, for the fake's deliverWebhook. */
function listen(e: TestEnv): string {
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => e.app.fetch(req) });
  return `http://127.0.0.1:${server.port}/shopify/webhooks`;
}

interface Delivery {
  topic: string;
  payload: unknown;
  webhookId?: string;
  shop?: string;
  /** Signs with this instead of the app's secret. */
  secret?: string;
  /** Sends these headers instead of the signature computed (null: none). */
  signature?: string | null;
  headers?: Record<string, string | null>;
}

/** One delivery in process, signed as Shopify signs: base64 HMAC-SHA256 of the exact bytes with the client secret. */
async function deliver(e: TestEnv, d: Delivery) {
  const body = typeof d.payload === 'string' ? d.payload : JSON.stringify(d.payload);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-shopify-topic': d.topic,
    'x-shopify-shop-domain': d.shop ?? SHOP,
    'x-shopify-webhook-id': d.webhookId ?? crypto.randomUUID(),
    'x-shopify-event-id': crypto.randomUUID(),
    'x-shopify-api-version': '2026-10',
    'x-shopify-triggered-at': new Date(e.clock.now()).toISOString(),
  };
  const signature = d.signature === undefined ? hmacBase64(d.secret ?? CLIENT.clientSecret, body) : d.signature;
  if (signature !== null) headers['x-shopify-hmac-sha256'] = signature;
  for (const [k, v] of Object.entries(d.headers ?? {})) {
    if (v === null) delete headers[k];
    else headers[k] = v;
  }
  const res = await e.app.fetch(new Request(`${BASE}/shopify/webhooks`, { method: 'POST', headers, body }));
  return {
    status: res.status,
    json: (await res.json()) as { status?: string; code?: string; message?: string },
    webhookId: headers['x-shopify-webhook-id'] ?? '',
  };
}

const customer = { id: CUSTOMER, email: EMAIL, phone: PHONE };
const dataRequest = (orders: number[] = []) => webhookPayloads.customersDataRequest(shopInfo(), customer, orders);

/** An installed store with endpoints for customers, orders and products, a grant, and a few events with private bodies. */
async function installedWithEvents(e: TestEnv) {
  await install(e);
  const grant = await addGrant(e, 'admin_assistant', { shop: SHOP, ttlMs: 30 * 86400_000 });
  const eps = {
    customer: await createEndpoint(e, grant, { triggerVariant: 'customer', resourceIdPath: 'customer.id' }),
    order: await createEndpoint(e, grant, { triggerVariant: 'order', resourceIdPath: 'order.id' }),
    product: await createEndpoint(e, grant, { triggerVariant: 'product', resourceIdPath: 'product.id' }),
  };
  const send = async (kind: keyof typeof eps, id: number | string, note: string) => {
    const { endpoint, secret } = eps[kind];
    const r = await sendHook(e, endpoint, secret, JSON.stringify({ event_type: `${kind}.flagged`, [kind]: { id }, note }));
    expect(r.status).toBe(202);
    return r.json.eventId as string;
  };
  const events = {
    // The customer as a GID, stored as its numeric id; the same number on a product endpoint is another resource.
    customer: await send('customer', `gid://shopify/Customer/${CUSTOMER}`, 'private-c1'),
    otherCustomer: await send('customer', 5550001, 'private-c2'),
    order: await send('order', 450789469, 'private-o1'),
    otherOrder: await send('order', 450789470, 'private-o2'),
    product: await send('product', CUSTOMER, 'private-p1'),
  };
  const store = (await e.repo.getStoreByShop(SHOP))!;
  return { grant, store, events, send };
}

const bodyOf = async (e: TestEnv, id: string) => {
  const b = await e.repo.getEventBody(id);
  return b ? new TextDecoder().decode(b) : null;
};
const webhookRow = (e: TestEnv, id: string) => e.repo.shopifyWebhooks.get(id);

describe('POST /shopify/webhooks refuses', () => {
  it('what is not signed with the app secret (401), and records nothing of it', async () => {
    const { env: e } = await setup();
    const payload = dataRequest();
    const forged = await deliver(e, { topic: 'customers/data_request', payload, secret: 'not-the-app-secret' });
    expect(forged).toMatchObject({ status: 401, json: { code: 'SVC_AUTH_FAILED' } });
    expect((await deliver(e, { topic: 'customers/data_request', payload, signature: null })).json.code).toBe('SVC_AUTH_HEADER_MISSING');
    expect((await deliver(e, { topic: 'customers/data_request', payload, signature: 'garbage' })).status).toBe(401);
    // A genuine signature over other bytes: the body was changed on the way.
    const tampered = await deliver(e, {
      topic: 'shop/redact',
      payload: JSON.stringify(webhookPayloads.shopRedact(shopInfo())),
      signature: hmacBase64(CLIENT.clientSecret, JSON.stringify(payload)),
    });
    expect(tampered.status).toBe(401);
    expect(await count(e, 'shopify_webhooks')).toBe(0);
    expect(await count(e, 'records')).toBe(0);
    expect(e.log.lines.join('\n')).not.toContain(CLIENT.clientSecret);
  });

  it('everything with 503 while no app secret is configured, and records nothing', async () => {
    const { env: e } = await setup({});
    const r = await deliver(e, { topic: 'shop/redact', payload: webhookPayloads.shopRedact(shopInfo()) });
    expect(r).toMatchObject({ status: 503, json: { code: 'webhooks_not_configured' } });
    expect(await count(e, 'shopify_webhooks')).toBe(0);
    expect(e.log.lines.join('\n')).toContain('HOOKRELAY_SHOPIFY_APP_SECRET');
  });

  it("a body over 64 KiB (413), bad JSON or headers or a payload not its topic's own (400, once signed), other methods (405)", async () => {
    const { env: e } = await setup();
    expect((await deliver(e, { topic: 'shop/redact', payload: JSON.stringify({ pad: 'x'.repeat(70_000) }) })).status).toBe(413);
    expect((await deliver(e, { topic: 'shop/redact', payload: '{not json' })).json).toMatchObject({
      code: 'invalid_input',
      message: 'The body is not valid JSON.',
    });
    expect(
      (await deliver(e, { topic: 'shop/redact', payload: webhookPayloads.shopRedact(shopInfo()), headers: { 'x-shopify-webhook-id': null } })).status,
    ).toBe(400);
    expect((await deliver(e, { topic: 'shop/redact', payload: webhookPayloads.shopRedact(shopInfo()), shop: 'evil.example.com' })).status).toBe(400);
    const malformed = await deliver(e, { topic: 'customers/redact', payload: { shop_domain: SHOP, customer: { id: { nested: true } } } });
    expect(malformed.status).toBe(400);
    expect(malformed.json.message).toContain('customer.id');
    expect(malformed.json.message).not.toContain('nested');
    const get = await e.app.fetch(new Request(`${BASE}/shopify/webhooks`));
    expect(get.status).toBe(405);
    expect(await count(e, 'shopify_webhooks')).toBe(0);
  });
});

describe('POST /shopify/webhooks records, answers, then processes', () => {
  it('a repeat of a webhook id is answered 200 and never processed twice', async () => {
    const { env: e } = await setup();
    await installedWithEvents(e);
    const payload = dataRequest();
    const first = await deliver(e, { topic: 'customers/data_request', payload, webhookId: 'wh-repeat-1' });
    expect(first).toMatchObject({ status: 200, json: { status: 'received' } });
    await shopifyWebhooks(e.core).idle();
    // Shopify retries (or someone replays the captured request): same id, same bytes, same signature.
    for (let i = 0; i < 3; i++)
      expect(await deliver(e, { topic: 'customers/data_request', payload, webhookId: 'wh-repeat-1' })).toMatchObject({
        status: 200,
        json: { status: 'duplicate' },
      });
    await shopifyWebhooks(e.core).idle();
    expect(await count(e, 'records', 'kind = ?', CUSTOMER_DATA_REQUEST)).toBe(1);
    expect(await webhookRow(e, 'wh-repeat-1')).toMatchObject({
      attempts: 1,
      lastError: null,
      payloadSealed: null,
      topic: 'customers/data_request',
      shopDomain: SHOP,
      apiVersion: '2026-10',
    });
    expect((await webhookRow(e, 'wh-repeat-1'))!.processedAt).not.toBeNull();
  });

  it('a topic hookrelay does not handle: 200, recorded as done, logged', async () => {
    const { env: e } = await setup();
    const r = await deliver(e, { topic: 'orders/create', payload: { id: 1, email: EMAIL }, webhookId: 'wh-unknown' });
    expect(r).toMatchObject({ status: 200, json: { status: 'ignored' } });
    expect(await webhookRow(e, 'wh-unknown')).toMatchObject({
      topic: 'orders/create',
      attempts: 0,
      payloadSealed: null,
      result: 'topic not handled by hookrelay',
    });
    expect(e.log.lines.some((l) => l.includes('orders/create') && l.includes('not a topic hookrelay handles'))).toBe(true);
  });

  it('app_subscriptions/update: recorded and processed, changing nothing on a box that does not bill (test/platform/billing.test.ts: one that does)', async () => {
    const { env: e } = await setup();
    await install(e);
    const before = (await e.repo.getStoreByShop(SHOP))!;
    const payload = webhookPayloads.appSubscriptionsUpdate({
      id: 'gid://shopify/AppSubscription/1',
      name: 'starter',
      status: 'ACTIVE',
      shopId: fake.shop.id,
      createdAt: '2026-06-17T12:00:00Z',
      updatedAt: '2026-06-17T12:00:00Z',
    });
    expect((await deliver(e, { topic: 'app_subscriptions/update', payload, webhookId: 'wh-sub' })).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, 'wh-sub'))!.result).toBe('no change');
    expect(await e.repo.getStoreByShop(SHOP)).toEqual(before);
  });
});

describe('app/uninstalled', () => {
  it('pauses the store (events kept queued, none sent, tokens gone); an install again drains the backlog', async () => {
    const { env: e, worker } = await setup();
    const url = listen(e);
    const { grant, store, events } = await installedWithEvents(e);
    await worker.drain();
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(5);
    const sent = fake.requests.length;

    // The merchant uninstalls: Shopify revokes the tokens and sends app/uninstalled.
    const delivered = await fake.deliverWebhook(url, { topic: 'app/uninstalled', payload: fake.uninstall() });
    expect(delivered.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect((await e.repo.getStoreByShop(SHOP))!.uninstalledAt).toBe(e.clock.now());
    expect(
      await row<Record<string, unknown>>(e, 'SELECT token_sealed, refresh_sealed, pause_reason, pause_code FROM platform_links WHERE store_id = ?', store.id),
    ).toEqual({
      token_sealed: null,
      refresh_sealed: null,
      pause_reason: 'uninstalled',
      pause_code: 'SVC_APP_UNINSTALLED',
    });

    // Senders go on sending: every event is kept, queued, and nothing reaches Shopify.
    const { endpoint, secret } = await createEndpoint(e, grant);
    const waiting: string[] = [];
    for (let i = 0; i < 4; i++) waiting.push((await sendHook(e, endpoint, secret, JSON.stringify({ order: { id: 9000 + i } }))).json.eventId);
    for (let t = 0; t < 5; t++) {
      e.clock.advance(60_000);
      await worker.drain();
    }
    expect(fake.requests.length).toBe(sent);
    expect(await count(e, 'events', "store_id = ? AND outcome = 'queued'", store.id)).toBe(4);
    expect(await count(e, 'events', "outcome = 'failed'")).toBe(0);
    const state = (await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data;
    expect(state.handoff).toMatchObject({ state: 'paused', reason: 'uninstalled', code: 'SVC_APP_UNINSTALLED' });
    expect(state.checklist.find((c: { item: string }) => c.item === 'store_installed').done).toBe(false);
    const detail = (await call(e, 'GET', `/agent/v1/events/${waiting[0]}`, { token: grant })).json.data.event;
    expect(detail).toMatchObject({ outcome: 'queued', handoffStoppedAt: 'paused', handoffPause: { reason: 'uninstalled', code: 'SVC_APP_UNINSTALLED' } });
    // The events handed off before are untouched, bodies and all.
    expect(await bodyOf(e, events.customer)).toContain('private-c1');

    // The merchant installs the app again: the pause ends and the backlog drains.
    await install(e);
    await worker.drain();
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(9);
    expect(fake.requests.length).toBe(sent + 4);
    expect((await e.repo.getStoreByShop(SHOP))!.uninstalledAt).toBeNull();
    expect((await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data.handoff.state).toBe('active');
  });

  it('processed late (after a crash) once the app was installed again: the live install is left alone', async () => {
    const { env: e, worker } = await setup();
    await install(e);
    const store = (await e.repo.getStoreByShop(SHOP))!;
    // The uninstall was recorded, then this instance died before processing it.
    const uninstalledAt = e.clock.now() + 1000;
    e.clock.set(uninstalledAt);
    fake.uninstall();
    await e.repo.shopifyWebhooks.record({
      webhookId: 'wh-late',
      topic: 'app/uninstalled',
      shopDomain: SHOP,
      apiVersion: '2026-10',
      eventId: null,
      triggeredAt: uninstalledAt,
      receivedAt: uninstalledAt,
      processedAt: null,
      result: null,
      leaseUntil: uninstalledAt + 300_000,
      payloadSealed: e.core.box.seal(JSON.stringify({ shopId: fake.shop.id })),
    });
    e.clock.advance(60_000);
    await install(e);
    e.clock.advance(300_000);
    expect(await processPendingShopifyWebhooks(e.core)).toBe(1);
    expect((await webhookRow(e, 'wh-late'))!.result).toContain('installed again');
    expect((await e.repo.getStoreByShop(SHOP))!.uninstalledAt).toBeNull();
    expect((await e.repo.links.get(store.id))!.pauseReason).toBeNull();
    const grant = await addGrant(e, 'operator', { shop: SHOP });
    const { endpoint, secret } = await createEndpoint(e, grant);
    await sendHook(e, endpoint, secret, JSON.stringify({ order: { id: 1 } }));
    await worker.drain();
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(1);
  });
});

describe('a signed body is not proof of an uninstall', () => {
  it('a token Shopify still takes means no uninstall happened; while Shopify is down the uninstall waits for its word (the run fails, is tried again, then applies)', async () => {
    const { env: e } = await setup();
    const url = listen(e);
    await install(e);
    const store = (await e.repo.getStoreByShop(SHOP))!;
    // Sent again by someone who kept the body of an uninstall: Shopify still accepts the store's token.
    const replayed = await fake.deliverWebhook(url, { topic: 'app/uninstalled', payload: webhookPayloads.appUninstalled(fake.shop) });
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, replayed.webhookId))!.result).toContain('not applied: Shopify still accepts');
    expect((await e.repo.getStoreByShop(SHOP))!.uninstalledAt).toBeNull();

    // A real uninstall while Shopify does not answer: nothing is guessed; the run fails, is tried again, and applies.
    const payload = fake.uninstall();
    fake.setDown(true);
    const r = await fake.deliverWebhook(url, { topic: 'app/uninstalled', payload });
    expect(r.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await webhookRow(e, r.webhookId)).toMatchObject({ processedAt: null, lastError: 'shopify_unconfirmed' });
    expect((await e.repo.getStoreByShop(SHOP))!.uninstalledAt).toBeNull();
    fake.setDown(false);
    e.clock.advance(31_000);
    expect(await processPendingShopifyWebhooks(e.core)).toBe(1);
    expect((await webhookRow(e, r.webhookId))!.result).toContain('marked uninstalled');
    expect((await e.repo.getStoreByShop(SHOP))!.uninstalledAt).not.toBeNull();
    expect((await e.repo.links.get(store.id))!.pauseReason).toBe('uninstalled');
  });
});

describe('shop/redact', () => {
  it("erases that store's bodies and free text (rows and counts kept, tokens cleared), another store untouched", async () => {
    const { env: e } = await setup();
    const url = listen(e);
    const { grant, store, events } = await installedWithEvents(e);
    await call(e, 'POST', '/agent/v1/support-request-intents', {
      token: grant,
      headers: { 'Idempotency-Key': 'sup-1' },
      body: { mode: 'submit', consent: true, input: { category: 'delivery', urgency: 'low', summary: 'private-support-text from Jane' } },
    });
    // A second store on this box, with its own events and support request.
    const other = await addStore(e, { shopDomain: OTHER_SHOP });
    const otherGrant = await addGrant(e, 'admin_assistant', { shop: OTHER_SHOP, ttlMs: 30 * 86400_000 });
    const otherEp = await createEndpoint(e, otherGrant);
    const otherEvent = (await sendHook(e, otherEp.endpoint, otherEp.secret, JSON.stringify({ order: { id: 77 }, note: 'private-B' }))).json.eventId as string;
    await call(e, 'POST', '/agent/v1/support-request-intents', {
      token: otherGrant,
      headers: { 'Idempotency-Key': 'sup-2' },
      body: { mode: 'submit', consent: true, input: { category: 'delivery', urgency: 'low', summary: 'private-support-B' } },
    });
    // Notes of Flow's Confirm hookrelay event step: free text the merchant's workflow wrote.
    const note = (storeId: string, eventId: string, text: string) =>
      e.repo.insertConfirmation({ actionRunId: `run-${storeId}`, storeId, eventId, endpointId: 'ep_x', outcome: 'ok', note: text, confirmedAt: e.clock.now() });
    await note(store.id, events.customer, 'private-note-A');
    await note(other.storeId, otherEvent, 'private-note-B');
    const eventsBefore = await count(e, 'events', 'store_id = ?', store.id);
    const bodiesOf = (storeId: string) => count(e, 'event_bodies', 'event_id IN (SELECT id FROM events WHERE store_id = ?)', storeId);
    expect(await bodiesOf(store.id)).toBe(5);

    expect((await fake.deliverWebhook(url, { topic: 'app/uninstalled', payload: fake.uninstall() })).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    e.clock.advance(48 * 3600_000);
    const r = await fake.deliverWebhook(url, { topic: 'shop/redact', payload: webhookPayloads.shopRedact(fake.shop) });
    expect(r.status).toBe(200);
    await shopifyWebhooks(e.core).idle();

    // In the database: no body of that store, every row and count kept.
    expect(await bodiesOf(store.id)).toBe(0);
    expect(await count(e, 'events', 'store_id = ?', store.id)).toBe(eventsBefore);
    expect(await count(e, 'events', "store_id = ? AND body_retention = 'retained'", store.id)).toBe(0);
    expect(await bodyOf(e, events.customer)).toBeNull();
    const listed = (await call(e, 'GET', '/agent/v1/events?limit=100', { token: grant })).json.data.events as { bodyRetention: string; replayable: boolean }[];
    expect(listed).toHaveLength(eventsBefore);
    expect(listed.every((ev) => ev.bodyRetention === 'expired' && !ev.replayable)).toBe(true);
    expect(await count(e, 'records', 'store_id = ?', store.id)).toBe(0);
    expect(await count(e, 'intents', "store_id = ? AND kind = 'support_request'", store.id)).toBe(0);
    expect(await row<Record<string, unknown>>(e, 'SELECT token_sealed, refresh_sealed FROM platform_links WHERE store_id = ?', store.id)).toEqual({
      token_sealed: null,
      refresh_sealed: null,
    });
    const dump = JSON.stringify(await dumpDatabase(e));
    for (const gone of ['private-c1', 'private-o1', 'private-p1', 'private-support-text', 'private-note-A']) expect(dump).not.toContain(gone);
    expect(await count(e, 'confirmations', 'store_id = ? AND note IS NULL', store.id)).toBe(1); // the confirmation stays, its note gone

    // The other store keeps everything.
    expect(await bodiesOf(other.storeId)).toBe(1);
    expect(await bodyOf(e, otherEvent)).toContain('private-B');
    expect(dump).toContain('private-support-B');
    expect(dump).toContain('private-note-B');
    expect((await call(e, 'GET', `/agent/v1/events/${otherEvent}`, { token: otherGrant })).json.data.event.bodyRetention).toBe('retained');
    expect((await webhookRow(e, r.webhookId))!.result).toMatch(
      /5 event bodies erased \(events and counts kept\), 1 records and 1 intents deleted, tokens cleared, 1 confirmation notes erased/,
    );
    expect(e.log.lines.join('\n')).not.toMatch(/private-|webhooks-app-secret/);
  });
});

describe('customers/redact', () => {
  it("erases the bodies of that customer's events only: the customer's id on customer endpoints, the orders named on order endpoints", async () => {
    const { env: e } = await setup();
    const { events } = await installedWithEvents(e);
    const payload = webhookPayloads.customersRedact(shopInfo(), customer, [450789469]);
    const r = await deliver(e, { topic: 'customers/redact', payload });
    expect(r.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await bodyOf(e, events.customer)).toBeNull();
    expect(await bodyOf(e, events.order)).toBeNull();
    expect(await bodyOf(e, events.otherCustomer)).toContain('private-c2');
    expect(await bodyOf(e, events.otherOrder)).toContain('private-o2');
    // The same number on a product endpoint is a product, not this customer.
    expect(await bodyOf(e, events.product)).toContain('private-p1');
    expect(await count(e, 'events')).toBe(5);
    const erased = await rows<{ id: string }>(e, "SELECT id FROM events WHERE body_retention = 'expired' ORDER BY id");
    expect(erased.map((x) => x.id)).toEqual([events.customer, events.order].sort());
    const dump = JSON.stringify(await dumpDatabase(e));
    for (const leak of [EMAIL, PHONE, 'private-c1', 'private-o1']) expect(dump).not.toContain(leak);
    expect((await webhookRow(e, r.webhookId))!.result).toContain('2 events of the customer, 2 bodies erased');
    // Processing it again (a second delivery of the same request) erases nothing more and fails nothing.
    expect((await deliver(e, { topic: 'customers/redact', payload })).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await count(e, 'events', "body_retention = 'expired'")).toBe(2);
  });
});

describe('customers/data_request', () => {
  it('records for the operator what hookrelay holds on the customer: event ids and retention, never an email, a phone or a body', async () => {
    const { env: e } = await setup();
    const { store, events } = await installedWithEvents(e);
    const r = await deliver(e, { topic: 'customers/data_request', payload: dataRequest([450789469]) });
    expect(r.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    const record = (await row<{ id: string; body: string }>(
      e,
      'SELECT id, body FROM records WHERE store_id = ? AND kind = ?',
      store.id,
      CUSTOMER_DATA_REQUEST,
    ))!;
    expect(record.id).toMatch(/^cdr_/);
    const body = JSON.parse(record.body);
    expect(body).toMatchObject({
      dataRequestId: '9999',
      customerId: String(CUSTOMER),
      ordersRequested: ['450789469'],
      eventCount: 2,
      bodiesRetained: 2,
      eventsTruncated: false,
    });
    expect(body.events.map((x: { id: string }) => x.id).sort()).toEqual([events.customer, events.order].sort());
    expect(body.events.map((x: { triggerVariant: string }) => x.triggerVariant).sort()).toEqual(['customer', 'order']);
    expect(body.events.every((x: { bodyRetained: boolean }) => x.bodyRetained)).toBe(true);
    for (const leak of [EMAIL, PHONE, 'private-']) expect(record.body).not.toContain(leak);
    const dump = JSON.stringify(await dumpDatabase(e));
    expect(dump).not.toContain(EMAIL);
    expect(dump).not.toContain(PHONE);
    const logged = e.log.lines.filter((l) => l.includes('customers/data_request'));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain(record.id);
    expect(e.log.lines.join('\n')).not.toMatch(new RegExp(`${EMAIL}|\\${PHONE}|${CUSTOMER}|private-`));
  });
});

describe('between recording and processing', () => {
  it('a run that fails is retried after its time, by the next delivery or the sweep, and processed once', async () => {
    const { env: e } = await setup();
    await installedWithEvents(e);
    const getStoreByShop = e.repo.getStoreByShop.bind(e.repo);
    let failures = 1;
    e.repo.getStoreByShop = async (shop) => {
      if (failures-- > 0) throw Object.assign(new Error(`database is locked near ${EMAIL}`), { code: 'SQLITE_BUSY' });
      return getStoreByShop(shop);
    };
    const r = await deliver(e, { topic: 'customers/data_request', payload: dataRequest(), webhookId: 'wh-fails' });
    expect(r.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await webhookRow(e, 'wh-fails')).toMatchObject({ processedAt: null, lastError: 'SQLITE_BUSY', attempts: 1, leaseUntil: e.clock.now() + 30_000 });
    expect((await webhookRow(e, 'wh-fails'))!.payloadSealed).toMatch(/^v1\./);
    expect(await processPendingShopifyWebhooks(e.core)).toBe(0); // not before its time
    expect(e.log.lines.join('\n')).not.toContain('database is locked');

    // Its time comes; the next delivery (any topic) takes it up.
    e.clock.advance(30_000);
    expect((await deliver(e, { topic: 'shop/update', payload: {} })).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect(await webhookRow(e, 'wh-fails')).toMatchObject({ attempts: 2, lastError: null, payloadSealed: null });
    expect(await processPendingShopifyWebhooks(e.core)).toBe(0);
    expect(await count(e, 'records', 'kind = ?', CUSTOMER_DATA_REQUEST)).toBe(1);
  });

  it('a delivery recorded by an instance that died mid-processing is processed by the sweep once its run lapses, once', async () => {
    const { env: e } = await setup();
    const { events } = await installedWithEvents(e);
    const getStoreByShop = e.repo.getStoreByShop.bind(e.repo);
    let wake!: () => void;
    const stuck = new Promise<void>((resolve) => (wake = resolve));
    let stall = true;
    e.repo.getStoreByShop = async (shop) => {
      if (stall) {
        stall = false;
        await stuck; // the first run hangs, as a process that stopped would
      }
      return getStoreByShop(shop);
    };
    const r = await deliver(e, { topic: 'customers/redact', payload: webhookPayloads.customersRedact(shopInfo(), customer, []), webhookId: 'wh-crash' });
    expect(r.status).toBe(200);
    // Recorded with its run held; what is kept of the payload is sealed: no email, no phone, no customer id in clear.
    const pending = (await webhookRow(e, 'wh-crash'))!;
    expect(pending).toMatchObject({ processedAt: null, attempts: 1 });
    const dump = JSON.stringify(await dumpDatabase(e));
    expect(dump).not.toContain(EMAIL);
    expect(dump).not.toContain(PHONE);
    expect(pending.payloadSealed).toMatch(/^v1\./);
    expect(JSON.stringify(pending)).not.toContain(String(CUSTOMER));
    expect(await processPendingShopifyWebhooks(e.core)).toBe(0); // the run still holds it

    e.clock.advance(5 * 60_000);
    expect(await processPendingShopifyWebhooks(e.core)).toBe(1);
    expect(await bodyOf(e, events.customer)).toBeNull();
    expect(await webhookRow(e, 'wh-crash')).toMatchObject({ attempts: 2, payloadSealed: null });
    const processedAt = (await webhookRow(e, 'wh-crash'))!.processedAt;
    expect(processedAt).toBe(e.clock.now());

    // The stale run wakes up: it changes nothing more and records nothing twice.
    wake();
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, 'wh-crash'))!.processedAt).toBe(processedAt);
    expect(e.log.lines.filter((l) => l.includes('wh-crash') && l.includes('processed:'))).toHaveLength(1);
    expect(await processPendingShopifyWebhooks(e.core)).toBe(0);
  });
});

describe('every webhook is bound to what it claims before it acts (issue 35, finding 2 and replays)', () => {
  it('a customers/data_request body sent again under the customers/redact topic is refused (400) and erases nothing; so is a body missing what its topic requires', async () => {
    const { env: e } = await setup();
    const { events } = await installedWithEvents(e);
    const payload = JSON.stringify(dataRequest([450789469]));
    expect((await deliver(e, { topic: 'customers/data_request', payload })).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    // The topic header is not signed: the same bytes, relabelled.
    const relabelled = await deliver(e, { topic: 'customers/redact', payload });
    expect(relabelled).toMatchObject({ status: 400, json: { code: 'invalid_input' } });
    expect(relabelled.json.message).toContain('orders_to_redact');
    expect(relabelled.json.message).toContain('not fields of this topic: orders_requested, data_request');
    // A customer's erasure relabelled as a whole shop's, and an erasure without its list of orders.
    const redact = webhookPayloads.customersRedact(shopInfo(), customer, [450789469]);
    expect((await deliver(e, { topic: 'shop/redact', payload: redact })).status).toBe(400);
    const { orders_to_redact: _, ...withoutOrders } = redact;
    expect((await deliver(e, { topic: 'customers/redact', payload: withoutOrders })).status).toBe(400);
    expect((await deliver(e, { topic: 'customers/data_request', payload: redact })).status).toBe(400);
    await shopifyWebhooks(e.core).idle();
    expect(await bodyOf(e, events.customer)).toContain('private-c1');
    expect(await bodyOf(e, events.order)).toContain('private-o1');
    expect(await count(e, 'events', "body_retention = 'expired'")).toBe(0);
    expect(await count(e, 'shopify_webhooks')).toBe(1);
    expect(e.log.lines.join('\n')).not.toMatch(new RegExp(`${EMAIL}|private-`));
  });

  it('customers/redact erases once per signed request: the same bytes under new webhook ids, now or after the deliveries are forgotten, erase nothing more', async () => {
    const { env: e } = await setup();
    const { events, send } = await installedWithEvents(e);
    const payload = JSON.stringify(webhookPayloads.customersRedact(shopInfo(), customer, [450789469]));
    const first = await deliver(e, { topic: 'customers/redact', payload });
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, first.webhookId))!.result).toContain('2 bodies erased');
    expect(await bodyOf(e, events.customer)).toBeNull();
    // The customer comes back; someone who kept the erasure's bytes sends them again.
    const later = await send('customer', CUSTOMER, 'private-c3');
    const replay = await deliver(e, { topic: 'customers/redact', payload });
    expect(replay.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, replay.webhookId))!.result).toMatch(/^not acted on: this erasure request \(the same signed body\) was acted on already/);
    expect(await bodyOf(e, later)).toContain('private-c3');
    expect(e.log.lines.some((l) => l.includes(replay.webhookId) && l.includes('recorded, not acted on'))).toBe(true);
    // Forty days on, the deliveries themselves are forgotten; the request is not.
    e.clock.advance(40 * 86400_000);
    await processPendingShopifyWebhooks(e.core);
    expect(await webhookRow(e, first.webhookId)).toBeNull();
    const late = await deliver(e, { topic: 'customers/redact', payload });
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, late.webhookId))!.result).toMatch(/^not acted on: this erasure request/);
    expect(await count(e, 'events', "body_retention = 'expired' AND id = ?", later)).toBe(0);
  });

  it("a body naming another shop than the header's, or another shop id than the store's, is recorded and not acted on", async () => {
    const { env: e } = await setup();
    const { events } = await installedWithEvents(e);
    // Another store on this box holding an event about the same customer id.
    await addStore(e, { shopDomain: OTHER_SHOP });
    const otherGrant = await addGrant(e, 'admin_assistant', { shop: OTHER_SHOP, ttlMs: 30 * 86400_000 });
    const otherEp = await createEndpoint(e, otherGrant, { triggerVariant: 'customer', resourceIdPath: 'customer.id' });
    const otherEvent = (await sendHook(e, otherEp.endpoint, otherEp.secret, JSON.stringify({ customer: { id: CUSTOMER }, note: 'private-B' }))).json
      .eventId as string;
    const redact = webhookPayloads.customersRedact(shopInfo(), customer, []);
    const elsewhere = await deliver(e, { topic: 'customers/redact', payload: redact, shop: OTHER_SHOP });
    // Signed, naming this store's domain but another shop's id (Shopify reported this store's id at install).
    const wrongId = await deliver(e, { topic: 'customers/redact', payload: { ...redact, shop_id: fake.shop.id + 1 } });
    const uninstallElsewhere = await deliver(e, { topic: 'app/uninstalled', payload: webhookPayloads.appUninstalled(fake.shop), shop: OTHER_SHOP });
    for (const r of [elsewhere, wrongId, uninstallElsewhere]) expect(r.status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, elsewhere.webhookId))!.result).toBe('not acted on: the payload names another shop than X-Shopify-Shop-Domain');
    expect((await webhookRow(e, uninstallElsewhere.webhookId))!.result).toBe('not acted on: the payload names another shop than X-Shopify-Shop-Domain');
    expect((await webhookRow(e, wrongId.webhookId))!.result).toMatch(/^not acted on: the payload names another shop id than store st_/);
    expect(await bodyOf(e, otherEvent)).toContain('private-B');
    expect(await bodyOf(e, events.customer)).toContain('private-c1');
    expect((await e.repo.getStoreByShop(OTHER_SHOP))!.uninstalledAt).toBeNull();
    expect(await count(e, 'events', "body_retention = 'expired'")).toBe(0);
  });

  it('app/uninstalled and shop/redact sent again under new webhook ids change nothing beyond the first: the uninstall time stays, a later event keeps its body', async () => {
    const { env: e } = await setup();
    const url = listen(e);
    const { store, events, send } = await installedWithEvents(e);
    const uninstall = JSON.stringify(fake.uninstall());
    expect((await fake.deliverWebhook(url, { topic: 'app/uninstalled', payload: uninstall })).status).toBe(200);
    await shopifyWebhooks(e.core).idle();
    const uninstalledAt = (await e.repo.getStoreByShop(SHOP))!.uninstalledAt;
    expect(uninstalledAt).not.toBeNull();
    e.clock.advance(3600_000);
    const again = await fake.deliverWebhook(url, { topic: 'app/uninstalled', payload: uninstall });
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, again.webhookId))!.result).toBe(`no change: store ${store.id} is marked uninstalled already`);
    expect((await e.repo.getStoreByShop(SHOP))!.uninstalledAt).toBe(uninstalledAt);

    e.clock.advance(48 * 3600_000);
    const redact = JSON.stringify(webhookPayloads.shopRedact(fake.shop));
    const first = await fake.deliverWebhook(url, { topic: 'shop/redact', payload: redact });
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, first.webhookId))!.result).toContain('5 event bodies erased');
    expect(await bodyOf(e, events.customer)).toBeNull();
    // A sender goes on sending while the store is uninstalled; the erasure's bytes come again.
    const later = await send('order', 1, 'private-late');
    const replay = await fake.deliverWebhook(url, { topic: 'shop/redact', payload: redact });
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, replay.webhookId))!.result).toMatch(/^not acted on: store st_\w+ was erased already for this uninstall/);
    expect(await bodyOf(e, later)).toContain('private-late');
  });

  it('customers/data_request sent again under a new webhook id records nothing more', async () => {
    const { env: e } = await setup();
    const { store } = await installedWithEvents(e);
    const payload = JSON.stringify(dataRequest([450789469]));
    await deliver(e, { topic: 'customers/data_request', payload });
    await shopifyWebhooks(e.core).idle();
    const replay = await deliver(e, { topic: 'customers/data_request', payload });
    await shopifyWebhooks(e.core).idle();
    expect((await webhookRow(e, replay.webhookId))!.result).toMatch(/^recorded already as cdr_/);
    expect(await count(e, 'records', 'store_id = ? AND kind = ?', store.id, CUSTOMER_DATA_REQUEST)).toBe(1);
  });
});
