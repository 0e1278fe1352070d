/**
 * The consent a merchant sees (src/seat/consent.ts) over the app's routes, with a real client metadata document on
 * loopback: GET /oauth/authorize binds the browser and hops (no session cookie on the client's cross-site
 * navigation) to the request's page; with a console session that page is the consent form (client unverified,
 * scopes in words, tiers no higher than asked, lifetime, label, CSRF), without one the user code and a page that
 * waits; POST decides as the signed-in person; continue sends the browser to the client's redirect_uri with code,
 * state and iss. Refused: an untrusted client (an error page, no redirect), a bad request from a trusted one (back
 * to the client), a POST without or with a wrong CSRF token, a tier above what was asked, another browser.
 */
import { afterAll, beforeEach, describe, expect, it } from 'bun:test';
import { CONNECT_CODE_MISSES, OAUTH_START_LIMITS } from '../../src/contract/limits.ts';
import { findAuthorization } from '../../src/oauth/authorization.ts';
import { page as agentsPage } from '../../src/seat/pages/agents.ts';
import { issueSignInLink } from '../../src/seat/session.ts';
import { addStore, BASE, createTestEnv, rows, type TestEnv } from '../helpers.ts';
import { authorizeQuery, loopbackClient, loopbackOAuth } from './_consent.ts';
import { direct, htmlOf } from './_seat.ts';

const SHOP = 'demo.myshopify.com';
const client = loopbackClient();
afterAll(() => client.stop());

let env: TestEnv;
beforeEach(async () => {
  env = await createTestEnv(loopbackOAuth());
  await addStore(env, { shopDomain: SHOP });
});

/** A browser's cookie jar, as far as these routes go: name → value, set by each answer. */
class Jar {
  private cookies = new Map<string, string>();
  take(res: Response): Response {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [name, ...v] = pair!.split('=');
      if (/Max-Age=0\b/.test(c)) this.cookies.delete(name!);
      else this.cookies.set(name!, v.join('='));
    }
    return res;
  }
  header(only?: (name: string) => boolean): string {
    return [...this.cookies]
      .filter(([k]) => !only || only(k))
      .map(([k, v]) => `${k}=${v}`)
      .join('; ');
  }
}

const get = async (jar: Jar, path: string, only?: (name: string) => boolean) =>
  jar.take(await env.app.fetch(new Request(`${BASE}${path}`, { headers: { cookie: jar.header(only) } })));
const post = async (jar: Jar, path: string, form: Record<string, string>) =>
  jar.take(
    await env.app.fetch(
      new Request(`${BASE}${path}`, {
        method: 'POST',
        headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      }),
    ),
  );

/** A console session in `jar` (its sign-in link opened). */
async function signIn(jar: Jar, actor = 'jane@laptop') {
  const link = new URL((await issueSignInLink(env.core, SHOP, actor)).url);
  expect((await get(jar, `${link.pathname}${link.search}`)).status).toBe(200);
}

/** A flow started in `jar`'s browser, as the client's cross-site navigation: the session cookie is not sent. */
async function start(jar: Jar, over: Record<string, string | undefined> = {}) {
  const q = authorizeQuery(client, env.core.config.publicUrl, over);
  const res = await get(jar, `/oauth/authorize?${q.query}`, (name) => name !== 'hookrelay_console');
  return { ...q, res, html: await res.text() };
}

