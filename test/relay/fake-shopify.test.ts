/**
 * The fake Shopify Admin API itself (test/fixtures/fake-shopify.ts), driven with plain fetch and a manual clock:
 * the client credentials grant, token expiry and refusal, outages, version fall-forward, the cost extension and
 * the enforced leaky bucket, shop queries; installs (the signed authorize redirect, the code exchange for expiring
 * and non-expiring offline tokens, refresh rotation with the previous refresh token kept until its replacement is
 * used, a lost refresh answer, uninstall), signed webhooks and their payloads, currentAppInstallation and
 * appSubscriptionCreate; and that nothing recorded holds a token, a refresh token, a code or a secret.
 */
import { afterAll, afterEach, describe, expect, it } from 'bun:test';
import { createHmac } from 'node:crypto';
import { connect } from 'node:net';
import { join } from 'node:path';
import { callbackSigned } from '../../src/platform/shopify/app.ts';
import { b, startFakeShopify, webhookPayloads, type FakeShopify, type FakeShopifyOptions } from '../fixtures/fake-shopify.ts';

const CLIENT_ID = 'fake-client-id-0001';
const CLIENT_SECRET = 'shpss_FAKE_CLIENT_SECRET_canary_9f8e';
const STATIC_TOKEN = 'shpat_STATIC_canary_token_5555';
const TTL = 3600;
const SCRIPT = join(import.meta.dir, '../../scripts/fake-shopify.ts');
const UNAUTHORIZED = '{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}';
const MUTATION = `mutation flowTriggerReceive($handle: String, $payload: JSON) {
  flowTriggerReceive(handle: $handle, payload: $payload) {
    userErrors { field message }
  }
}`;

const T0 = Date.parse('2026-11-25T00:00:00Z');
let t = T0;
const started: FakeShopify[] = [];
/** Tokens, refresh tokens, codes and secrets seen in this file, to prove none of them lands in a recorded list. */
const secrets = new Set<string>([CLIENT_SECRET, STATIC_TOKEN]);

function start(opts: FakeShopifyOptions = {}): FakeShopify {
  const fake = startFakeShopify({ now: () => t, app: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenTtlSeconds: TTL }, ...opts });
  started.push(fake);
  return fake;
}

afterEach(() => {
  for (const fake of started) {
    for (const v of fake.issuedTokenValues()) secrets.add(v); // refresh tokens too, the dropped ones included
    const recorded = JSON.stringify([
      fake.requests,
      fake.rejected,
      fake.tokenRequests,
      fake.shopQueries,
      fake.authorizeRequests,
      fake.subscriptions,
      fake.webhookDeliveries,
    ]);
    for (const s of secrets) expect(recorded).not.toContain(s);
  }
  t = T0;
});
afterAll(async () => {
  for (const fake of started) await fake.stop();
});

async function issue(fake: FakeShopify, body: Record<string, string> = {}, format: 'json' | 'form' = 'json') {
  const fields = { grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET, ...body };
  const res = await fetch(`${fake.url}/admin/oauth/access_token`, {
    method: 'POST',
    headers: { 'Content-Type': format === 'json' ? 'application/json' : 'application/x-www-form-urlencoded' },
    body: format === 'json' ? JSON.stringify(fields) : new URLSearchParams(fields).toString(),
  });
  const text = await res.text();
  const json = JSON.parse(text) as Record<string, unknown>;
  if (typeof json.access_token === 'string') secrets.add(json.access_token);
  if (typeof json.refresh_token === 'string') secrets.add(json.refresh_token);
  return { status: res.status, text, json };
}

async function token(fake: FakeShopify): Promise<string> {
  const r = await issue(fake);
  expect(r.status).toBe(200);
  return r.json.access_token as string;
}

async function gql(fake: FakeShopify, accessToken: string | null, query: string, variables?: unknown, version = '2026-10') {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (accessToken !== null) headers['X-Shopify-Access-Token'] = accessToken;
  const res = await fetch(`${fake.url}/admin/api/${version}/graphql.json`, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) as any, answered: res.headers.get('x-shopify-api-version') };
}

const trigger = (fake: FakeShopify, accessToken: string | null, version?: string) =>
  gql(fake, accessToken, MUTATION, { handle: 'hookrelay-order', payload: { order_id: 4501 } }, version);
const shopQuery = (fake: FakeShopify, accessToken: string | null, version?: string) => gql(fake, accessToken, 'query { shop { id } }', undefined, version);

const REDIRECT_URI = 'https://relay.example/auth/callback';
const SCOPE = 'read_orders,read_customers';
const INSTALLATION_QUERY = 'query { shop { id name myshopifyDomain } currentAppInstallation { id } }';
const SUBSCRIPTION_MUTATION = `mutation appSubscriptionCreate($name: String!, $lineItems: [AppSubscriptionLineItemInput!]!, $returnUrl: URL!, $test: Boolean) {
  appSubscriptionCreate(name: $name, returnUrl: $returnUrl, lineItems: $lineItems, test: $test) {
    userErrors { field message }
    confirmationUrl
    appSubscription { id status }
  }
}`;

/** GET the authorize page as a browser would, without following the redirect. */
async function authorize(fake: FakeShopify, params: Record<string, string> = {}) {
  const query = new URLSearchParams({ client_id: CLIENT_ID, scope: SCOPE, redirect_uri: REDIRECT_URI, state: 'nonce-1', 'grant_options[]': '', ...params });
  const res = await fetch(`${fake.url}/admin/oauth/authorize?${query.toString().replace(/\+/g, '%20')}`, { redirect: 'manual' });
  const location = res.headers.get('location');
  const url = location ? new URL(location) : null;
  const code = url?.searchParams.get('code');
  if (code) secrets.add(code);
  const text = await res.text();
  return { status: res.status, location, url, code: code ?? null, json: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

/** POSTs to the token endpoint with the app's credentials and the given fields. */
async function tokenRequest(fake: FakeShopify, fields: Record<string, string | number>, format: 'json' | 'form' = 'json') {
  const body = { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, ...fields };
  const res = await fetch(`${fake.url}/admin/oauth/access_token`, {
    method: 'POST',
    headers: { 'Content-Type': format === 'json' ? 'application/json' : 'application/x-www-form-urlencoded' },
    body: format === 'json' ? JSON.stringify(body) : new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, String(v)])).toString(),
  });
  const json = (await res.json()) as Record<string, any>;
  if (typeof json.access_token === 'string') secrets.add(json.access_token);
  if (typeof json.refresh_token === 'string') secrets.add(json.refresh_token);
  return { status: res.status, json };
}

const exchange = (fake: FakeShopify, code: string, extra: Record<string, string | number> = {}, format?: 'json' | 'form') =>
  tokenRequest(fake, { code, ...extra }, format);
const refresh = (fake: FakeShopify, refreshToken: string) => tokenRequest(fake, { grant_type: 'refresh_token', refresh_token: refreshToken });

/** Authorize, then exchange the code for an expiring offline token: the pair. */
async function install(fake: FakeShopify): Promise<{ access: string; refresh: string }> {
  const a = await authorize(fake);
  expect(a.status).toBe(302);
  const r = await exchange(fake, a.code!, { expiring: '1' });
  expect(r.status).toBe(200);
  return { access: r.json.access_token, refresh: r.json.refresh_token };
}

const invalidGrant = {
  error: 'invalid_grant',
  error_description:
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
};

