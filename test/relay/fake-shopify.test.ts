/**
 * The fake Shopify Admin API itself (test/fixtures/fake-shopify.ts), driven with plain fetch and a manual clock:
 * the client credentials grant, token expiry and refusal, outages, version fall-forward, the cost extension and
 * the enforced leaky bucket, shop queries, and that nothing recorded holds a token or secret.
 */
import { afterAll, afterEach, describe, expect, it } from 'bun:test';
import { join } from 'node:path';
import { b, startFakeShopify, type FakeShopify, type FakeShopifyOptions } from '../fixtures/fake-shopify.ts';

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

let t = Date.parse('2026-11-25T00:00:00Z');
const started: FakeShopify[] = [];
/** Tokens and secrets seen in this file, to prove none of them lands in a recorded list. */
const secrets = new Set<string>([CLIENT_SECRET, STATIC_TOKEN]);

function start(opts: FakeShopifyOptions = {}): FakeShopify {
  const fake = startFakeShopify({ now: () => t, app: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenTtlSeconds: TTL }, ...opts });
  started.push(fake);
  return fake;
}

afterEach(() => {
  for (const fake of started) {
    const recorded = JSON.stringify([fake.requests, fake.rejected, fake.tokenRequests, fake.shopQueries]);
    for (const s of secrets) expect(recorded).not.toContain(s);
  }
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
      { format: 'json', clientId: CLIENT_ID, outcome: 'issued', status: 200, at: t },
      { format: 'form', clientId: CLIENT_ID, outcome: 'issued', status: 200, at: t },
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

    const grant = await issue(fake, { grant_type: 'authorization_code' });
    expect(grant.status).toBe(400);
    expect(grant.json.error).toBe('unsupported_grant_type');
    expect(typeof grant.json.error_description).toBe('string');

    const missing = await fetch(`${fake.url}/admin/oauth/access_token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: CLIENT_ID }),
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: string }).error).toBe('invalid_request');

    const other = await fetch(`${fake.url}/admin/oauth/access_token`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'hello' });
    expect(other.status).toBe(400);

    expect(fake.tokenRequests.map((r) => [r.format, r.clientId, r.outcome])).toEqual([
      ['json', CLIENT_ID, 'invalid_client'],
      ['form', 'someone-else', 'invalid_client'],
      ['json', CLIENT_ID, 'unsupported_grant_type'],
      ['json', CLIENT_ID, 'invalid_request'],
      ['other', null, 'invalid_request'],
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

  it('keeps today\'s behaviour without token or app: any non-empty token is accepted', async () => {
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
    expect(fake.shopQueries).toEqual([
      { tokenPresent: true, version: '2026-10', answeredVersion: '2026-10', behaviour: 'ok', at: t },
      { tokenPresent: true, version: '2026-10', answeredVersion: '2026-10', behaviour: 'ok', at: t },
      { tokenPresent: true, version: '2026-10', answeredVersion: '2026-10', behaviour: 'ok', at: t },
      { tokenPresent: false, version: '2026-10', answeredVersion: '2026-10', behaviour: 'unauthorized', at: t },
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
    expect(((await shop.json()) as { extensions: { cost: { throttleStatus: { maximumAvailable: number } } } }).extensions.cost.throttleStatus.maximumAvailable).toBe(50);
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
    expect(JSON.parse(lines[lines.length - 1]!)).toEqual({ requests: 1, shopQueries: 1, tokenRequests: 1 });
    const err = await new Response(proc.stderr).text();
    expect(err).toContain('POST /admin/oauth/access_token 200');
    expect(err).toContain('POST /admin/api/2026-10/graphql.json 200');
    for (const s of [CLIENT_SECRET, tok]) expect(out + err).not.toContain(s);
  });

  it('refuses to start without a client id', async () => {
    const proc = Bun.spawn(['bun', SCRIPT, '--client-secret', 'x'], { stdout: 'pipe', stderr: 'pipe' });
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stderr).text()).toContain('--client-id is required');
  });
});
