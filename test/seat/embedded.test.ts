/**
 * The embedded face (/app): the ID token App Bridge gives the page, verified on every request (HS256 with the app's
 * client secret, aud, exp/nbf, dest an installed shop), no cookie; the first load of a shop hookrelay has no token
 * for exchanges it (managed install + token exchange) and renders; per-shop frame-ancestors on every HTML answer.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { BASE, createTestEnv, rows, type TestEnv } from '../helpers.ts';

const CLIENT = { clientId: 'embedded-app-client-0001', clientSecret: 'embedded-app-secret-canary-7f3a' };
const SHOP = 'seat-store.myshopify.com';
let env: TestEnv | null = null;
const fake = fakeShopifyForFile({ app: CLIENT, shop: { domain: SHOP }, now: () => (env ? env.clock.now() : Date.now()) });
const vars: Record<string, string> = { HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT.clientId, HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT.clientSecret };

let e: TestEnv;
beforeEach(async () => {
  e = env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => vars[n] });
});

const firstLoad = (path = '/app', sub?: string) => e.app.fetch(new Request(fake.embeddedAppUrl(`${BASE}${path}`, { sub })));
const withBearer = (path: string, token: string) => e.app.fetch(new Request(`${BASE}${path}`, { headers: { authorization: `Bearer ${token}` } }));
const exchanges = () => fake.tokenRequests.filter((r) => r.grantType === 'token_exchange');

/** The per-shop frame-ancestors of an embedded HTML answer, and no X-Frame-Options (it would refuse the admin). */
function expectFramedBy(res: Response, shop: string) {
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  const csp = res.headers.get('content-security-policy') ?? '';
  const ancestors = csp
    .split(';')
    .map((d) => d.trim())
    .filter((d) => d.startsWith('frame-ancestors'));
  expect(ancestors).toEqual([`frame-ancestors https://${shop} https://admin.shopify.com`]);
  expect(res.headers.get('x-frame-options')).toBeNull();
}

describe('the embedded seat', () => {
  it('installs by token exchange on the first load, renders Home in place, and exchanges once', async () => {
    const res = await firstLoad();
    expect(res.status).toBe(200);
    expectFramedBy(res, SHOP);
    const html = await res.text();
    expect(html).toContain(`<meta name="shopify-api-key" content="${CLIENT.clientId}">`);
    expect(html).toContain('<script src="https://cdn.shopify.com/shopifycloud/app-bridge.js"></script>');
    expect(html).toContain('https://cdn.shopify.com/shopifycloud/polaris.js');
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(exchanges()).toEqual([expect.objectContaining({ outcome: 'issued', clientId: CLIENT.clientId })]);
    const store = (await e.core.repo.getStoreByShop(SHOP))!;
    expect(store).toMatchObject({ credentialMode: 'oauth', destination: 'shopify', uninstalledAt: null });
    const link = (await e.core.repo.links.get(store.id))!;
    expect(link.tokenSealed).toBeString();
    expect(link.refreshSealed).toBeString();
    // Later requests carry the token in Authorization: no exchange again.
    const later = await withBearer(`/app?shop=${SHOP}`, fake.idToken());
    expect(later.status).toBe(200);
    expectFramedBy(later, SHOP);
    expect(exchanges()).toHaveLength(1);
  });

  it('brings an uninstalled store back by token exchange', async () => {
    expect((await firstLoad()).status).toBe(200);
    const store = (await e.core.repo.getStoreByShop(SHOP))!;
    await e.core.repo.updateStore({ ...store, uninstalledAt: e.clock.now() });
    await e.core.repo.links.clearToken(store.id, e.clock.now());
    expect((await firstLoad()).status).toBe(200);
    expect(exchanges()).toHaveLength(2);
    expect((await e.core.repo.getStoreByShop(SHOP))!.uninstalledAt).toBeNull();
  });

  it('refuses forged, expired, not-yet-valid, wrong-audience and other-shop ID tokens with 401, framed per shop', async () => {
    expect((await firstLoad()).status).toBe(200);
    const now = Math.floor(e.clock.now() / 1000);
    const refused: Record<string, string> = {
      forged: fake.idToken({ signWith: 'not-the-app-secret' }),
      expired: fake.idToken({ over: { exp: now - 30, nbf: now - 90, iat: now - 90 } }),
      'not yet valid': fake.idToken({ over: { nbf: now + 120, exp: now + 180 } }),
      'wrong aud': fake.idToken({ over: { aud: 'another-app-client' } }),
      'other shop (dest)': fake.idToken({ over: { dest: 'https://other-store.myshopify.com', iss: 'https://other-store.myshopify.com/admin' } }),
      'iss and dest differ': fake.idToken({ over: { iss: 'https://other-store.myshopify.com/admin' } }),
      'no staff user': fake.idToken({ over: { sub: null } }),
      'alg none': `${Buffer.from('{"alg":"none"}').toString('base64url')}.${fake.idToken().split('.')[1]}.`,
      garbage: 'not-a-jwt',
    };
    for (const [why, token] of Object.entries(refused)) {
      const res = await withBearer(`/app?shop=${SHOP}`, token);
      expect([why, res.status]).toEqual([why, 401]);
      expectFramedBy(res, SHOP);
      expect(await res.text()).not.toContain('<nav');
    }
    // A valid token of this shop on a page that names another shop.
    const other = await withBearer('/app?shop=other-store.myshopify.com', fake.idToken());
    expect(other.status).toBe(401);
    expectFramedBy(other, 'other-store.myshopify.com');
    // A token for a shop with no store: the exchange is refused by Shopify (the fake is another shop), no store made.
    const otherToken = fake.idToken({ over: { dest: 'https://other-store.myshopify.com', iss: 'https://other-store.myshopify.com/admin' } });
    expect((await withBearer('/app', otherToken)).status).toBe(401);
    expect(await e.core.repo.getStoreByShop('other-store.myshopify.com')).toBeNull();
    expect(exchanges().map((r) => r.outcome)).toEqual(['issued', 'invalid_subject_token']);
  });

  it('answers 401 when Shopify refuses the exchange of a token that just expired (within our skew)', async () => {
    const now = Math.floor(e.clock.now() / 1000);
    const token = fake.idToken({ over: { exp: now + 1 } });
    e.clock.advance(2_000);
    const res = await e.app.fetch(new Request(`${BASE}/app?embedded=1&shop=${SHOP}&id_token=${token}`));
    expect(res.status).toBe(401);
    expect(exchanges().map((r) => r.outcome)).toEqual(['invalid_subject_token']);
    expect(await e.core.repo.getStoreByShop(SHOP)).toBeNull();
  });

  it('asks App Bridge for a token when a navigation carries none, framed per shop', async () => {
    const res = await e.app.fetch(new Request(`${BASE}/app/events?embedded=1&shop=${SHOP}&host=abc`));
    expect(res.status).toBe(401);
    expectFramedBy(res, SHOP);
    const html = await res.text();
    expect(html).toContain('shopify.idToken()');
    const nonce = /'nonce-([0-9A-Za-z]+)'/.exec(res.headers.get('content-security-policy')!)![1];
    expect(html).toContain(`<script nonce="${nonce}">`);
  });

  it("acts as the staff user: a page's calls are audited actorKind human, shopify-staff:<sub>", async () => {
    expect((await firstLoad('/app', '9001')).status).toBe(200);
    const audit = await rows(e, `SELECT DISTINCT actor_kind AS "kind", actor_label AS "label", grant_id AS "grantId", surface FROM audit_log`);
    expect(audit).toEqual([{ kind: 'human', label: 'shopify-staff:9001', grantId: null, surface: 'embedded' }]);
  });
});