/** The request id the hop page moves on to. */
const requestIdIn = (html: string) => /url=\/oauth\/authorize\?request=([^"&]+)"/.exec(html)![1]!;
const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

describe('GET /oauth/authorize', () => {
  it('binds the browser with an HttpOnly, SameSite=Lax cookie and hops, same site, to the request page', async () => {
    const jar = new Jar();
    const { res, html } = await start(jar);
    expect(res.status).toBe(200);
    const binding = res.headers.getSetCookie().find((c) => c.startsWith('hookrelay_oauth_'))!;
    expect(binding).toContain('HttpOnly');
    expect(binding).toContain('SameSite=Lax');
    expect(binding).toContain('Path=/oauth/authorize');
    expect(binding).not.toContain('Secure'); // the test's public URL is http
    const id = requestIdIn(html);
    expect(binding).toContain(`=${id};`);
    expect(html).toContain(`<meta http-equiv="refresh" content="0;url=/oauth/authorize?request=${id}">`);
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect((await findAuthorization(env.core, id))?.status).toBe('pending');
  });

  it('shows the consent form at once when the session cookie came along (a same-site navigation)', async () => {
    const jar = new Jar();
    await signIn(jar);
    const q = authorizeQuery(client, env.core.config.publicUrl);
    const res = await get(jar, `/oauth/authorize?${q.query}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('Night Shift Agent');
    expect(html).toContain('name="decision" value="approve"');
    expect(res.headers.getSetCookie().some((c) => c.startsWith('hookrelay_oauth_'))).toBe(true);
  });

  it('with a console session, the request page is the consent form: client unverified, scopes in words, tiers no higher than asked', async () => {
    const jar = new Jar();
    await signIn(jar);
    const { html } = await start(jar);
    const res = await get(jar, `/oauth/authorize?request=${requestIdIn(html)}`);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('Connect Night Shift Agent to demo.myshopify.com?');
    expect(page).toContain('unverified');
    expect(page).toContain('https://agents.example.test');
    expect(page).toContain(client.id);
    expect(page).toContain('create and change endpoints');
    expect(page).toContain(`${BASE}/agent/v1/mcp`);
    // endpoint:write was asked: observer and operator are offered, nothing above; the lowest is chosen.
    expect(page).toContain('value="observer" checked');
    expect(page).toContain('value="operator"');
    expect(page).not.toContain('value="recovery_operator"');
    expect(page).not.toContain('value="admin_assistant"');
    expect(page).toContain('name="ttl" value="30d"');
    expect(page).toContain('name="label" maxlength="100" value="Night Shift Agent"');
    expect(page).toContain(`name="csrf" value="${csrfIn(page)}"`);
    expect(page).toContain('You decide as jane@laptop');
    // The form's answer ends at the client's redirect_uri: the CSP lets a form lead there, and nowhere else.
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain(`form-action 'self' ${new URL(client.redirectUri).origin};`);
  });

  it('approved: POST (CSRF) → continue → the client redirect_uri with code, state and iss; a grant of the store with its client, audited as the person', async () => {
    const jar = new Jar();
    await signIn(jar, 'Jane Ops');
    const { html, state } = await start(jar);
    const id = requestIdIn(html);
    const shown = await get(jar, `/oauth/authorize?request=${id}`);
    const page = await shown.text();
    const decided = await post(jar, '/oauth/authorize', {
      csrf: csrfIn(page),
      request: id,
      decision: 'approve',
      tier: 'operator',
      ttl: '7d',
      label: 'night shift',
    });
    expect(decided.status).toBe(303);
    expect(decided.headers.get('location')).toBe(`/oauth/authorize/continue?request=${id}`);
    const back = await get(jar, decided.headers.get('location')!);
    expect(back.status).toBe(303);
    const to = new URL(back.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(client.redirectUri);
    expect(to.searchParams.get('code')).toBeTruthy();
    expect(to.searchParams.get('state')).toBe(state);
    expect(to.searchParams.get('iss')).toBe(BASE);
    // The request id (in the consent page's URL) and the code (in the last Location) leak in no Referer, nor a cache.
    for (const res of [shown, decided, back]) {
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    // The binding is spent with the answer.
    expect(back.headers.getSetCookie().some((c) => c.startsWith('hookrelay_oauth_') && c.includes('Max-Age=0'))).toBe(true);
    const ar = (await findAuthorization(env.core, id))!;
    expect(ar.status).toBe('finished');
    const grants = await env.core.repo.listGrants();
    expect(grants.map((g) => ({ tier: g.tier, label: g.label }))).toEqual([{ tier: 'operator', label: 'night shift' }]);
    expect(JSON.parse(grants[0]!.scopes).sort()).toEqual(['endpoint:write', 'event:read', 'setup:read']);
    const audit = await rows(
      env,
      `SELECT actor_kind AS "actorKind", actor_label AS "actorLabel", target_id AS "targetId", surface FROM audit_log WHERE operation_id = 'issueGrant'`,
    );
    expect(audit).toEqual([{ actorKind: 'human', actorLabel: 'Jane Ops', targetId: grants[0]!.id, surface: 'console' }]);
  });

  it('denied: the client hears access_denied with its state; nothing is issued', async () => {
    const jar = new Jar();
    await signIn(jar);
    const { html, state } = await start(jar);
    const id = requestIdIn(html);
    const page = await (await get(jar, `/oauth/authorize?request=${id}`)).text();
    const decided = await post(jar, '/oauth/authorize', { csrf: csrfIn(page), request: id, decision: 'deny' });
    const back = await get(jar, decided.headers.get('location')!);
    const to = new URL(back.headers.get('location')!);
    expect(to.searchParams.get('error')).toBe('access_denied');
    expect(to.searchParams.get('state')).toBe(state);
    expect(to.searchParams.get('code')).toBeNull();
    expect(await env.core.repo.listGrants()).toEqual([]);
  });

  it('refuses a POST without or with a wrong CSRF token (403), and nothing is issued', async () => {
    const jar = new Jar();
    await signIn(jar);
    const { html } = await start(jar);
    const id = requestIdIn(html);
    await get(jar, `/oauth/authorize?request=${id}`);
    for (const csrf of [undefined, 'x'.repeat(43)]) {
      const res = await post(jar, '/oauth/authorize', { ...(csrf ? { csrf } : {}), request: id, decision: 'approve', tier: 'observer', ttl: '1d' });
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('stale or did not come from this console');
    }
    expect((await findAuthorization(env.core, id))?.status).toBe('pending');
    expect(await env.core.repo.listGrants()).toEqual([]);
  });

  it('refuses a tier above what was asked and a lifetime over 90 days, showing the form again; nothing is issued', async () => {
    const jar = new Jar();
    await signIn(jar);
    const { html } = await start(jar);
    const id = requestIdIn(html);
    const csrf = csrfIn(await (await get(jar, `/oauth/authorize?request=${id}`)).text());
    const above = await post(jar, '/oauth/authorize', { csrf, request: id, decision: 'approve', tier: 'admin_assistant', ttl: '1d', label: 'x' });
    expect(above.status).toBe(400);
    const again = await above.text();
    expect(again).toContain('Not done');
    expect(again).toContain('name="decision" value="approve"');
    const long = await post(jar, '/oauth/authorize', { csrf, request: id, decision: 'approve', tier: 'observer', ttl: '91d' });
    expect(long.status).toBe(400);
    expect(await long.text()).toContain('90d');
    expect((await findAuthorization(env.core, id))?.status).toBe('pending');
    expect(await env.core.repo.listGrants()).toEqual([]);
  });

  it('a POST without a session is refused (401), and one for a request this browser did not start too (403)', async () => {
    const jar = new Jar();
    const { html } = await start(jar);
    const id = requestIdIn(html);
    expect((await post(jar, '/oauth/authorize', { request: id, decision: 'approve', tier: 'observer', ttl: '1d' })).status).toBe(401);
    const other = new Jar();
    await signIn(other);
    const csrf = csrfIn(await (await get(other, '/console')).text());
    expect((await post(other, '/oauth/authorize', { csrf, request: id, decision: 'approve', tier: 'observer', ttl: '1d' })).status).toBe(403);
    expect(await env.core.repo.listGrants()).toEqual([]);
  });

  it('without a session: the user code, the three ways to approve it, and a page that checks again by itself', async () => {
    const jar = new Jar();
    const { html } = await start(jar);
    const id = requestIdIn(html);
    const res = await get(jar, `/oauth/authorize?request=${id}`);
    expect(res.status).toBe(200);
    const page = await res.text();
    const ar = (await findAuthorization(env.core, id))!;
    expect(page).toContain(`<strong id="user-code">${ar.userCode}</strong>`);
    expect(page).toContain('<code>hookrelay console</code> where hookrelay runs');
    expect(page).toContain('Agents → "Approve a connection"');
    expect(page).toContain(`hookrelay grant approve ${ar.userCode}`);
    expect(page).toContain('unverified');
    // It stays still while it waits (no refresh): its script asks the status; Continue without it.
    expect(page).not.toContain('http-equiv="refresh"');
    expect(page).toContain(`"status":"/oauth/authorize/status?request=${id}"`);
    expect(page).toContain(`href="/oauth/authorize/continue?request=${id}"`);
    expect(page).not.toContain('name="decision"');
    const status = await get(jar, `/oauth/authorize/status?request=${id}`);
    expect(status.headers.get('cache-control')).toBe('no-store');
    expect(await status.json()).toEqual({ status: 'pending' });
    expect((await get(new Jar(), `/oauth/authorize/status?request=${id}`)).status).toBe(403);
    // Still pending: continue sends the browser back to wait.
    const early = await get(jar, `/oauth/authorize/continue?request=${id}`);
    expect(early.status).toBe(303);
    expect(early.headers.get('location')).toBe(`/oauth/authorize?request=${id}`);
  });

  it('without a session, goes on by itself once the code is approved elsewhere', async () => {
    const jar = new Jar();
    const { html, state } = await start(jar);
    const id = requestIdIn(html);
    const ar = (await findAuthorization(env.core, id))!;
    // The person approves the code on the Agents page of the console, in another browser.
    const other = new Jar();
    await signIn(other);
    const agents = await (await get(other, '/console/agents')).text();
    const found = await post(other, '/console/agents', { csrf: csrfIn(agents), action: 'connect', code: ar.userCode.toLowerCase() });
    expect(found.status).toBe(200);
    const choices = await found.text();
    expect(choices).toContain('Night Shift Agent');
    expect(choices).toContain('unverified');
    const approved = await post(other, '/console/agents', {
      csrf: csrfIn(choices),
      action: 'connect-decide',
      code: ar.userCode,
      decision: 'approve',
      tier: 'observer',
      ttl: '30d',
      label: 'Night Shift Agent',
    });
    expect(approved.status).toBe(303);
    expect(approved.headers.get('location')).toBe('/console/agents?done=connected');
    // The waiting page's next look moves on, to the client.
    expect(await (await get(jar, `/oauth/authorize/status?request=${id}`)).json()).toEqual({ status: 'approved' });
    const next = await get(jar, `/oauth/authorize?request=${id}`);
    expect(next.status).toBe(303);
    const back = await get(jar, next.headers.get('location')!);
    const to = new URL(back.headers.get('location')!);
    expect(to.searchParams.get('code')).toBeTruthy();
    expect(to.searchParams.get('state')).toBe(state);
  });

  it('says when the request expired', async () => {
    const jar = new Jar();
    const { html } = await start(jar);
    const id = requestIdIn(html);
    env.clock.advance(11 * 60_000);
    const res = await get(jar, `/oauth/authorize?request=${id}`);
    expect(res.status).toBe(410);
    expect(await res.text()).toContain('expired');
    // Going back, the client hears access_denied, so it stops waiting.
    const back = await get(jar, `/oauth/authorize/continue?request=${id}`);
    expect(back.status).toBe(303);
    expect(new URL(back.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
  });

  it('another browser cannot open or continue a request (403)', async () => {
    const { html } = await start(new Jar());
    const id = requestIdIn(html);
    const other = new Jar();
    await signIn(other);
    expect((await get(other, `/oauth/authorize?request=${id}`)).status).toBe(403);
    expect((await get(other, `/oauth/authorize/continue?request=${id}`)).status).toBe(403);
    expect((await get(other, '/oauth/authorize?request=oar_unknown')).status).toBe(403);
  });

  it('an untrusted client or redirect_uri gets an error page, never a redirect', async () => {
    for (const over of [{ redirect_uri: 'https://evil.example.test/cb' }, { client_id: 'https://10.0.0.1/client.json' }, { client_id: 'not a url' }]) {
      const { res, html } = await start(new Jar(), over);
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.getSetCookie()).toEqual([]);
      expect(html).toContain('This connection cannot start');
      expect(html).toContain('invalid');
    }
  });

  it('a bad request of a trusted client goes back to it with error, error_description, state and iss', async () => {
    const { res, state } = await start(new Jar(), { code_challenge_method: 'plain' });
    expect(res.status).toBe(303);
    const to = new URL(res.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(client.redirectUri);
    expect(to.searchParams.get('error')).toBeTruthy();
    expect(to.searchParams.get('error_description')).toBeTruthy();
    expect(to.searchParams.get('state')).toBe(state);
    expect(to.searchParams.get('iss')).toBe(BASE);
  });

  it('answers 405 to another method, 404 to another path under it', async () => {
    const res = await env.app.fetch(new Request(`${BASE}/oauth/authorize`, { method: 'PUT' }));
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST');
    expect((await env.app.fetch(new Request(`${BASE}/oauth/authorize/continue`, { method: 'POST' }))).status).toBe(405);
    expect((await env.app.fetch(new Request(`${BASE}/oauth/authorize/elsewhere`))).status).toBe(404);
  });
});

describe('Agents page: Approve a connection (embedded, the ID-token human)', () => {
  it('looks the code up, shows the client unverified and the tiers offered, and approves as the staff user', async () => {
    const d = await direct(loopbackOAuth());
    env = d.env;
    const jar = new Jar();
    const { html } = await start(jar, { scope: 'setup:read event:read' });
    const ar = (await findAuthorization(env.core, requestIdIn(html)))!;
    const found = htmlOf(await d.post(agentsPage, { action: 'connect', code: ar.userCode.replace('-', '').toLowerCase() }));
    expect(found).toContain('Night Shift Agent');
    expect(found).toContain('unverified');
    expect(found).toContain('value="observer" checked');
    expect(found).not.toContain('value="operator"');
    expect(found).not.toContain('name="csrf"');
    const decided = await d.post(agentsPage, { action: 'connect-decide', code: ar.userCode, decision: 'approve', tier: 'observer', ttl: '1d', label: '' });
    expect(decided).toEqual({ redirect: '/app/agents?done=connected' });
    expect((await findAuthorization(env.core, ar.id))?.status).toBe('approved');
    const audit = await rows(env, `SELECT actor_label AS "actorLabel", surface FROM audit_log WHERE operation_id = 'issueGrant'`);
    expect(audit).toEqual([{ actorLabel: 'shopify-staff:42', surface: 'embedded' }]);
    // Listed with its client, unverified.
    const listed = htmlOf(await d.get(agentsPage));
    expect(listed).toContain('Night Shift Agent');
    expect(listed).toContain('unverified');
  });

  it('refuses a tier above what was asked, an unknown code and a decided request, saying why', async () => {
    const d = await direct(loopbackOAuth());
    env = d.env;
    const { html } = await start(new Jar(), { scope: 'setup:read event:read' });
    const ar = (await findAuthorization(env.core, requestIdIn(html)))!;
    const above = await d.post(agentsPage, { action: 'connect-decide', code: ar.userCode, decision: 'approve', tier: 'operator', ttl: '1d' });
    expect('status' in above && above.status).toBe(400);
    expect(htmlOf(above)).toContain('Not done');
    expect(htmlOf(above)).toContain('name="decision" value="approve"');
    expect(await env.core.repo.listGrants()).toEqual([]);
    const unknown = await d.post(agentsPage, { action: 'connect', code: 'ZZZZ-ZZZZ' });
    expect('status' in unknown && unknown.status).toBe(404);
    expect(htmlOf(unknown)).toContain('No connection request has this code');
    expect(await d.post(agentsPage, { action: 'connect-decide', code: ar.userCode, decision: 'deny' })).toEqual({ redirect: '/app/agents?done=refused' });
    expect((await findAuthorization(env.core, ar.id))?.status).toBe('denied');
    const decided = await d.post(agentsPage, { action: 'connect', code: ar.userCode });
    expect('status' in decided && decided.status).toBe(409);
    expect(htmlOf(decided)).toContain('nothing left to decide');
  });

  it('counts a wrong code sent with no decision as a miss too: that form cannot test codes past the limit', async () => {
    const d = await direct(loopbackOAuth());
    env = d.env;
    const { html } = await start(new Jar(), { scope: 'setup:read event:read' });
    const ar = (await findAuthorization(env.core, requestIdIn(html)))!;
    for (let i = 0; i < CONNECT_CODE_MISSES.perStore; i++) {
      const wrong = await d.post(agentsPage, { action: 'connect-decide', code: `ZZZZ-ZZZ${'BCDFGHJKLM'[i]}` });
      expect('status' in wrong && wrong.status).toBe(404);
    }
    const locked = await d.post(agentsPage, { action: 'connect-decide', code: ar.userCode });
    expect('status' in locked && locked.status).toBe(429);
    expect((await findAuthorization(env.core, ar.id))?.status).toBe('pending');
  });

  it('refuses every code for the rest of the window once a store has entered CONNECT_CODE_MISSES.perStore wrong ones', async () => {
    const d = await direct(loopbackOAuth());
    env = d.env;
    const { html } = await start(new Jar(), { scope: 'setup:read event:read' });
    const ar = (await findAuthorization(env.core, requestIdIn(html)))!;
    for (let i = 0; i < CONNECT_CODE_MISSES.perStore; i++) {
      const wrong = await d.post(agentsPage, { action: i % 2 ? 'connect' : 'connect-decide', code: `ZZZZ-ZZZ${'BCDFGHJKLM'[i]}`, decision: 'deny' });
      expect('status' in wrong && wrong.status).toBe(404);
    }
    // The right code now too, on either form: a run of guesses cannot go on, whichever form it uses.
    for (const action of ['connect', 'connect-decide']) {
      const locked = await d.post(agentsPage, { action, code: ar.userCode, decision: 'deny' });
      expect('status' in locked && locked.status).toBe(429);
      expect(htmlOf(locked)).toContain('codes named no connection request; try again in 10 minutes');
    }
    expect((await findAuthorization(env.core, ar.id))?.status).toBe('pending');
    // The window over (the request with it: both last 10 minutes), a new request's code is looked up again.
    env.clock.advance(CONNECT_CODE_MISSES.windowMs);
    const next = (await findAuthorization(env.core, requestIdIn((await start(new Jar(), { scope: 'setup:read event:read' })).html)))!;
    const found = await d.post(agentsPage, { action: 'connect', code: next.userCode });
    expect(htmlOf(found)).toContain('Night Shift Agent');
  });
});

describe('the client as it names itself', () => {
  it('is text on the consent page, never markup; a long name is cut to a label for the default', async () => {
    const name = `<img src=x onerror=alert(1)>${'n'.repeat(150)}`;
    const hostile = loopbackClient({ name, uri: 'https://agents.example.test/"><script>alert(1)</script>' });
    try {
      const jar = new Jar();
      await signIn(jar);
      const q = authorizeQuery(hostile, env.core.config.publicUrl);
      const first = await get(jar, `/oauth/authorize?${q.query}`, (n) => n !== 'hookrelay_console');
      const page = await (await get(jar, `/oauth/authorize?request=${requestIdIn(await first.text())}`)).text();
      expect(page).not.toContain('<img src=x');
      expect(page).not.toContain('<script>alert');
      expect(page).toContain('&#60;img src=x onerror=alert(1)&#62;');
      const label = /name="label" maxlength="100" value="([^"]*)"/.exec(page)![1]!.replace(/&#\d+;/g, '.');
      expect(label.length).toBe(100);
    } finally {
      hostile.stop();
    }
  });
});

describe('continue, twice', () => {
  it('the code goes to the first continue only; a second (another tab of the browser) reads that it is finished', async () => {
    const jar = new Jar();
    await signIn(jar);
    const { html } = await start(jar);
    const id = requestIdIn(html);
    const csrf = csrfIn(await (await get(jar, `/oauth/authorize?request=${id}`)).text());
    await post(jar, '/oauth/authorize', { csrf, request: id, decision: 'approve', tier: 'observer', ttl: '1d' });
    const cookie = jar.header();
    const both = await Promise.all([1, 2].map(() => env.app.fetch(new Request(`${BASE}/oauth/authorize/continue?request=${id}`, { headers: { cookie } }))));
    const codes = both.map((r) => r.headers.get('location')).filter((l) => l && new URL(l).searchParams.has('code'));
    expect(codes.length).toBe(1);
    expect(both.map((r) => r.status).sort()).toEqual([303, 410]);
  });
});

describe('served over https', () => {
  it('marks the binding cookie Secure', async () => {
    env = await createTestEnv({ ...loopbackOAuth(), publicUrl: 'https://relay.example.test' });
    await addStore(env, { shopDomain: SHOP });
    const { res } = await start(new Jar());
    expect(res.status).toBe(200);
    const binding = res.headers.getSetCookie().find((c) => c.startsWith('hookrelay_oauth_'))!;
    expect(binding).toEndWith('; Secure');
  });
});

describe('starts per address', () => {
  it('answers 429 past OAUTH_START_LIMITS from one address (another address, and a started request, go on)', async () => {
    const from = async (peer: string, path: string) => env.app.fetch(new Request(`${BASE}${path}`), peer);
    const q = () => `/oauth/authorize?${authorizeQuery(client, env.core.config.publicUrl).query}`;
    let first = '';
    for (let i = 0; i < OAUTH_START_LIMITS.perClient; i++) {
      const res = await from('203.0.113.7', q());
      expect(res.status).toBe(200);
      first ||= requestIdIn(await res.text());
    }
    const over = await from('203.0.113.7', q());
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await over.text()).toContain('Too many connection requests');
    expect((await from('198.51.100.2', q())).status).toBe(200);
    // A request already started is not a start: its page still answers (here 403: no binding cookie was sent).
    expect((await from('203.0.113.7', `/oauth/authorize?request=${first}`)).status).toBe(403);
    env.clock.advance(OAUTH_START_LIMITS.windowMs);
    expect((await from('203.0.113.7', q())).status).toBe(200);
  });
});
