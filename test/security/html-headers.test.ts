/**
 * Every HTML answer (the docs page, the install's pages, the app's and billing's pages) carries a
 * Content-Security-Policy that runs no script and allows inline styles only by hash, says who may frame it
 * (Shopify's admin for the app's own pages, nobody for the rest, with X-Frame-Options DENY), and nosniff.
 */
import { describe, expect, it } from 'bun:test';
import { createHash } from 'node:crypto';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { BASE, createTestEnv, type TestEnv } from '../helpers.ts';

const CLIENT = { clientId: 'headers-app-client-0001', clientSecret: 'headers-app-secret-canary-1c9e' };
const SHOP = 'framed-store.myshopify.com';
let env: TestEnv | null = null;
const fake = fakeShopifyForFile({ app: CLIENT, shop: { domain: SHOP }, now: () => (env ? env.clock.now() : Date.now()) });

const SHOPIFY_ADMIN = 'frame-ancestors https://admin.shopify.com https://*.myshopify.com';

async function setup(billing: 'shopify-test' | 'off', configured = true) {
  const vars: Record<string, string> = configured
    ? { HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT.clientId, HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT.clientSecret, HOOKRELAY_BILLING: billing }
    : {};
  env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => vars[n] });
  return env;
}

/** The install as a browser does it, to its landing page. */
async function landing(e: TestEnv): Promise<Response> {
  const begin = await e.app.fetch(new Request(`${BASE}/auth/install?shop=${SHOP}`));
  const cookie = begin.headers.get('set-cookie')!.split(';')[0]!;
  const back = (await fetch(begin.headers.get('location')!, { redirect: 'manual' })).headers.get('location')!;
  return e.app.fetch(new Request(back, { headers: { cookie } }));
}

/** Checks one HTML answer's headers; `framing` is who may frame it. */
async function expectSecured(label: string, res: Response, framing: 'none' | 'shopify-admin') {
  expect([label, res.headers.get('content-type')]).toEqual([label, 'text/html; charset=utf-8']);
  const csp = res.headers.get('content-security-policy') ?? '';
  expect([label, csp]).toEqual([label, expect.stringContaining("default-src 'none'")]);
  expect(csp).not.toContain('unsafe');
  expect(csp).not.toContain('script-src');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  if (framing === 'none') {
    expect([label, csp]).toEqual([label, expect.stringContaining("frame-ancestors 'none'")]);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  } else {
    expect([label, csp]).toEqual([label, expect.stringContaining(SHOPIFY_ADMIN)]);
    // X-Frame-Options cannot name Shopify's admin: sent at all, it would refuse the frame Shopify needs.
    expect(res.headers.get('x-frame-options')).toBeNull();
  }
  const html = await res.text();
  expect(html).not.toContain('<script');
  expect(html).not.toMatch(/ on[a-z]+=/);
  // Each inline style is allowed by its hash, so the page looks as written without 'unsafe-inline'.
  for (const m of html.matchAll(/<style>([^<]*)<\/style>/g)) {
    expect(csp).toContain(`'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`);
  }
}

describe('security headers on every HTML answer', () => {
  it('the docs page (/ and /docs): no framing, its style by hash', async () => {
    const e = await setup('off');
    await expectSecured('/', await e.app.fetch(new Request(`${BASE}/`)), 'none');
    await expectSecured('/docs', await e.app.fetch(new Request(`${BASE}/docs`)), 'none');
  });

  it("the install's pages (/auth/install, /auth/callback and its landing page): no framing", async () => {
    const e = await setup('shopify-test');
    await expectSecured('/auth/install without a shop', await e.app.fetch(new Request(`${BASE}/auth/install`)), 'none');
    await expectSecured('/auth/callback refused', await e.app.fetch(new Request(`${BASE}/auth/callback?error=access_denied&shop=${SHOP}`)), 'none');
    await expectSecured('/auth/callback without its state', await e.app.fetch(new Request(`${BASE}/auth/callback?shop=${SHOP}&code=x`)), 'none');
    const landed = await landing(e);
    expect(landed.status).toBe(200);
    await expectSecured('the landing page', landed, 'none');
    const unconfigured = await setup('off', false);
    await expectSecured('/auth/install not set up', await unconfigured.app.fetch(new Request(`${BASE}/auth/install?shop=${SHOP}`)), 'none');
  });

  // /app is the merchant's seat now, with per-shop frame-ancestors and a nonce'd script: test/seat/embedded.test.ts.
  it("the billing pages (/billing/subscribe, /billing/return): only Shopify's admin may frame them", async () => {
    const e = await setup('shopify-test');
    await expectSecured('/billing/subscribe unsigned', await e.app.fetch(new Request(`${BASE}/billing/subscribe?shop=${SHOP}&plan=growth`)), 'shopify-admin');
    await expectSecured('/billing/return', await e.app.fetch(new Request(`${BASE}/billing/return?shop=${SHOP}`)), 'shopify-admin');
    const off = await setup('off');
    await expectSecured(
      '/billing/subscribe, billing off',
      await off.app.fetch(new Request(`${BASE}/billing/subscribe?shop=${SHOP}&plan=growth`)),
      'shopify-admin',
    );
  });
});