describe('fake Shopify: the client credentials grant', () => {
  it('issues a shpat_ token for a JSON body and for a form body, recording format and client id only', async () => {
    const fake = start({ app: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, scope: 'read_orders' } });
    const json = await issue(fake);
    expect(json.status).toBe(200);
    expect(json.json.access_token).toMatch(/^shpat_[0-9a-f]{32}$/);
    expect(json.json).toEqual({ access_token: json.json.access_token, scope: 'read_orders', expires_in: 86399 });
    expect(json.json).not.toHaveProperty('refresh_token');

    const form = await issue(fake, {}, 'form');
    expect(form.status).toBe(200);
    expect(form.json.access_token).toMatch(/^shpat_[0-9a-f]{32}$/);
    expect(form.json.access_token).not.toBe(json.json.access_token);

    expect(fake.tokenRequests).toEqual([
      { format: 'json', clientId: CLIENT_ID, grantType: 'client_credentials', outcome: 'issued', status: 200, at: t },
      { format: 'form', clientId: CLIENT_ID, grantType: 'client_credentials', outcome: 'issued', status: 200, at: t },
    ]);
    expect(fake.liveTokens()).toBe(2);
    // Both work on GraphQL.
    expect((await shopQuery(fake, json.json.access_token as string)).status).toBe(200);
    expect((await shopQuery(fake, form.json.access_token as string)).status).toBe(200);
  });

  it('answers invalid_client for a wrong id or secret, unsupported_grant_type, and invalid_request for missing fields', async () => {
    const fake = start();
    const wrongSecret = await issue(fake, { client_secret: 'not-the-secret' });
    expect(wrongSecret.status).toBe(400);
    expect(wrongSecret.json).toEqual({
      error: 'invalid_client',
      error_description: 'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
    });
    const wrongId = await issue(fake, { client_id: 'someone-else' }, 'form');
    expect(wrongId.status).toBe(400);
    expect(wrongId.json.error).toBe('invalid_client');

    const grant = await issue(fake, { grant_type: 'password' });
    expect(grant.status).toBe(400);
    expect(grant.json.error).toBe('unsupported_grant_type');
    expect(typeof grant.json.error_description).toBe('string');
    // The authorization code grant is supported now: without a code it is a malformed request.
    const noCode = await issue(fake, { grant_type: 'authorization_code' });
    expect(noCode.status).toBe(400);
    expect(noCode.json.error).toBe('invalid_request');

    const missing = await fetch(`${fake.url}/admin/oauth/access_token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: CLIENT_ID }),
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: string }).error).toBe('invalid_request');

    const other = await fetch(`${fake.url}/admin/oauth/access_token`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'hello' });
    expect(other.status).toBe(400);

    expect(fake.tokenRequests.map((r) => [r.format, r.clientId, r.grantType, r.outcome])).toEqual([
      ['json', CLIENT_ID, 'client_credentials', 'invalid_client'],
      ['form', 'someone-else', 'client_credentials', 'invalid_client'],
      ['json', CLIENT_ID, 'other', 'unsupported_grant_type'],
      ['json', CLIENT_ID, 'authorization_code', 'invalid_request'],
      ['json', CLIENT_ID, 'client_credentials', 'invalid_request'],
      ['other', null, 'other', 'invalid_request'],
    ]);
    expect(fake.liveTokens()).toBe(0);
  });

  it('answers invalid_client when no app is configured', async () => {
    const fake = startFakeShopify({ now: () => t });
    started.push(fake);
    const r = await issue(fake);
    expect(r.status).toBe(400);
    expect(r.json.error).toBe('invalid_client');
  });

  it('a token works until its expires_in runs out on the clock, then is the exact 401', async () => {
    const fake = start();
    const r = await issue(fake);
    expect(r.json.expires_in).toBe(TTL);
    const tok = r.json.access_token as string;
    const issuedAt = t;
    try {
      t = issuedAt + (TTL - 1) * 1000;
      expect(fake.liveTokens()).toBe(1);
      expect((await trigger(fake, tok)).status).toBe(200);
      t = issuedAt + TTL * 1000;
      expect(fake.liveTokens()).toBe(0);
      const dead = await trigger(fake, tok);
      expect(dead.status).toBe(401);
      expect(dead.text).toBe(UNAUTHORIZED);
      expect(fake.requests.map((q) => [q.behaviour, q.at])).toEqual([
        ['ok', issuedAt + (TTL - 1) * 1000],
        ['unauthorized', issuedAt + TTL * 1000],
      ]);
    } finally {
      t = issuedAt;
    }
  });

  it('expireIssuedTokens kills every issued token at once, the static token lives on, and new ones can be issued', async () => {
    const fake = start({ token: STATIC_TOKEN });
    const a = await token(fake);
    const c = await token(fake);
    expect(fake.liveTokens()).toBe(2);
    fake.expireIssuedTokens();
    expect(fake.liveTokens()).toBe(0);
    for (const tok of [a, c]) {
      const r = await trigger(fake, tok);
      expect(r.status).toBe(401);
      expect(r.text).toBe(UNAUTHORIZED);
    }
    expect((await trigger(fake, STATIC_TOKEN)).status).toBe(200);
    expect((await trigger(fake, await token(fake))).status).toBe(200);
  });

  it('failTokenRequests answers invalid_client or the given status until set back to null', async () => {
    const fake = start();
    fake.failTokenRequests('invalid_client');
    const refused = await issue(fake);
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe('invalid_client');

    fake.failTokenRequests({ status: 503 });
    const unavailable = await issue(fake);
    expect(unavailable.status).toBe(503);
    expect(unavailable.json).toEqual({ errors: 'Service Unavailable' });

    fake.failTokenRequests(null);
    expect((await issue(fake)).status).toBe(200);
    expect(fake.tokenRequests.map((r) => [r.outcome, r.status])).toEqual([
      ['invalid_client', 400],
      ['status', 503],
      ['issued', 200],
    ]);
    expect(fake.liveTokens()).toBe(1);
  });
});

describe('fake Shopify: GraphQL authentication', () => {
  it('a missing, unknown or non-issued token is the exact 401 and does not consume the script', async () => {
    const fake = start();
    fake.script(b.userErrors({ field: ['payload'], message: 'scripted' }));
    for (const sent of [null, '', 'shpat_00000000000000000000000000000000']) {
      const r = await trigger(fake, sent);
      expect(r.status).toBe(401);
      expect(r.text).toBe(UNAUTHORIZED);
      expect(r.answered).toBe('2026-10');
    }
    const ok = await trigger(fake, await token(fake));
    expect(ok.status).toBe(200);
    expect(ok.json.data.flowTriggerReceive.userErrors).toEqual([{ field: ['payload'], message: 'scripted' }]);
    expect(fake.requests.map((r) => [r.tokenPresent, r.behaviour])).toEqual([
      [false, 'unauthorized'],
      [false, 'unauthorized'],
      [true, 'unauthorized'],
      [true, 'userErrors'],
    ]);
  });

  it("keeps today's behaviour without token or app: any non-empty token is accepted", async () => {
    const fake = startFakeShopify({ now: () => t });
    started.push(fake);
    expect((await trigger(fake, 'anything')).status).toBe(200);
    expect((await trigger(fake, null)).status).toBe(401);
  });

  it('refuseAllTokens answers 401 to every GraphQL call while on, and token requests still succeed', async () => {
    const fake = start({ token: STATIC_TOKEN });
    const tok = await token(fake);
    fake.script(b.status(500));
    fake.refuseAllTokens(true);
    for (const sent of [tok, STATIC_TOKEN]) {
      const r = await trigger(fake, sent);
      expect(r.status).toBe(401);
      expect(r.text).toBe(UNAUTHORIZED);
    }
    expect((await shopQuery(fake, tok)).status).toBe(401);
    const again = await issue(fake);
    expect(again.status).toBe(200);
    fake.refuseAllTokens(false);
    expect((await trigger(fake, tok)).status).toBe(500); // the scripted 500 was still queued
    expect((await trigger(fake, again.json.access_token as string)).status).toBe(200);
    expect(fake.shopQueries.map((q) => q.behaviour)).toEqual(['unauthorized']);
  });
});

describe('fake Shopify: outage', () => {
  it('setDown answers 503 to GraphQL and the token endpoint, recording down, without consuming the script', async () => {
    const fake = start();
    const tok = await token(fake);
    fake.script(b.userErrors({ field: null, message: 'kept' }));
    fake.setDown(true);
    const m = await trigger(fake, tok);
    expect(m.status).toBe(503);
    expect(m.json).toEqual({ errors: 'Service Unavailable' });
    const s = await shopQuery(fake, tok);
    expect(s.status).toBe(503);
    const tr = await issue(fake);
    expect(tr.status).toBe(503);
    expect(tr.json).toEqual({ errors: 'Service Unavailable' });

    fake.setDown(false);
    const back = await trigger(fake, tok);
    expect(back.json.data.flowTriggerReceive.userErrors).toEqual([{ field: null, message: 'kept' }]);
    expect(fake.requests.map((r) => r.behaviour)).toEqual(['down', 'userErrors']);
    expect(fake.shopQueries.map((r) => r.behaviour)).toEqual(['down']);
    expect(fake.tokenRequests.map((r) => r.outcome)).toEqual(['issued', 'down']);
  });
});

describe('fake Shopify: versions and cost', () => {
  it('names the answering version: a supported one as itself, an old one falls forward to the oldest supported, unstable as itself', async () => {
    const fake = start();
    const tok = await token(fake);
    expect((await trigger(fake, tok, '2025-10')).answered).toBe('2026-01');
    expect((await trigger(fake, tok, '2026-10')).answered).toBe('2026-10');
    expect((await shopQuery(fake, tok, '2026-04')).answered).toBe('2026-04');
    expect((await shopQuery(fake, tok, 'unstable')).answered).toBe('unstable');
    expect((await trigger(fake, null, '2024-01')).answered).toBe('2026-01'); // a 401 names it too
    expect(fake.requests.map((r) => [r.version, r.answeredVersion])).toEqual([
      ['2025-10', '2026-01'],
      ['2026-10', '2026-10'],
      ['2024-01', '2026-01'],
    ]);
    expect(fake.shopQueries.map((r) => [r.version, r.answeredVersion])).toEqual([
      ['2026-04', '2026-04'],
      ['unstable', 'unstable'],
    ]);
  });

  it('honours supportedVersions', async () => {
    const fake = start({ supportedVersions: ['2026-07', '2026-10', '2027-01'] });
    const tok = await token(fake);
    expect((await trigger(fake, tok, '2026-04')).answered).toBe('2026-07');
    expect((await trigger(fake, tok, '2027-01')).answered).toBe('2027-01');
  });

  it('carries extensions.cost on every 200, reporting an unenforced bucket too large to empty, that never throttles', async () => {
    const fake = start();
    const tok = await token(fake);
    const m = await trigger(fake, tok);
    expect(m.json.extensions.cost).toEqual({
      requestedQueryCost: 10,
      actualQueryCost: 10,
      throttleStatus: { maximumAvailable: 10_000_000, currentlyAvailable: 10_000_000, restoreRate: 10_000_000 },
    });
    const s = await shopQuery(fake, tok);
    expect(s.json.extensions.cost).toEqual({
      requestedQueryCost: 1,
      actualQueryCost: 1,
      throttleStatus: { maximumAvailable: 10_000_000, currentlyAvailable: 10_000_000, restoreRate: 10_000_000 },
    });
    const many = await Promise.all(Array.from({ length: 300 }, () => trigger(fake, tok)));
    expect(many.every((r) => r.status === 200 && !r.json.errors)).toBe(true);
    expect(fake.bucketState()).toEqual({ maximumAvailable: 10_000_000, currentlyAvailable: 10_000_000, restoreRate: 10_000_000 });
  });

  it('enforces the bucket: max 30, restore 10/s, cost 10: three pass, the fourth is THROTTLED and runs nothing, one more passes a second later', async () => {
    const fake = start({ bucket: { maximumAvailable: 30, restoreRate: 10 } });
    const tok = await token(fake);
    fake.script(b.ok(), b.ok(), b.ok(), b.userErrors({ field: null, message: 'fifth' }));
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await trigger(fake, tok);
      expect(r.status).toBe(200);
      expect(r.json.errors).toBeUndefined();
      seen.push(r.json.extensions.cost.throttleStatus.currentlyAvailable);
    }
    expect(seen).toEqual([20, 10, 0]);

    const throttled = await trigger(fake, tok);
    expect(throttled.status).toBe(200);
    expect(throttled.json).toEqual({
      errors: [{ message: 'Throttled', extensions: { code: 'THROTTLED', documentation: 'https://shopify.dev/api/usage/rate-limits' } }],
      extensions: { cost: { requestedQueryCost: 10, actualQueryCost: null, throttleStatus: { maximumAvailable: 30, currentlyAvailable: 0, restoreRate: 10 } } },
    });
    expect(fake.bucketState()).toEqual({ maximumAvailable: 30, currentlyAvailable: 0, restoreRate: 10 });

    const before = t;
    try {
      t += 500;
      expect(fake.bucketState().currentlyAvailable).toBe(5);
      expect((await trigger(fake, tok)).json.errors[0].extensions.code).toBe('THROTTLED');
      t += 500;
      expect(fake.bucketState().currentlyAvailable).toBe(10);
      const fifth = await trigger(fake, tok);
      // The throttled calls did not consume the script: the fourth scripted behaviour answers this one.
      expect(fifth.json.data.flowTriggerReceive.userErrors).toEqual([{ field: null, message: 'fifth' }]);
      expect(fifth.json.extensions.cost.throttleStatus.currentlyAvailable).toBe(0);
      expect(fake.requests.map((r) => r.behaviour)).toEqual(['ok', 'ok', 'ok', 'throttled', 'throttled', 'userErrors']);

      // A shop query costs 1; the bucket refills to its maximum and no further.
      t += 60_000;
      expect(fake.bucketState().currentlyAvailable).toBe(30);
      expect((await shopQuery(fake, tok)).json.extensions.cost.throttleStatus.currentlyAvailable).toBe(29);
    } finally {
      t = before;
    }
  });

  it('a 401 costs nothing, and reset refills the bucket', async () => {
    const fake = start({ bucket: { maximumAvailable: 20, restoreRate: 1 } });
    const tok = await token(fake);
    await trigger(fake, null);
    expect(fake.bucketState().currentlyAvailable).toBe(20);
    await trigger(fake, tok);
    await trigger(fake, tok);
    expect(fake.bucketState().currentlyAvailable).toBe(0);
    fake.reset();
    expect(fake.bucketState().currentlyAvailable).toBe(20);
  });

  it('a scripted throttle (b.throttled) still answers the THROTTLED shape and is not paid for', async () => {
    const fake = start({ bucket: { maximumAvailable: 100, restoreRate: 10 } });
    const tok = await token(fake);
    fake.script(b.throttled());
    const r = await trigger(fake, tok);
    expect(r.json.errors[0].extensions.code).toBe('THROTTLED');
    expect(r.json.extensions.cost.actualQueryCost).toBeNull();
    expect(fake.bucketState().currentlyAvailable).toBe(100);
    expect(fake.requests.map((q) => q.behaviour)).toEqual(['throttled']);
  });
});

describe('fake Shopify: shop query', () => {
  it('answers id, name and myshopifyDomain for a query reading shop, recorded apart from flowTriggerReceive', async () => {
    const fake = start({ shop: { id: 77, domain: 'canary-shop.myshopify.com', name: 'Canary Shop' } });
    const tok = await token(fake);
    const expected = { shop: { id: 'gid://shopify/Shop/77', name: 'Canary Shop', myshopifyDomain: 'canary-shop.myshopify.com' } };
    const a = await gql(fake, tok, 'query { shop { id } }');
    expect(a.status).toBe(200);
    expect(a.json.data).toEqual(expected);
    const c = await gql(fake, tok, '{ shop { id name myshopifyDomain } }');
    expect(c.json.data).toEqual(expected);
    const d = await gql(fake, tok, 'query ShopInfo {\n  shop {\n    id\n  }\n}');
    expect(d.json.data).toEqual(expected);
    const unauth = await gql(fake, null, 'query { shop { id } }');
    expect(unauth.status).toBe(401);
    expect(unauth.text).toBe(UNAUTHORIZED);

    expect(fake.requests).toEqual([]);
    const selects: ('shop' | 'currentAppInstallation')[] = ['shop'];
    expect(fake.shopQueries).toEqual([
      { tokenPresent: true, version: '2026-10', answeredVersion: '2026-10', behaviour: 'ok', at: t, selects },
      { tokenPresent: true, version: '2026-10', answeredVersion: '2026-10', behaviour: 'ok', at: t, selects },
      { tokenPresent: true, version: '2026-10', answeredVersion: '2026-10', behaviour: 'ok', at: t, selects },
      { tokenPresent: false, version: '2026-10', answeredVersion: '2026-10', behaviour: 'unauthorized', at: t, selects },
    ]);
  });

  it('has sensible defaults, and anything else is still a 400 in rejected', async () => {
    const fake = start();
    const tok = await token(fake);
    const s = await shopQuery(fake, tok);
    expect(s.json.data.shop.id).toMatch(/^gid:\/\/shopify\/Shop\/\d+$/);
    expect(s.json.data.shop.myshopifyDomain).toMatch(/\.myshopify\.com$/);
    expect(typeof s.json.data.shop.name).toBe('string');

    const other = await gql(fake, tok, 'query { orders(first: 1) { nodes { id } } }');
    expect(other.status).toBe(400);
    const mutation = await gql(fake, tok, 'mutation { shopUpdate { shop { id } } }');
    expect(mutation.status).toBe(400);
    expect(fake.rejected).toHaveLength(2);
    expect(fake.requests).toHaveLength(0);
    expect(fake.shopQueries).toHaveLength(1);
  });
});

describe('fake Shopify: reset', () => {
  it('clears lists, queue and switches, refills the bucket, and keeps issued tokens', async () => {
    const fake = start({ bucket: { maximumAvailable: 10, restoreRate: 1 } });
    const tok = await token(fake);
    await trigger(fake, tok);
    await shopQuery(fake, tok);
    await gql(fake, tok, 'query { nope }');
    fake.script(b.status(500));
    fake.refuseAllTokens(true);
    fake.setDown(true);
    fake.failTokenRequests('invalid_client');

    fake.reset();
    expect([fake.requests, fake.rejected, fake.tokenRequests, fake.shopQueries]).toEqual([[], [], [], []]);
    expect(fake.bucketState().currentlyAvailable).toBe(10);
    expect(fake.liveTokens()).toBe(1);
    expect((await trigger(fake, tok)).status).toBe(200); // not refused, not down, no scripted 500 left
    expect((await issue(fake)).status).toBe(200);
  });
});

describe('fake Shopify: install (authorize)', () => {
  it('auto-approves the app: 302 to redirect_uri with code, hmac, host, shop, state, timestamp, signed as Shopify signs them', async () => {
    const fake = start();
    const state = 'nonce 1/é+x=y&z'; // a space, a slash, a non-ASCII letter and reserved characters: the encoding matters
    const a = await authorize(fake, { state });
    expect(a.status).toBe(302);
    const url = a.url!;
    expect(`${url.origin}${url.pathname}`).toBe(REDIRECT_URI);
    expect([...url.searchParams.keys()]).toEqual(['code', 'hmac', 'host', 'shop', 'state', 'timestamp']);
    const q = Object.fromEntries(url.searchParams);
    expect(q.code).toMatch(/^[0-9a-f]{32}$/);
    expect(q.shop).toBe('hookrelay-dev.myshopify.com');
    expect(q.state).toBe(state);
    expect(q.timestamp).toBe(String(Math.floor(t / 1000)));
    expect(Buffer.from(q.host!, 'base64url').toString()).toBe('admin.shopify.com/store/hookrelay-dev');
    expect(q.hmac).toMatch(/^[0-9a-f]{64}$/);

    // Recomputed independently: every other parameter, keys sorted, URLSearchParams encoding with %20 for spaces.
    const message = Object.keys(q)
      .filter((k) => k !== 'hmac' && k !== 'signature')
      .sort()
      .map((k) => `${k}=${encodeURIComponent(q[k]!).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`)
      .join('&');
    expect(message).toContain('state=nonce%201%2F%C3%A9%2Bx%3Dy%26z');
    expect(createHmac('sha256', CLIENT_SECRET).update(message).digest('hex')).toBe(q.hmac!);
    // And hookrelay's own callback check agrees; a changed parameter breaks the signature.
    expect(callbackSigned(url.searchParams, CLIENT_SECRET)).toBe(true);
    const tampered = new URLSearchParams(url.searchParams);
    tampered.set('shop', 'someone-else.myshopify.com');
    expect(callbackSigned(tampered, CLIENT_SECRET)).toBe(false);

    expect(fake.authorizeRequests).toEqual([{ clientId: CLIENT_ID, scope: SCOPE, redirectUri: REDIRECT_URI, state, at: t, outcome: 'approved' }]);
    // The code works once.
    expect((await exchange(fake, a.code!)).status).toBe(200);
  });

  it('answers 400 invalid_request for an unknown client id, a missing redirect_uri, or one the app does not list', async () => {
    const fake = start({ app: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [REDIRECT_URI] } });
    const wrong = await authorize(fake, { client_id: 'someone-else' });
    expect(wrong.status).toBe(400);
    expect(wrong.location).toBeNull();
    expect(wrong.json).toEqual({ error: 'invalid_request', error_description: expect.any(String) });

    const noRedirect = await fetch(`${fake.url}/admin/oauth/authorize?client_id=${CLIENT_ID}&scope=${SCOPE}`, { redirect: 'manual' });
    expect(noRedirect.status).toBe(400);
    expect(((await noRedirect.json()) as { error: string }).error).toBe('invalid_request');
    const unlisted = await authorize(fake, { redirect_uri: 'https://evil.example/callback' });
    expect(unlisted.status).toBe(400);
    expect(unlisted.location).toBeNull();
    expect((await authorize(fake)).status).toBe(302);

    const noApp = startFakeShopify({ now: () => t });
    started.push(noApp);
    expect((await authorize(noApp)).status).toBe(400);

    expect(fake.authorizeRequests.map((r) => [r.clientId, r.redirectUri, r.outcome])).toEqual([
      ['someone-else', REDIRECT_URI, 'invalid_client'],
      [CLIENT_ID, null, 'invalid_request'],
      [CLIENT_ID, 'https://evil.example/callback', 'invalid_request'],
      [CLIENT_ID, REDIRECT_URI, 'approved'],
    ]);
  });

  it('declineInstalls redirects with error=access_denied and the state, no code and no hmac, until turned off', async () => {
    const fake = start();
    fake.declineInstalls(true);
    const a = await authorize(fake, { state: 'declined state' });
    expect(a.status).toBe(302);
    expect(`${a.url!.origin}${a.url!.pathname}`).toBe(REDIRECT_URI);
    expect([...a.url!.searchParams.keys()]).toEqual(['error', 'error_description', 'state']);
    expect(a.url!.searchParams.get('error')).toBe('access_denied');
    expect(a.url!.searchParams.get('state')).toBe('declined state');
    expect(a.location).toContain('state=declined%20state');
    fake.declineInstalls(false);
    expect((await authorize(fake)).code).toMatch(/^[0-9a-f]{32}$/);
    expect(fake.authorizeRequests.map((r) => r.outcome)).toEqual(['declined', 'approved']);
  });

  it('serves the shop it is given: the shop option and setShop, so two fakes install two shops', async () => {
    const one = start();
    const two = start({ shop: { id: 77, domain: 'second-shop.myshopify.com', name: 'Second' } });
    const a = await authorize(one);
    const c = await authorize(two);
    expect(a.url!.searchParams.get('shop')).toBe('hookrelay-dev.myshopify.com');
    expect(c.url!.searchParams.get('shop')).toBe('second-shop.myshopify.com');
    expect(Buffer.from(c.url!.searchParams.get('host')!, 'base64url').toString()).toBe('admin.shopify.com/store/second-shop');
    expect(callbackSigned(c.url!.searchParams, CLIENT_SECRET)).toBe(true);

    one.setShop('third-shop.myshopify.com');
    expect(one.shop.domain).toBe('third-shop.myshopify.com');
    expect(one.shop.id).not.toBe(548380009);
    const d = await authorize(one);
    expect(d.url!.searchParams.get('shop')).toBe('third-shop.myshopify.com');
    const tok = (await exchange(one, d.code!)).json.access_token as string;
    const shop = await gql(one, tok, INSTALLATION_QUERY);
    expect(shop.json.data.shop).toEqual({ id: `gid://shopify/Shop/${one.shop.id}`, name: 'third-shop', myshopifyDomain: 'third-shop.myshopify.com' });
  });
});

describe('fake Shopify: code exchange', () => {
  it('with expiring=1: an access token for accessTokenTtlSeconds and a refresh token; JSON or form; works on GraphQL until it expires', async () => {
    const fake = start();
    const a = await authorize(fake);
    const r = await exchange(fake, a.code!, { expiring: '1' });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      access_token: expect.stringMatching(/^shpat_[0-9a-f]{32}$/),
      scope: SCOPE,
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^shprt_[0-9a-f]{32}$/),
      refresh_token_expires_in: 7776000,
    });
    expect((await shopQuery(fake, r.json.access_token)).status).toBe(200);

    // A form body, `expiring=1`, and the TTL options.
    const short = start({ app: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, accessTokenTtlSeconds: 60, refreshTokenTtlSeconds: 600 } });
    const f = await exchange(short, (await authorize(short)).code!, { expiring: 1 }, 'form');
    expect(f.status).toBe(200);
    expect([f.json.expires_in, f.json.refresh_token_expires_in]).toEqual([60, 600]);
    // A JSON number works too.
    const n = await exchange(short, (await authorize(short)).code!, { expiring: 1 });
    expect(n.json.expires_in).toBe(60);

    t = T0 + 59_000;
    expect((await shopQuery(short, f.json.access_token)).status).toBe(200);
    t = T0 + 60_000;
    const dead = await shopQuery(short, f.json.access_token);
    expect(dead.status).toBe(401);
    expect(dead.text).toBe(UNAUTHORIZED);
    expect(short.tokenRequests.map((q) => [q.format, q.grantType, q.outcome])).toEqual([
      ['form', 'authorization_code', 'issued'],
      ['json', 'authorization_code', 'issued'],
    ]);
  });

  it('without expiring: a non-expiring token ({access_token, scope} only) that outlives any clock', async () => {
    const fake = start();
    const r = await exchange(fake, (await authorize(fake)).code!);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ access_token: expect.stringMatching(/^shpat_[0-9a-f]{32}$/), scope: SCOPE });
    t = T0 + 400 * 86_400_000;
    expect((await shopQuery(fake, r.json.access_token)).status).toBe(200);
    expect(fake.liveRefreshTokens()).toBe(0);
  });

  it('a code is single use and lives 10 minutes: reused, unknown or expired is 400 invalid_grant; a wrong secret does not spend it', async () => {
    const fake = start();
    const a = await authorize(fake);
    const wrongSecret = await tokenRequest(fake, { code: a.code!, client_secret: 'not-the-secret' });
    expect(wrongSecret.status).toBe(400);
    expect(wrongSecret.json.error).toBe('invalid_client');
    expect((await exchange(fake, a.code!, { expiring: '1' })).status).toBe(200);
    const reused = await exchange(fake, a.code!, { expiring: '1' });
    expect(reused.status).toBe(400);
    expect(reused.json).toEqual(invalidGrant);
    expect((await exchange(fake, 'f'.repeat(32))).json).toEqual(invalidGrant);

    const late = await authorize(fake);
    const inTime = await authorize(fake);
    t = T0 + 10 * 60_000 - 1;
    expect((await exchange(fake, inTime.code!)).status).toBe(200);
    t = T0 + 10 * 60_000;
    const expired = await exchange(fake, late.code!);
    expect(expired.status).toBe(400);
    expect(expired.json).toEqual(invalidGrant);
    expect(fake.tokenRequests.map((q) => [q.grantType, q.outcome, q.status])).toEqual([
      ['authorization_code', 'invalid_client', 400],
      ['authorization_code', 'issued', 200],
      ['authorization_code', 'invalid_grant', 400],
      ['authorization_code', 'invalid_grant', 400],
      ['authorization_code', 'issued', 200],
      ['authorization_code', 'invalid_grant', 400],
    ]);
  });
});

