/**
 * The console's sign-in (src/seat/session.ts, router.ts): a single-use, short-lived link bound to a store opens a
 * session held in an HttpOnly, SameSite=Strict cookie; writes carry the session's CSRF token; sign out ends it;
 * sessions expire; an uninstalled store's console refuses. Sign-in is audited as the human.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { tagRequest } from '../../src/lib/request-ids.ts';
import { issueSignInLink, LINK_TTL_MS, SESSION_TTL_MS } from '../../src/seat/session.ts';
import { addStore, BASE, createTestEnv, rows, type TestEnv } from '../helpers.ts';

let env: TestEnv;
const SHOP = 'demo.myshopify.com';

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
});

const get = (path: string, cookie?: string) => env.app.fetch(new Request(`${BASE}${path}`, { headers: cookie ? { cookie } : {} }));
const post = (path: string, cookie: string, form: Record<string, string>) =>
  env.app.fetch(
    new Request(`${BASE}${path}`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    }),
  );
const pathOf = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

/** Opens a fresh sign-in link: the cookie pair to send back, and the Set-Cookie header as sent. */
async function signIn(actor = 'jane@laptop') {
  const link = await issueSignInLink(env.core, SHOP, actor);
  const res = await get(pathOf(link.url));
  expect(res.status).toBe(200);
  const setCookie = res.headers.get('set-cookie')!;
  return { cookie: setCookie.split(';')[0]!, setCookie, link, page: await res.text(), res };
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1];

