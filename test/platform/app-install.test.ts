/**
 * The Shopify app's install, up to the code exchange: /auth/install sends the merchant to Shopify's authorize page
 * with a single-use state bound to the shop and the browser; /auth/callback refuses what Shopify did not sign, what
 * is stale, what another browser began, a state used twice or made for another shop. Signatures are checked against
 * openssl's HMAC of the same query string.
 */
import { describe, expect, it } from 'bun:test';
import { callbackSigned } from '../../src/platform/shopify/app.ts';
import { createTestEnv, type TestEnv } from '../helpers.ts';

const CLIENT_ID = 'install-client-0001';
const SECRET = 'install-secret-canary-9d2f';
const BASE = 'http://local';

function openssl(secret: string, text: string): string {
  const r = Bun.spawnSync(['openssl', 'dgst', '-sha256', '-hmac', secret], { stdin: Buffer.from(text) });
  return r.stdout.toString().trim().split('= ').pop()!;
}

/** A callback query as Shopify signs it: every parameter but hmac, sorted by key, URL-encoded (%20 for spaces). */
function signed(params: Record<string, string>, secret = SECRET): URLSearchParams {
  const sorted = new URLSearchParams(Object.entries(params).sort(([a], [b]) => a.localeCompare(b)));
  const q = new URLSearchParams(params);
  q.set('hmac', openssl(secret, sorted.toString().replace(/\+/g, '%20')));
  return q;
}

async function env(config: { clientId?: string | null } = {}): Promise<TestEnv> {
  const vars: Record<string, string> = { HOOKRELAY_SHOPIFY_APP_SECRET: SECRET };
  if (config.clientId !== null) vars.HOOKRELAY_SHOPIFY_CLIENT_ID = config.clientId ?? CLIENT_ID;
  return createTestEnv({ env: (n) => vars[n], shopifyAdminUrl: 'http://127.0.0.1:1' });
}

const get = (e: TestEnv, path: string, headers: Record<string, string> = {}) => e.app.fetch(new Request(`${BASE}${path}`, { headers }));

describe('callbackSigned', () => {
  it('accepts the query Shopify signed (as openssl computes it) and nothing else', () => {
    const q = signed({ code: 'abc123', host: 'YWRtaW4uc2hvcGlmeS5jb20vc3RvcmUvZGVtbw', shop: 'demo.myshopify.com', state: 'st 1+2', timestamp: '1764100000' });
    expect(callbackSigned(q, SECRET)).toBe(true);
    expect(callbackSigned(q, 'another-secret')).toBe(false);
    const tampered = new URLSearchParams(q);
    tampered.set('shop', 'evil.myshopify.com');
    expect(callbackSigned(tampered, SECRET)).toBe(false);
    const missing = new URLSearchParams(q);
    missing.delete('hmac');
    expect(callbackSigned(missing, SECRET)).toBe(false);
    const upper = new URLSearchParams(q);
    upper.set('hmac', q.get('hmac')!.toUpperCase());
    expect(callbackSigned(upper, SECRET)).toBe(true);
  });
});

describe('GET /auth/install', () => {
  it("redirects to the shop's authorize page with the client id, scopes, callback and a state also set as a cookie", async () => {
    const e = await env();
    const res = await get(e, '/auth/install?shop=Demo.myshopify.com');
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin + to.pathname).toBe('http://127.0.0.1:1/admin/oauth/authorize');
    expect(to.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(to.searchParams.get('scope')).toBe('read_orders,read_customers,read_products');
    expect(to.searchParams.get('redirect_uri')).toBe(`${BASE}/auth/callback`);
    const state = to.searchParams.get('state')!;
    expect(state).toMatch(/^[0-9A-Za-z]{30,}$/);
    expect(res.headers.get('set-cookie')).toContain(`hookrelay_install=${state}; Path=/auth/callback`);
    expect(res.headers.get('set-cookie')).toContain('HttpOnly');
  });

  it('asks for a valid shop, and says so when the server has no app configured', async () => {
    const e = await env();
    for (const shop of ['', 'evil.com', 'a.myshopify.com.evil.com', 'x/y.myshopify.com']) {
      const res = await get(e, `/auth/install?shop=${encodeURIComponent(shop)}`);
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
    }
    const bare = await env({ clientId: null });
    const res = await get(bare, '/auth/install?shop=demo.myshopify.com');
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('HOOKRELAY_SHOPIFY_CLIENT_ID');
  });

  it('takes the client id `store set --app-client-id` stored when the variable is unset; the variable wins', async () => {
    const clientIdOf = async (e: TestEnv) =>
      new URL((await get(e, '/auth/install?shop=demo.myshopify.com')).headers.get('location')!).searchParams.get('client_id');
    const stored = await env({ clientId: null });
    stored.core.config.appClientId = 'stored-client-0002';
    expect(await clientIdOf(stored)).toBe('stored-client-0002');
    const both = await env();
    both.core.config.appClientId = 'stored-client-0002';
    expect(await clientIdOf(both)).toBe(CLIENT_ID);
  });
});

describe('GET /auth/callback refuses', () => {
  async function begun(e: TestEnv, shop = 'demo.myshopify.com') {
    const res = await get(e, `/auth/install?shop=${shop}`);
    return new URL(res.headers.get('location')!).searchParams.get('state')!;
  }
  const now = (e: TestEnv) => String(Math.floor(e.clock.now() / 1000));

  it('a forged signature, a stale timestamp, another browser, another shop, a state used twice — each 401, none reaching Shopify', async () => {
    const e = await env();
    const state = await begun(e);
    const ok = { code: 'c0de', shop: 'demo.myshopify.com', state, timestamp: now(e) };
    const cookie = { cookie: `hookrelay_install=${state}` };
    const tries: [string, URLSearchParams, Record<string, string>][] = [
      ['forged', signed(ok, 'not-the-secret'), cookie],
      ['stale', signed({ ...ok, timestamp: String(Math.floor(e.clock.now() / 1000) - 600) }), cookie],
      ['no cookie', signed(ok), {}],
      ['other cookie', signed(ok), { cookie: 'hookrelay_install=someone-else' }],
      ['other shop', signed({ ...ok, shop: 'other.myshopify.com' }), cookie],
    ];
    for (const [name, q, headers] of tries) {
      const res = await get(e, `/auth/callback?${q}`, headers);
      expect(res.status, name).toBe(401);
      const text = await res.text();
      expect(text, name).not.toContain('c0de');
      expect(text, name).not.toContain(SECRET);
    }
    // The state is still unused after those: the real one goes through to the code exchange (no Shopify here: 502).
    const real = await get(e, `/auth/callback?${signed(ok)}`, cookie);
    expect(real.status).toBe(502);
    // ... and cannot be used again.
    const again = await get(e, `/auth/callback?${signed(ok)}`, cookie);
    expect(again.status).toBe(401);
    expect(e.log.lines.join('\n')).not.toContain(SECRET);
  });

  it('a declined install says nothing changed', async () => {
    const e = await env();
    const state = await begun(e);
    const res = await get(e, `/auth/callback?error=access_denied&state=${state}&shop=demo.myshopify.com`, { cookie: `hookrelay_install=${state}` });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Nothing was changed');
    expect(await e.repo.getStoreByShop('demo.myshopify.com')).toBeNull();
  });
});