describe('fake Shopify: refresh with rotation', () => {
  it('returns a new pair each time; the previous refresh token stays valid until its replacement is used for a refresh', async () => {
    const fake = start();
    const p1 = await install(fake);
    const r2 = await refresh(fake, p1.refresh);
    expect(r2.status).toBe(200);
    expect(r2.json).toEqual({
      access_token: expect.stringMatching(/^shpat_[0-9a-f]{32}$/),
      scope: SCOPE,
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^shprt_[0-9a-f]{32}$/),
      refresh_token_expires_in: 7776000,
    });
    expect(r2.json.access_token).not.toBe(p1.access);
    expect(r2.json.refresh_token).not.toBe(p1.refresh);
    // The old access token is not revoked by the refresh; using it retires nothing.
    expect((await shopQuery(fake, p1.access)).status).toBe(200);

    // Its replacement not used yet, the previous refresh token still works (a retry after a lost answer).
    const r3 = await refresh(fake, p1.refresh);
    expect(r3.status).toBe(200);
    expect(fake.liveRefreshTokens()).toBe(3);

    // The app uses its replacement: the previous one is retired.
    const r4 = await refresh(fake, r2.json.refresh_token);
    expect(r4.status).toBe(200);
    const retired = await refresh(fake, p1.refresh);
    expect(retired.status).toBe(400);
    expect(retired.json).toEqual(invalidGrant);
    // A sibling replacement (r3, from the retry) is not retired by r2's use; r2 itself stays valid until r4 is used.
    expect((await refresh(fake, r3.json.refresh_token)).status).toBe(200);
    expect((await refresh(fake, r4.json.refresh_token)).status).toBe(200);
    expect((await refresh(fake, r2.json.refresh_token)).json).toEqual(invalidGrant);

    expect(fake.tokenRequests.map((q) => [q.grantType, q.outcome])).toEqual([
      ['authorization_code', 'issued'],
      ['refresh_token', 'issued'],
      ['refresh_token', 'issued'],
      ['refresh_token', 'issued'],
      ['refresh_token', 'invalid_grant'],
      ['refresh_token', 'issued'],
      ['refresh_token', 'issued'],
      ['refresh_token', 'invalid_grant'],
    ]);
  });

  it('using the new access token on GraphQL also retires the previous refresh token', async () => {
    const fake = start();
    const p1 = await install(fake);
    const r2 = await refresh(fake, p1.refresh);
    expect((await refresh(fake, p1.refresh)).status).toBe(200); // still the previous, still valid
    expect((await gql(fake, r2.json.access_token, INSTALLATION_QUERY)).status).toBe(200);
    expect((await refresh(fake, p1.refresh)).json).toEqual(invalidGrant);
    expect((await refresh(fake, r2.json.refresh_token)).status).toBe(200);
  });

  it('refreshed access tokens expire on the clock; old ones live to their own expiry; an expired refresh token is invalid_grant', async () => {
    const fake = start({ app: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, accessTokenTtlSeconds: 100, refreshTokenTtlSeconds: 1000 } });
    const p1 = await install(fake);
    t = T0 + 50_000;
    const r2 = await refresh(fake, p1.refresh);
    expect(r2.json.expires_in).toBe(100);
    t = T0 + 100_000;
    expect((await shopQuery(fake, p1.access)).status).toBe(401); // its own expiry, 100 s after issue
    expect((await shopQuery(fake, r2.json.access_token)).status).toBe(200);
    t = T0 + 150_000;
    expect((await shopQuery(fake, r2.json.access_token)).status).toBe(401);

    // r2's refresh token lives 1000 s from its issue (T0 + 50 s).
    t = T0 + 1_049_999;
    const r3 = await refresh(fake, r2.json.refresh_token);
    expect(r3.status).toBe(200);
    t = T0 + 1_050_000 + 1_000_000;
    expect((await refresh(fake, r3.json.refresh_token)).json).toEqual(invalidGrant);
  });

  it('a superseded refresh token can be retried for 30 days from its first use, not longer', async () => {
    const fake = start();
    const p1 = await install(fake);
    t = T0 + 1000;
    expect((await refresh(fake, p1.refresh)).status).toBe(200);
    t = T0 + 1000 + 30 * 86_400_000 - 1;
    expect((await refresh(fake, p1.refresh)).status).toBe(200);
    t = T0 + 1000 + 30 * 86_400_000;
    expect((await refresh(fake, p1.refresh)).json).toEqual(invalidGrant);
  });

  it('revokeRefreshTokens makes every refresh token invalid_grant; access tokens live on; a new install refreshes again', async () => {
    const fake = start();
    const p1 = await install(fake);
    const p2 = await install(fake);
    fake.revokeRefreshTokens();
    expect(fake.liveRefreshTokens()).toBe(0);
    for (const p of [p1, p2]) {
      const r = await refresh(fake, p.refresh);
      expect(r.status).toBe(400);
      expect(r.json).toEqual(invalidGrant);
      expect((await shopQuery(fake, p.access)).status).toBe(200);
    }
    const p3 = await install(fake);
    expect((await refresh(fake, p3.refresh)).status).toBe(200);
  });

  it('a refresh needs the app credentials and a refresh_token', async () => {
    const fake = start();
    const p1 = await install(fake);
    const wrong = await tokenRequest(fake, { grant_type: 'refresh_token', refresh_token: p1.refresh, client_secret: 'nope' });
    expect(wrong.json.error).toBe('invalid_client');
    const missing = await tokenRequest(fake, { grant_type: 'refresh_token' });
    expect(missing.json.error).toBe('invalid_request');
    expect((await refresh(fake, 'shprt_00000000000000000000000000000000')).json).toEqual(invalidGrant);
    expect((await refresh(fake, p1.refresh)).status).toBe(200); // the failures spent nothing
  });
});