describe('the console', () => {
  it('signs in once with a link: an HttpOnly, SameSite=Strict session cookie under /console, then Home', async () => {
    const { cookie, setCookie, link, page, res } = await signIn();
    expect(link.url).toStartWith(`${env.core.config.publicUrl.replace(/\/$/, '')}/console/sign-in?token=hrc_`);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Path=/console');
    expect(page).toContain('url=/console');
    // The same session cookie goes to the OAuth consent page (and nowhere else), which decides as the signed-in person.
    expect(res.headers.getSetCookie().map((c) => /Path=([^;]+)/.exec(c)?.[1])).toEqual(['/console', '/oauth/authorize']);
    const home = await get('/console', cookie);
    expect(home.status).toBe(200);
    const html = await home.text();
    expect(html).toContain('<nav');
    expect(html).toContain('jane@laptop');
    // A second use of the link is refused, and starts no session.
    const again = await get(pathOf(link.url));
    expect(again.status).toBe(401);
    expect(again.headers.get('set-cookie')).toBeNull();
  });

  it('stores only hashes of link and session tokens', async () => {
    const { cookie, link } = await signIn();
    const token = new URL(link.url).searchParams.get('token')!;
    const session = cookie.split('=')[1]!;
    const stored = JSON.stringify([...(await rows(env, 'SELECT * FROM console_links')), ...(await rows(env, 'SELECT * FROM console_sessions'))]);
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(session);
  });

  it('refuses an expired link and an expired session', async () => {
    const link = await issueSignInLink(env.core, SHOP, 'jane@laptop');
    env.clock.advance(LINK_TTL_MS + 1);
    expect((await get(pathOf(link.url))).status).toBe(401);
    const { cookie } = await signIn();
    env.clock.advance(SESSION_TTL_MS + 1);
    expect((await get('/console', cookie)).status).toBe(401);
  });

  it('refuses a page without a session, and a forged cookie', async () => {
    expect((await get('/console')).status).toBe(401);
    expect((await get('/console', `hookrelay_console=hrs_${'a'.repeat(32)}`)).status).toBe(401);
  });

  it('refuses a write without its CSRF token (403) and signs out with it', async () => {
    const { cookie } = await signIn();
    const csrf = csrfOf(await (await get('/console', cookie)).text());
    expect(csrf).toBeString();
    expect((await post('/console/sign-out', cookie, {})).status).toBe(403);
    expect((await post('/console/sign-out', cookie, { csrf: 'x'.repeat(43) })).status).toBe(403);
    expect((await get('/console', cookie)).status).toBe(200);
    const out = await post('/console/sign-out', cookie, { csrf: csrf! });
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie().map((c) => [/Path=([^;]+)/.exec(c)?.[1], c.includes('Max-Age=0')])).toEqual([
      ['/console', true],
      ['/oauth/authorize', true],
    ]);
    expect((await get('/console', cookie)).status).toBe(401);
  });

  it("checks CSRF on every page's write before the page sees it: 403 without, the page's own answer with", async () => {
    const { cookie } = await signIn();
    const csrf = csrfOf(await (await get('/console', cookie)).text())!;
    expect((await post('/console', cookie, { anything: '1' })).status).toBe(403);
    expect((await post('/console/events', cookie, {})).status).toBe(403);
    // Home takes no form: with its token the write reaches the router's page dispatch (405), not a refusal.
    expect((await post('/console', cookie, { csrf })).status).toBe(405);
    // Another session's token is not this one's.
    const other = await signIn('bob@laptop');
    const otherCsrf = csrfOf(await (await get('/console', other.cookie)).text())!;
    expect(otherCsrf).not.toBe(csrf);
    expect((await post('/console', cookie, { csrf: otherCsrf })).status).toBe(403);
  });

  it("closes an uninstalled store's console", async () => {
    const { cookie } = await signIn();
    const store = (await env.core.repo.getStoreByShop(SHOP))!;
    await env.core.repo.updateStore({ ...store, uninstalledAt: env.clock.now() });
    expect((await get('/console', cookie)).status).toBe(403);
  });

  it('audits sign-in and sign-out as the human', async () => {
    const { cookie } = await signIn('ops@box');
    const csrf = csrfOf(await (await get('/console', cookie)).text())!;
    await post('/console/sign-out', cookie, { csrf });
    const audit = await rows(
      env,
      `SELECT operation_id AS "op", actor_kind AS "kind", actor_label AS "label", grant_id AS "grantId", surface FROM audit_log ORDER BY at, id`,
    );
    const row = (op: string) => ({ op, kind: 'human', label: 'ops@box', grantId: null, surface: 'console' });
    expect(audit.filter((r) => r.op.endsWith('Console'))).toEqual([row('signInConsole'), row('signOutConsole')]);
    // Home's reads between them went through invoke as the same human.
    expect(audit.find((r) => r.op === 'getSetupState')).toEqual(row('getSetupState'));
    expect(new Set(audit.map((r) => `${r.kind} ${r.label}`))).toEqual(new Set(['human ops@box']));
  });

  it('answers 404 for a path under a page that takes none (only Endpoints has items under it)', async () => {
    const { cookie } = await signIn();
    for (const path of ['/console/agents/x', '/console/events/ev_x', '/console/audit/x/y', '/console/plan/x'])
      expect((await get(path, cookie)).status).toBe(404);
    expect((await get('/console/agents', cookie)).status).toBe(200);
  });

  it("records a sign-in under the request's own id", async () => {
    const link = await issueSignInLink(env.core, SHOP, 'ops@box');
    const req = new Request(`${BASE}${pathOf(link.url)}`);
    tagRequest(req, 'req_console_sign_in');
    expect((await env.app.fetch(req)).status).toBe(200);
    const audit = await rows(env, `SELECT request_id AS "requestId" FROM audit_log WHERE operation_id = 'signInConsole'`);
    expect(audit).toEqual([{ requestId: 'req_console_sign_in' }]);
  });

  it("sends the console's security headers: frame-ancestors 'none', script and style by nonce, no store", async () => {
    const { cookie } = await signIn();
    const res = await get('/console', cookie);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("frame-ancestors 'none'");
    const nonce = /script-src 'nonce-([0-9A-Za-z]+)'/.exec(csp)?.[1];
    expect(nonce).toBeString();
    expect(csp).not.toContain('unsafe');
    expect(csp).not.toContain('cdn.shopify.com');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).toContain(`<style nonce="${nonce}">`);
    expect(html).not.toContain('cdn.shopify.com');
  });
});
