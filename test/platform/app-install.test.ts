/**
 * The Shopify app's install, up to the code exchange: /auth/install sends the merchant to Shopify's authorize page
 * with a signed state bound to the shop and the browser, writing nothing; /auth/callback refuses what Shopify did not
 * sign, what is stale, what another browser began, a state used twice, expired, altered, or made for another shop,
 * and only a verified callback writes a row. Refusal pages name the shop given. Signatures are checked against
 * openssl's HMAC of the same query string.
 */
import { describe, expect, it } from 'bun:test';
import { callbackSigned } from '../../src/platform/shopify/app.ts';
import { count, createTestEnv, type TestEnv } from '../helpers.ts';

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
    expect(state).toMatch(/^[0-9a-z]+\.[0-9A-Za-z]{30,}\.[0-9A-Za-z_-]{43}$/);
    expect(res.headers.get('set-cookie')).toContain(`hookrelay_install=${state}; Path=/auth/callback`);
    expect(res.headers.get('set-cookie')).toContain('HttpOnly');
  });

  it('writes nothing and logs nothing: 500 installs leave oauth_states and stores empty', async () => {
    const e = await env();
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => get(e, `/auth/install?shop=store-${round}-${i}.myshopify.com`)));
      expect(answers.every((res) => res.status === 302)).toBe(true);
    }
    expect(await count(e, 'oauth_states')).toBe(0);
    expect(await count(e, 'stores')).toBe(0);
    expect(e.log.lines).toEqual([]);
  });

  it('names the shop given when it is not a store domain (escaped)', async () => {
    const e = await env();
    const res = await get(e, `/auth/install?shop=${encodeURIComponent('<b>evil</b>.com')}`);
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toContain('<code>&#60;b&#62;evil&#60;/b&#62;.com</code> is not a Shopify store domain');
    expect(text).not.toContain('<b>evil');
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
    // The state is still unused after those, and nothing was written: the real one goes through to the code
    // exchange (no Shopify here: 502), recorded as used.
    expect(await count(e, 'oauth_states')).toBe(0);
    const real = await get(e, `/auth/callback?${signed(ok)}`, cookie);
    expect(real.status).toBe(502);
    expect(await count(e, 'oauth_states')).toBe(1);
    // ... and cannot be used again.
    const again = await get(e, `/auth/callback?${signed(ok)}`, cookie);
    expect(again.status).toBe(401);
    expect(e.log.lines.join('\n')).not.toContain(SECRET);
  });

  it('a state altered, expired, or made with another secret — each 401; an expired state writes nothing', async () => {
    const e = await env();
    const state = await begun(e);
    const [expires, nonce, mac] = state.split('.') as [string, string, string];
    const other = await env();
    other.core.config.env = (n) => ({ HOOKRELAY_SHOPIFY_APP_SECRET: 'another-app-secret', HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT_ID })[n];
    const foreign = await begun(other);
    const flip = (s: string) => (s[0] === 'A' ? `B${s.slice(1)}` : `A${s.slice(1)}`);
    const tries: [string, string][] = [
      ['nonce altered', `${expires}.${flip(nonce)}.${mac}`],
      ['expiry moved', `${(parseInt(expires, 36) + 3600).toString(36)}.${nonce}.${mac}`],
      ['mac altered', `${expires}.${nonce}.${flip(mac)}`],
      ['another secret', foreign],
      ['not a state', 'x'.repeat(40)],
    ];
    for (const [name, s] of tries) {
      const res = await get(e, `/auth/callback?${signed({ code: 'c0de', shop: 'demo.myshopify.com', state: s, timestamp: now(e) })}`, {
        cookie: `hookrelay_install=${s}`,
      });
      expect(res.status, name).toBe(401);
    }
    e.clock.advance(10 * 60_000 + 1000);
    const late = await get(e, `/auth/callback?${signed({ code: 'c0de', shop: 'demo.myshopify.com', state, timestamp: now(e) })}`, {
      cookie: `hookrelay_install=${state}`,
    });
    expect(late.status).toBe(401);
    expect(await late.text()).toContain('It has expired');
    expect(await count(e, 'oauth_states')).toBe(0);
  });

  it("refusal pages give the shop's own install link (escaped), not a placeholder", async () => {
    const e = await env();
    const res = await get(e, `/auth/callback?${signed({ code: 'c', shop: 'Demo-Shop.myshopify.com', state: 's', timestamp: now(e) }, 'not-the-secret')}`);
    expect(res.status).toBe(401);
    const text = await res.text();
    expect(text).toContain('<a href="http://local/auth/install?shop=demo-shop.myshopify.com">http://local/auth/install?shop=demo-shop.myshopify.com</a>');
    expect(text).not.toContain('your-store');
    // Without a shop the page can only say how to write the link.
    const none = await get(e, '/auth/callback?code=c&state=s');
    expect(await none.text()).toContain('/auth/install?shop=your-store.myshopify.com');
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