describe('fake Shopify: a lost token answer', () => {
  it('dropNextTokenAnswer: the refresh rotates but the client fetch fails; the lost refresh token is live and the old one still valid', async () => {
    const fake = start();
    const p1 = await install(fake);
    fake.dropNextTokenAnswer();
    let failure: unknown = null;
    try {
      await fetch(`${fake.url}/admin/oauth/access_token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, grant_type: 'refresh_token', refresh_token: p1.refresh }),
      });
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeInstanceOf(Error); // fetch itself rejects: no status, no body
    expect(fake.tokenRequests.at(-1)).toEqual({
      format: 'json',
      clientId: CLIENT_ID,
      grantType: 'refresh_token',
      outcome: 'issued',
      status: 200,
      at: t,
      dropped: true,
    });
    // The rotation happened: the lost pair is live (the fake lists it; the client never saw it).
    const values = fake.issuedTokenValues();
    const [lostAccess, lostRefresh] = values.slice(-2) as [string, string];
    expect(lostAccess).toMatch(/^shpat_/);
    expect(lostRefresh).toMatch(/^shprt_/);
    expect(fake.liveRefreshTokens()).toBe(2);

    // Only one answer is dropped; the client retries with the refresh token it holds, which is still valid.
    const retry = await refresh(fake, p1.refresh);
    expect(retry.status).toBe(200);
    expect(fake.tokenRequests.at(-1)!.dropped).toBeUndefined();
    // Once the client uses its new refresh token, the old one is retired.
    expect((await refresh(fake, retry.json.refresh_token)).status).toBe(200);
    expect((await refresh(fake, p1.refresh)).json).toEqual(invalidGrant);
    // The lost access token was issued all the same, and works until its own expiry.
    expect((await shopQuery(fake, lostAccess)).status).toBe(200);
  });

  it('the lost refresh token used later retires the one it replaced; a lost code exchange spends the code', async () => {
    const fake = start();
    const p1 = await install(fake);
    fake.dropNextTokenAnswer();
    await expect(refresh(fake, p1.refresh)).rejects.toThrow();
    const lostRefresh = fake.issuedTokenValues().at(-1)!;
    expect((await refresh(fake, lostRefresh)).status).toBe(200);
    expect((await refresh(fake, p1.refresh)).json).toEqual(invalidGrant);

    const a = await authorize(fake);
    fake.dropNextTokenAnswer();
    await expect(exchange(fake, a.code!, { expiring: '1' })).rejects.toThrow();
    expect((await exchange(fake, a.code!, { expiring: '1' })).json).toEqual(invalidGrant);
    expect(fake.tokenRequests.filter((q) => q.dropped).map((q) => [q.grantType, q.outcome])).toEqual([
      ['refresh_token', 'issued'],
      ['authorization_code', 'issued'],
    ]);
  });

  it('nothing of a lost answer is written: the connection ends without a token, a status or a header of the answer', async () => {
    const fake = start();
    const p1 = await install(fake);
    fake.dropNextTokenAnswer();
    const body = JSON.stringify({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, grant_type: 'refresh_token', refresh_token: p1.refresh });
    const { port } = new URL(fake.url);
    const received = await new Promise<string>((resolve) => {
      let got = '';
      const sock = connect(Number(port), '127.0.0.1', () =>
        sock.write(`POST /admin/oauth/access_token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
      );
      // Bun 1.4 resets the connection; Bun 1.3 writes its status line of 0 and keeps the connection open (to its
      // idle timeout): what it wrote is all there is once nothing more comes for a while.
      let quiet: ReturnType<typeof setTimeout> | undefined;
      sock.on('data', (d) => {
        got += d.toString();
        clearTimeout(quiet);
        quiet = setTimeout(() => sock.destroy(), 500);
      });
      sock.on('error', () => {});
      sock.on('close', () => {
        clearTimeout(quiet);
        resolve(got);
      });
    });
    expect(fake.tokenRequests.at(-1)).toMatchObject({ grantType: 'refresh_token', outcome: 'issued', dropped: true });
    // Bun 1.4 writes nothing; Bun 1.3 a status line of 0, which every client refuses.
    expect(received).not.toMatch(/HTTP\/1\.1 [1-9]|shpat_|shprt_|access_token|content-type/i);
  });
});