describe('shopify.app.toml', () => {
  it('declares an embedded app installed by Shopify (managed installation) with its scopes', async () => {
    const toml = Bun.TOML.parse(await Bun.file(new URL('../../shopify/shopify.app.toml', import.meta.url)).text()) as {
      embedded: boolean;
      application_url: string;
      access_scopes: { scopes: string; use_legacy_install_flow: boolean };
    };
    expect(toml.embedded).toBe(true);
    expect(new URL(toml.application_url).pathname).toBe('/app');
    expect(toml.access_scopes).toEqual({ scopes: 'read_orders,read_customers,read_products', use_legacy_install_flow: false });
  });
});

describe('the embedded seat, further answers', () => {
  it('frames a page that does not exist per shop too, and limits failed sign-ins per address (429 past 30 a minute)', async () => {
    expect((await firstLoad()).status).toBe(200);
    const missing = await withBearer(`/app/no-such-page?shop=${SHOP}`, fake.idToken());
    expect(missing.status).toBe(404);
    expectFramedBy(missing, SHOP);
    const forged = fake.idToken({ signWith: 'not-the-app-secret' });
    const statuses: number[] = [];
    for (let i = 0; i < 32; i++) {
      const res = await e.app.fetch(new Request(`${BASE}/app?shop=${SHOP}`, { headers: { authorization: `Bearer ${forged}` } }), '203.0.113.9');
      statuses.push(res.status);
    }
    expect(statuses.slice(0, 30)).toEqual(Array(30).fill(401));
    expect(statuses.at(-1)).toBe(429);
    const limited = await e.app.fetch(new Request(`${BASE}/app?shop=${SHOP}`, { headers: { authorization: `Bearer ${forged}` } }), '203.0.113.9');
    expect(limited.status).toBe(429);
    expectFramedBy(limited, SHOP);
    // Another address is not limited by it.
    expect(
      (await e.app.fetch(new Request(`${BASE}/app?shop=${SHOP}`, { headers: { authorization: `Bearer ${fake.idToken()}` } }), '203.0.113.10')).status,
    ).toBe(200);
  });
});

describe('the embedded seat mends a store', () => {
  it('whose refresh token Shopify refused (reinstall required): the next load exchanges its ID token and resumes', async () => {
    expect((await firstLoad()).status).toBe(200);
    const store = (await e.core.repo.getStoreByShop(SHOP))!;
    const now = e.clock.now();
    await e.core.repo.links.pause(store.id, { reason: 'credentials', code: 'SVC_REINSTALL_REQUIRED', message: 'refused' }, now, 0, now + 60_000);
    expect((await withBearer(`/app?shop=${SHOP}`, fake.idToken())).status).toBe(200);
    expect(exchanges()).toHaveLength(2);
    expect((await e.core.repo.links.get(store.id))!.pauseReason).toBeNull();
  });
});

describe("the fake Shopify's ID tokens for a browser", () => {
  it('GET /_fake/id-token gives a stand-in App Bridge a fresh token the seat accepts', async () => {
    expect((await firstLoad()).status).toBe(200);
    const res = await fetch(`${fake.url}/_fake/id-token?sub=7`);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const { idToken } = (await res.json()) as { idToken: string };
    expect((await withBearer(`/app?shop=${SHOP}`, idToken)).status).toBe(200);
  });
});
