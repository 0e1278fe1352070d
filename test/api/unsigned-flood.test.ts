/**
 * Floods of the routes anyone can reach without a credential of hookrelay's own (issue 35, findings 3 and 6), in
 * reduced size: GET /auth/install writes nothing and is limited per address; forged install callbacks, Shopify
 * webhooks, Flow action runs and lifecycle callbacks answer 429 past the failure limit per address; a flood leaves a
 * bounded number of log lines (the first refusal of a minute per route, then one summary), none per request past
 * the limit; a request that verifies always passes. No timing is asserted.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { APP_INSTALL_LIMITS, AUTH_FAILURE_LIMITS } from '../../src/contract/limits.ts';
import { CONFIRM_ACTION } from '../../src/contract/triggers.ts';
import { hmacBase64 } from '../../src/lib/crypto.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { BASE, count, createTestEnv, type TestEnv } from '../helpers.ts';

// Hundreds of requests on a machine the suite shares.
setDefaultTimeout(60_000);

const SECRET = 'unsigned-flood-secret-canary-41c7';
const VARS: Record<string, string> = { HOOKRELAY_SHOPIFY_APP_SECRET: SECRET, HOOKRELAY_SHOPIFY_CLIENT_ID: 'unsigned-flood-client' };
const { perClient, windowMs } = AUTH_FAILURE_LIMITS;

const setup = () => createTestEnv({ env: (n) => VARS[n], shopifyAdminUrl: 'http://127.0.0.1:1' });

let running: RunningServer | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

const installRows = async (env: TestEnv) => ({ states: await count(env, 'oauth_states'), stores: await count(env, 'stores') });

describe('GET /auth/install', () => {
  test('500 installs over loopback write no row and no log line per request: 429 past the per-address limit, one line for the flood', async () => {
    const env = await setup();
    running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
    const before = env.log.lines.length;
    const statuses = new Map<number, number>();
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => fetch(`${running!.url}/auth/install?shop=shop-${round}-${i}.myshopify.com`, { redirect: 'manual' })),
      );
      for (const res of answers) {
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        await res.arrayBuffer();
      }
    }
    expect(Object.fromEntries(statuses)).toEqual({ 302: APP_INSTALL_LIMITS.perClient, 429: 500 - APP_INSTALL_LIMITS.perClient });
    expect(await installRows(env)).toEqual({ states: 0, stores: 0 });
    // A request line for each install answered, one line for the refusals: none per refused request.
    const lines = env.log.lines.slice(before);
    expect(lines.length).toBe(APP_INSTALL_LIMITS.perClient + 1);
    expect(lines.filter((l) => l.startsWith('info GET /auth/install 429'))).toEqual([]);
    expect(lines.filter((l) => l.startsWith('info GET /auth/install 302'))).toHaveLength(APP_INSTALL_LIMITS.perClient);
    expect(lines.filter((l) => l.startsWith('warn app install: refused with 429'))).toHaveLength(1);

    // The next minute the address may install again, and the flood's summary is written with its first request.
    env.clock.advance(APP_INSTALL_LIMITS.windowMs);
    const again = await fetch(`${running.url}/auth/install?shop=demo.myshopify.com`, { redirect: 'manual' });
    expect(again.status).toBe(302);
    const summary = env.log.lines.slice(before + lines.length);
    expect(summary[0]).toMatch(/^warn app install: 489 more refusal\(s\) from .* 489 answered 429, from 1 address\(es\), most from 127\.0\.0\.1 \(489\)$/);
    expect(summary).toHaveLength(2); // and the request line of the install
    expect(await installRows(env)).toEqual({ states: 0, stores: 0 });
  });

  test('another address is not limited by the first', async () => {
    const env = await setup();
    const get = (peer: string) => env.app.fetch(new Request(`${BASE}/auth/install?shop=demo.myshopify.com`), peer);
    for (let i = 0; i < APP_INSTALL_LIMITS.perClient; i++) expect((await get('203.0.113.9')).status).toBe(302);
    expect((await get('203.0.113.9')).status).toBe(429);
    expect((await get('198.51.100.9')).status).toBe(302);
  });
});

/** A forged request to each route Shopify signs, from `peer`. */
const forged: Record<string, (env: TestEnv, peer: string) => Promise<Response>> = {
  'shopify webhook': (env, peer) =>
    env.app.fetch(
      new Request(`${BASE}/shopify/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-shopify-hmac-sha256': hmacBase64('not-the-secret', '{}'),
          'x-shopify-topic': 'shop/redact',
          'x-shopify-shop-domain': 'demo.myshopify.com',
          'x-shopify-webhook-id': crypto.randomUUID(),
        },
        body: '{"shop_domain":"demo.myshopify.com"}',
      }),
      peer,
    ),
  'flow action run': (env, peer) =>
    env.app.fetch(
      new Request(`${BASE}${CONFIRM_ACTION.path}`, { method: 'POST', headers: { 'x-shopify-hmac-sha256': 'AAAA' }, body: '{"action_run_id":"x"}' }),
      peer,
    ),
  'flow lifecycle callback': (env, peer) => env.app.fetch(new Request(`${BASE}/flow/lifecycle`, { method: 'POST', body: '{}' }), peer),
  'app install callback': (env, peer) =>
    env.app.fetch(new Request(`${BASE}/auth/callback?code=c&shop=demo.myshopify.com&state=s&timestamp=1&hmac=${'0'.repeat(64)}`), peer),
};

describe('forged requests to the routes Shopify signs', () => {
  for (const [route, send] of Object.entries(forged)) {
    test(`${route}: 300 forged → 401 up to the per-address limit, then 429; two log lines per minute; a verified request from the address still passes`, async () => {
      const env = await setup();
      const before = env.log.lines.length;
      const statuses: number[] = [];
      for (let i = 0; i < 300; i++) {
        const res = await send(env, '203.0.113.77');
        statuses.push(res.status);
        if (res.status === 429) {
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
          const text = await res.text();
          expect(text).not.toContain(SECRET);
          if (route !== 'app install callback') expect(JSON.parse(text)).toMatchObject({ code: 'rate_limited', retryAfterSeconds: expect.any(Number) });
        }
      }
      expect(statuses.slice(0, perClient).every((s) => s === 401)).toBe(true);
      expect(statuses.slice(perClient).every((s) => s === 429)).toBe(true);
      // Another address is not limited by this one.
      expect((await send(env, '198.51.100.77')).status).toBe(401);
      const lines = env.log.lines.slice(before);
      expect(lines.length).toBe(1);
      expect(lines[0]).toStartWith(`warn ${route}: refused with 401 (`);
      expect(lines.join('\n')).not.toContain(SECRET);

      // A request that verifies is never refused by the limit (here: a lifecycle callback for a store this box lacks).
      const body = JSON.stringify({
        flow_trigger_definition_id: 'x',
        has_enabled_flow: true,
        shopify_domain: 'nobody.myshopify.com',
        timestamp: new Date(env.clock.now()).toISOString(),
      });
      const verified = await env.app.fetch(
        new Request(`${BASE}/flow/lifecycle`, { method: 'POST', headers: { 'x-shopify-hmac-sha256': hmacBase64(SECRET, body) }, body }),
        '203.0.113.77',
      );
      expect(verified.status).toBe(404);

      // The minute over: one summary line for the flood, and the address is answered 401 again.
      env.clock.advance(windowMs);
      expect((await send(env, '203.0.113.77')).status).toBe(401);
      const after = env.log.lines.slice(before + 1);
      expect(after).toHaveLength(2);
      expect(after[0]).toMatch(
        new RegExp(
          `^warn ${route}: 300 more refusal\\(s\\) from .* ${300 - perClient} answered 429, from 2 address\\(es\\), most from 203\\.0\\.113\\.77 \\(299\\)$`,
        ),
      );
      expect(after[1]).toStartWith(`warn ${route}: refused with 401 (`);
    });
  }

  test('without the app secret, Flow action runs and lifecycle callbacks answer 503 with one log line a minute that names the variable, not one per request', async () => {
    const env = await createTestEnv();
    for (const route of ['flow action run', 'flow lifecycle callback']) {
      for (let i = 0; i < 300; i++) expect((await forged[route]!(env, '203.0.113.90')).status).toBe(503);
    }
    expect(env.log.lines).toHaveLength(2);
    for (const line of env.log.lines)
      expect(line).toMatch(/^warn flow (action run|lifecycle callback): refused with 503 \(\w+_not_configured: set HOOKRELAY_SHOPIFY_APP_SECRET /);
  });

  test('without the app secret, Shopify webhooks answer 503 with one log line a minute that names the variable, not one per request', async () => {
    const env = await createTestEnv();
    for (let i = 0; i < 300; i++) expect((await forged['shopify webhook']!(env, '203.0.113.91')).status).toBe(503);
    expect(env.log.lines.filter((l) => l.includes('HOOKRELAY_SHOPIFY_APP_SECRET'))).toHaveLength(1);
    expect(env.log.lines).toHaveLength(1);
    expect(env.log.lines[0]).toMatch(/^warn shopify webhook: refused with 503 \(webhooks_not_configured: set HOOKRELAY_SHOPIFY_APP_SECRET /);
  });

  test('the routes share one failure count per address with the agent API (as /hooks does)', async () => {
    const env = await setup();
    const routes = Object.values(forged);
    for (let i = 0; i < perClient; i++) expect((await routes[i % routes.length]!(env, '192.0.2.44')).status).toBe(401);
    for (const send of routes) expect((await send(env, '192.0.2.44')).status).toBe(429);
    expect((await env.app.fetch(new Request(`${BASE}/agent/v1/plan-usage`, { headers: { authorization: 'Bearer hrg_nope' } }), '192.0.2.44')).status).toBe(429);
    // They write no audit row and take none of the address's audit allowance: the bearer failure gets its own.
    expect(await count(env, 'audit_log', "actor_kind = 'anonymous'")).toBe(1);
  });
});