describe('fake Shopify: uninstall', () => {
  it('revokes every access token, refresh token and unused code; the static token lives; a new authorize reinstalls as a new installation', async () => {
    const fake = start({ token: STATIC_TOKEN });
    const p1 = await install(fake);
    const plain = (await exchange(fake, (await authorize(fake)).code!)).json.access_token as string;
    const cc = await token(fake);
    const unused = await authorize(fake);
    const before = (await gql(fake, p1.access, INSTALLATION_QUERY)).json.data.currentAppInstallation.id as string;

    const payload = fake.uninstall();
    expect(payload).toMatchObject({ id: 548380009, myshopify_domain: 'hookrelay-dev.myshopify.com', domain: 'hookrelay-dev.myshopify.com' });
    expect(fake.liveTokens()).toBe(0);
    expect(fake.liveRefreshTokens()).toBe(0);
    for (const tok of [p1.access, plain, cc]) {
      const r = await trigger(fake, tok);
      expect(r.status).toBe(401);
      expect(r.text).toBe(UNAUTHORIZED);
    }
    expect((await trigger(fake, STATIC_TOKEN)).status).toBe(200);
    expect((await refresh(fake, p1.refresh)).json).toEqual(invalidGrant);
    expect((await exchange(fake, unused.code!)).json).toEqual(invalidGrant);

    const p2 = await install(fake);
    const after = await gql(fake, p2.access, INSTALLATION_QUERY);
    expect(after.status).toBe(200);
    expect(after.json.data.currentAppInstallation.id).toMatch(/^gid:\/\/shopify\/AppInstallation\/\d+$/);
    expect(after.json.data.currentAppInstallation.id).not.toBe(before);
    expect((await refresh(fake, p2.refresh)).status).toBe(200);
  });
});

describe('fake Shopify: webhooks', () => {
  /** A receiver that verifies as an app must: base64 HMAC-SHA256 of the raw body with the client secret. */
  const received: { headers: Record<string, string>; body: string }[] = [];
  const receiver = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = await req.text();
      received.push({ headers: Object.fromEntries(req.headers), body });
      const expected = createHmac('sha256', CLIENT_SECRET).update(body, 'utf8').digest('base64');
      return expected === req.headers.get('x-shopify-hmac-sha256') ? new Response('ok') : new Response('forged', { status: 401 });
    },
  });
  const hook = `http://127.0.0.1:${receiver.port}/webhooks/shopify`;
  afterAll(() => receiver.stop(true));
  afterEach(() => {
    received.length = 0;
  });

  it('POSTs the JSON with Shopify headers and a base64 HMAC of the exact body with the client secret', async () => {
    const fake = start();
    const payload = webhookPayloads.customersRedact(fake.shop, { id: 191167, email: 'john@example.com', phone: '555-625-1199' }, [299938, 280263]);
    const r = await fake.deliverWebhook(hook, { topic: 'customers/redact', payload });
    expect(r).toEqual({ status: 200, body: 'ok', webhookId: expect.any(String), eventId: expect.any(String) });
    expect(received).toHaveLength(1);
    const { headers, body } = received[0]!;
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-shopify-topic']).toBe('customers/redact');
    expect(headers['x-shopify-shop-domain']).toBe('hookrelay-dev.myshopify.com');
    expect(headers['x-shopify-webhook-id']).toMatch(uuid);
    expect(headers['x-shopify-webhook-id']).toBe(r.webhookId);
    expect(headers['x-shopify-event-id']).toMatch(uuid);
    expect(headers['x-shopify-event-id']).toBe(r.eventId);
    expect(headers['x-shopify-api-version']).toBe('2026-10');
    expect(headers['x-shopify-triggered-at']).toBe(new Date(t).toISOString());
    expect(headers['x-shopify-hmac-sha256']).toBe(createHmac('sha256', CLIENT_SECRET).update(body).digest('base64'));
    expect(JSON.parse(body)).toEqual({
      shop_id: 548380009,
      shop_domain: 'hookrelay-dev.myshopify.com',
      customer: { id: 191167, email: 'john@example.com', phone: '555-625-1199' },
      orders_to_redact: [299938, 280263],
    });
    expect(fake.webhookDeliveries).toEqual([
      {
        topic: 'customers/redact',
        shop: 'hookrelay-dev.myshopify.com',
        webhookId: r.webhookId,
        eventId: r.eventId,
        apiVersion: '2026-10',
        forged: false,
        status: 200,
        at: t,
      },
    ]);
  });

  it('signWith forges the signature; webhookId, eventId, apiVersion and shop can be chosen; a string payload is sent byte for byte', async () => {
    const fake = start();
    const forged = await fake.deliverWebhook(hook, { topic: 'shop/redact', payload: webhookPayloads.shopRedact(fake.shop), signWith: 'not-the-secret' });
    expect(forged.status).toBe(401);
    expect(received[0]!.headers['x-shopify-hmac-sha256']).toBe(createHmac('sha256', 'not-the-secret').update(received[0]!.body).digest('base64'));

    const raw = '{ "shop_id": 1,  "shop_domain": "other.myshopify.com", "note": "é ✓" }';
    const chosen = await fake.deliverWebhook(hook, {
      topic: 'shop/redact',
      payload: raw,
      webhookId: 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
      eventId: '98880550-7158-44d4-b7cd-2c97c8a091b5',
      apiVersion: '2026-07',
      shop: 'other.myshopify.com',
    });
    expect(chosen.status).toBe(200);
    const h = received[1]!.headers;
    expect(received[1]!.body).toBe(raw);
    expect([h['x-shopify-webhook-id'], h['x-shopify-event-id'], h['x-shopify-api-version'], h['x-shopify-shop-domain']]).toEqual([
      'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
      '98880550-7158-44d4-b7cd-2c97c8a091b5',
      '2026-07',
      'other.myshopify.com',
    ]);
    expect(fake.webhookDeliveries.map((d) => [d.forged, d.status])).toEqual([
      [true, 401],
      [false, 200],
    ]);

    const noApp = startFakeShopify({ now: () => t });
    started.push(noApp);
    await expect(noApp.deliverWebhook(hook, { topic: 'shop/redact', payload: {} })).rejects.toThrow(/signWith/);
    expect((await noApp.deliverWebhook(hook, { topic: 'shop/redact', payload: {}, signWith: CLIENT_SECRET })).status).toBe(200);
  });

  it('builds the documented payloads', () => {
    const shop = { id: 954889, domain: 'canary.myshopify.com' };
    expect(webhookPayloads.shopRedact(shop)).toEqual({ shop_id: 954889, shop_domain: 'canary.myshopify.com' });
    expect(
      webhookPayloads.customersDataRequest(shop, { id: 191167, email: 'john@example.com', phone: '555-625-1199' }, [299938, 280263, 220458], 9999),
    ).toEqual({
      shop_id: 954889,
      shop_domain: 'canary.myshopify.com',
      orders_requested: [299938, 280263, 220458],
      customer: { id: 191167, email: 'john@example.com', phone: '555-625-1199' },
      data_request: { id: 9999 },
    });
    expect(webhookPayloads.customersRedact(shop, { id: 5 })).toEqual({
      shop_id: 954889,
      shop_domain: 'canary.myshopify.com',
      customer: { id: 5, email: null, phone: null },
      orders_to_redact: [],
    });
    expect(webhookPayloads.appUninstalled(shop)).toMatchObject({ id: 954889, domain: 'canary.myshopify.com', myshopify_domain: 'canary.myshopify.com' });
    expect(
      webhookPayloads.appSubscriptionsUpdate({
        id: 'gid://shopify/AppSubscription/1',
        name: 'Pro',
        status: 'ACTIVE',
        shopId: 954889,
        createdAt: 'c',
        updatedAt: 'u',
      }),
    ).toEqual({
      app_subscription: {
        admin_graphql_api_id: 'gid://shopify/AppSubscription/1',
        name: 'Pro',
        status: 'ACTIVE',
        admin_graphql_api_shop_id: 'gid://shopify/Shop/954889',
        created_at: 'c',
        updated_at: 'u',
        currency: 'USD',
        capped_amount: null,
      },
    });
  });
});

describe('fake Shopify: currentAppInstallation', () => {
  it('answers the installation with the shop when both are selected, alone when alone; stable per shop, distinct between shops', async () => {
    const fake = start();
    const other = start({ shop: { domain: 'second-shop.myshopify.com' } });
    const { access } = await install(fake);
    const both = await gql(fake, access, INSTALLATION_QUERY);
    expect(both.status).toBe(200);
    expect(both.json.data).toEqual({
      shop: { id: 'gid://shopify/Shop/548380009', name: 'hookrelay dev store', myshopifyDomain: 'hookrelay-dev.myshopify.com' },
      currentAppInstallation: { id: expect.stringMatching(/^gid:\/\/shopify\/AppInstallation\/\d+$/) },
    });
    expect(both.json.extensions.cost.actualQueryCost).toBe(1);
    const alone = await gql(fake, access, '{ currentAppInstallation { id } }');
    expect(alone.json.data).toEqual({ currentAppInstallation: both.json.data.currentAppInstallation });
    const elsewhere = await gql(other, (await install(other)).access, '{ currentAppInstallation { id } }');
    expect(elsewhere.json.data.currentAppInstallation.id).not.toBe(both.json.data.currentAppInstallation.id);
    expect((await gql(fake, null, '{ currentAppInstallation { id } }')).status).toBe(401);
    expect(fake.shopQueries.map((q) => [q.behaviour, q.selects])).toEqual([
      ['ok', ['shop', 'currentAppInstallation']],
      ['ok', ['currentAppInstallation']],
      ['unauthorized', ['currentAppInstallation']],
    ]);
  });
});

describe('fake Shopify: appSubscriptionCreate', () => {
  const lineItems = [
    { plan: { appRecurringPricingDetails: { price: { amount: 10, currencyCode: 'USD' }, interval: 'EVERY_30_DAYS' } } },
    { plan: { appUsagePricingDetails: { terms: '$1 per 1000 events', cappedAmount: { amount: 20, currencyCode: 'USD' } } } },
  ];
  const variables = { name: 'hookrelay Pro', returnUrl: 'https://relay.example/billing/return', lineItems, test: true };

  it('creates a PENDING subscription with a confirmation URL; approve and decline set the status and give the app_subscriptions/update payload', async () => {
    const fake = start();
    const { access } = await install(fake);
    const r = await gql(fake, access, SUBSCRIPTION_MUTATION, variables);
    expect(r.status).toBe(200);
    const created = r.json.data.appSubscriptionCreate;
    expect(created.userErrors).toEqual([]);
    expect(created.appSubscription).toEqual({ id: expect.stringMatching(/^gid:\/\/shopify\/AppSubscription\/\d+$/), status: 'PENDING' });
    const n = created.appSubscription.id.split('/').pop();
    expect(created.confirmationUrl).toMatch(
      new RegExp(`^https://hookrelay-dev\\.myshopify\\.com/admin/charges/${n}/confirm_recurring_application_charge\\?signature=[\\w-]+$`),
    );
    expect(r.json.extensions.cost.requestedQueryCost).toBe(10);
    expect(fake.subscriptions).toEqual([
      { id: created.appSubscription.id, name: 'hookrelay Pro', status: 'PENDING', returnUrl: variables.returnUrl, test: true, lineItems, at: T0 },
    ]);

    t = T0 + 5000;
    const approved = fake.approveSubscription(created.appSubscription.id);
    expect(approved).toEqual({
      app_subscription: {
        admin_graphql_api_id: created.appSubscription.id,
        name: 'hookrelay Pro',
        status: 'ACTIVE',
        admin_graphql_api_shop_id: 'gid://shopify/Shop/548380009',
        created_at: '2026-11-25T00:00:00Z',
        updated_at: '2026-11-25T00:00:05Z',
        currency: 'USD',
        capped_amount: '20.0',
        price: '10.00',
        interval: 'every_30_days',
      },
    });
    expect(fake.subscriptions[0]!.status).toBe('ACTIVE');
    expect(() => fake.approveSubscription(created.appSubscription.id)).toThrow(/ACTIVE/);
    expect(() => fake.declineSubscription('gid://shopify/AppSubscription/1')).toThrow(/no subscription/);

    const second = await gql(fake, access, SUBSCRIPTION_MUTATION, { ...variables, name: 'hookrelay Basic', test: undefined, lineItems: [lineItems[0]] });
    const id2 = second.json.data.appSubscriptionCreate.appSubscription.id as string;
    expect(id2).not.toBe(created.appSubscription.id);
    const declined = fake.declineSubscription(id2) as { app_subscription: Record<string, unknown> };
    expect(declined.app_subscription).toMatchObject({ admin_graphql_api_id: id2, status: 'DECLINED', capped_amount: null, price: '10.00' });
    expect(fake.subscriptions.map((s) => [s.name, s.status, s.test])).toEqual([
      ['hookrelay Pro', 'ACTIVE', true],
      ['hookrelay Basic', 'DECLINED', false],
    ]);

    // Uninstalling cancels what is still pending or active.
    const third = await gql(fake, access, SUBSCRIPTION_MUTATION, variables);
    expect(third.status).toBe(200);
    fake.uninstall();
    expect(fake.subscriptions.map((s) => s.status)).toEqual(['CANCELLED', 'DECLINED', 'CANCELLED']);
  });

  it('reports what it bills in currentAppInstallation { activeSubscriptions }: an approval replaces the one active before; a cancellation ends it', async () => {
    const fake = start();
    const { access } = await install(fake);
    const active = async () =>
      (await gql(fake, access, 'query { currentAppInstallation { activeSubscriptions { id name status } } }')).json.data.currentAppInstallation
        .activeSubscriptions;
    const create = async (name: string) =>
      (await gql(fake, access, SUBSCRIPTION_MUTATION, { ...variables, name })).json.data.appSubscriptionCreate.appSubscription.id as string;
    const pro = await create('hookrelay Pro');
    expect(await active()).toEqual([]); // pending is not billed
    fake.approveSubscription(pro);
    expect(await active()).toEqual([{ id: pro, name: 'hookrelay Pro', status: 'ACTIVE' }]);
    const basic = await create('hookrelay Basic');
    fake.approveSubscription(basic);
    expect(await active()).toEqual([{ id: basic, name: 'hookrelay Basic', status: 'ACTIVE' }]);
    expect(fake.subscriptions.map((s) => s.status)).toEqual(['CANCELLED', 'ACTIVE']);
    const cancelled = fake.cancelSubscription(basic) as { app_subscription: Record<string, unknown> };
    expect(cancelled.app_subscription).toMatchObject({ admin_graphql_api_id: basic, status: 'CANCELLED' });
    expect(await active()).toEqual([]);
    expect(() => fake.cancelSubscription(basic)).toThrow(/CANCELLED/);
    expect(fake.shopQueries.map((q) => q.selects)).toEqual(Array(4).fill(['currentAppInstallation']));
  });

  it('needs a valid token (401), costs 10 against an enforced bucket, and malformed variables are a 400', async () => {
    const fake = start({ bucket: { maximumAvailable: 15, restoreRate: 1 } });
    const { access } = await install(fake);
    const unauth = await gql(fake, null, SUBSCRIPTION_MUTATION, variables);
    expect(unauth.status).toBe(401);
    expect(unauth.text).toBe(UNAUTHORIZED);
    const first = await gql(fake, access, SUBSCRIPTION_MUTATION, variables);
    expect(first.json.extensions.cost.throttleStatus.currentlyAvailable).toBe(5);
    const throttled = await gql(fake, access, SUBSCRIPTION_MUTATION, variables);
    expect(throttled.json.errors[0].extensions.code).toBe('THROTTLED');
    expect(fake.subscriptions).toHaveLength(1);
    const malformed = await gql(fake, access, SUBSCRIPTION_MUTATION, { ...variables, lineItems: [] });
    expect(malformed.status).toBe(400);
    expect(fake.rejected).toEqual(['variables.lineItems must be a non-empty list']);
  });

  it('delivers the approval to the app as an app_subscriptions/update webhook', async () => {
    const fake = start();
    const { access } = await install(fake);
    const id = (await gql(fake, access, SUBSCRIPTION_MUTATION, variables)).json.data.appSubscriptionCreate.appSubscription.id as string;
    let seen: { topic: string | null; body: unknown } | null = null;
    const app = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        seen = { topic: req.headers.get('x-shopify-topic'), body: await req.json() };
        return new Response(null, { status: 204 });
      },
    });
    try {
      const r = await fake.deliverWebhook(`http://127.0.0.1:${app.port}/`, { topic: 'app_subscriptions/update', payload: fake.approveSubscription(id) });
      expect(r.status).toBe(204);
      expect(seen!).toEqual({
        topic: 'app_subscriptions/update',
        body: { app_subscription: expect.objectContaining({ admin_graphql_api_id: id, status: 'ACTIVE' }) },
      });
    } finally {
      app.stop(true);
    }
  });
});

describe('fake Shopify: reset of the install switches', () => {
  it('clears authorize requests, subscriptions and deliveries, and turns off declineInstalls and dropNextTokenAnswer; tokens are kept', async () => {
    const fake = start();
    const p1 = await install(fake);
    await gql(fake, p1.access, SUBSCRIPTION_MUTATION, {
      name: 'x',
      returnUrl: 'https://relay.example/r',
      lineItems: [{ plan: { appRecurringPricingDetails: { price: { amount: 1, currencyCode: 'USD' } } } }],
    });
    fake.declineInstalls(true);
    fake.dropNextTokenAnswer();
    fake.reset();
    expect([fake.authorizeRequests, fake.subscriptions, fake.webhookDeliveries, fake.tokenRequests]).toEqual([[], [], [], []]);
    expect((await authorize(fake)).code).not.toBeNull();
    expect((await refresh(fake, p1.refresh)).status).toBe(200);
  });
});

describe('scripts/fake-shopify.ts', () => {
  it('prints ready, serves the grant and GraphQL, logs method/path/status without secrets, and prints counts on SIGTERM', async () => {
    const proc = Bun.spawn(['bun', SCRIPT, '--client-id', CLIENT_ID, '--bucket-max', '50', '--restore-rate', '5'], {
      env: { ...process.env, FAKE_SHOPIFY_CLIENT_SECRET: CLIENT_SECRET },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const reader = proc.stdout.getReader();
    const decoder = new TextDecoder();
    let out = '';
    while (!out.includes('\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      out += decoder.decode(value, { stream: true });
    }
    const ready = JSON.parse(out.split('\n')[0]!) as { ready: boolean; url: string; pid: number };
    expect(ready.ready).toBe(true);
    expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(ready.pid).toBe(proc.pid);

    const tokenRes = await fetch(`${ready.url}/admin/oauth/access_token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET }).toString(),
    });
    expect(tokenRes.status).toBe(200);
    const tok = ((await tokenRes.json()) as { access_token: string }).access_token;
    const headers = { 'Content-Type': 'application/json', 'X-Shopify-Access-Token': tok };
    const shop = await fetch(`${ready.url}/admin/api/2026-10/graphql.json`, { method: 'POST', headers, body: JSON.stringify({ query: '{ shop { id } }' }) });
    expect(shop.status).toBe(200);
    expect(
      ((await shop.json()) as { extensions: { cost: { throttleStatus: { maximumAvailable: number } } } }).extensions.cost.throttleStatus.maximumAvailable,
    ).toBe(50);
    const mutation = await fetch(`${ready.url}/admin/api/2026-10/graphql.json`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query: MUTATION, variables: { handle: 'h', payload: {} } }),
    });
    expect(mutation.status).toBe(200);

    proc.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out += decoder.decode(value, { stream: true });
    }
    const lines = out.trim().split('\n');
    expect(JSON.parse(lines[lines.length - 1]!)).toEqual({ requests: 1, shopQueries: 1, shops: 1, tokenRequests: 1, webhooks: 0 });
    const err = await new Response(proc.stderr).text();
    expect(err).toContain('POST /admin/oauth/access_token 200');
    expect(err).toContain('POST /admin/api/2026-10/graphql.json 200');
    for (const s of [CLIENT_SECRET, tok]) expect(out + err).not.toContain(s);
  });

  it('--shop names the store: installs redirect with it and shop queries answer it; a malformed one exits 2', async () => {
    const proc = Bun.spawn(['bun', SCRIPT, '--client-id', CLIENT_ID, '--shop', 'Canary-Store.myshopify.com'], {
      env: { ...process.env, FAKE_SHOPIFY_CLIENT_SECRET: CLIENT_SECRET },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    try {
      const reader = proc.stdout.getReader();
      let out = '';
      while (!out.includes('\n')) {
        const { value, done } = await reader.read();
        if (done) break;
        out += new TextDecoder().decode(value);
      }
      const { url } = JSON.parse(out.split('\n')[0]!) as { url: string };
      const q = new URLSearchParams({ client_id: CLIENT_ID, scope: SCOPE, redirect_uri: REDIRECT_URI, state: 's' });
      const res = await fetch(`${url}/admin/oauth/authorize?${q}`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      const callback = new URL(res.headers.get('location')!);
      expect(callback.searchParams.get('shop')).toBe('canary-store.myshopify.com');
      expect(callbackSigned(callback.searchParams, CLIENT_SECRET)).toBe(true);
      const exchanged = await fetch(`${url}/admin/oauth/access_token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, code: callback.searchParams.get('code'), expiring: '1' }),
      });
      const pair = (await exchanged.json()) as { access_token: string; refresh_token: string };
      secrets.add(pair.access_token);
      secrets.add(pair.refresh_token);
      const shop = await fetch(`${url}/admin/api/2026-10/graphql.json`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Shopify-Access-Token': pair.access_token },
        body: JSON.stringify({ query: '{ shop { myshopifyDomain } }' }),
      });
      expect(((await shop.json()) as { data: { shop: { myshopifyDomain: string } } }).data.shop.myshopifyDomain).toBe('canary-store.myshopify.com');
    } finally {
      proc.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
    }
    const err = await new Response(proc.stderr).text();
    expect(err).toContain('GET /admin/oauth/authorize 302');
    for (const s of [CLIENT_SECRET, ...secrets]) expect(err).not.toContain(s);

    const bad = Bun.spawn(['bun', SCRIPT, '--client-id', CLIENT_ID, '--client-secret', 'x', '--shop', 'not a shop'], { stdout: 'pipe', stderr: 'pipe' });
    expect(await bad.exited).toBe(2);
    expect(await new Response(bad.stderr).text()).toContain('--shop must be a store domain');
  });

  it('refuses to start without a client id', async () => {
    const proc = Bun.spawn(['bun', SCRIPT, '--client-secret', 'x'], { stdout: 'pipe', stderr: 'pipe' });
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stderr).text()).toContain('--client-id is required');
  });
});
