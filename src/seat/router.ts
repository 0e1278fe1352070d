/**
 * The merchant's seat: every path under /app (embedded in the Shopify admin) and /console (self-hosted). It finds who
 * the human is — the ID token of an embedded page (verified on every request, no cookie), or a console session
 * (cookie, CSRF token on every write) — builds the page's SeatContext (its `call` is invoke with the human as
 * principal), dispatches to the page, and frames the answer (layout.ts) with the security headers of its face.
 */
import type { Core } from '../core.ts';
import { readCapped } from '../lib/body.ts';
import { randomBase62 } from '../lib/ids.ts';
import { refusalReason, unlogged } from '../lib/refusal-log.ts';
import { requestIdOf } from '../lib/request-ids.ts';
import { escapeHtml as esc } from '../lib/web.ts';
import type { EmbeddedApp } from '../platform/types.ts';
import { recordAdminAction } from '../ops/human-audit.ts';
import { seatCall, type SeatInvoke } from './call.ts';
import { APP_BRIDGE_SRC, renderBare, renderLayout, seatHeaders } from './layout.ts';
import { PAGES, type PageEntry } from './pages/index.ts';
import { csrfOf, csrfOk, SIGN_IN_COMMAND, sessionCookies, sessionOf, signIn, signOut } from './session.ts';
import type { Face, Human, PageResult, SeatContext, SeatPage } from './types.ts';

export interface SeatDeps {
  core: Core;
  invoke: SeatInvoke;
  /** The app embedded in the admin (the platform registry's), loaded with the first embedded request. */
  embedded(): Promise<EmbeddedApp>;
}

export interface Seat {
  /** Answers a path under /app or /console. `client`: the caller's address key, for the operations' limits. */
  fetch(req: Request, path: string, client: () => string | null): Promise<Response>;
  /** The 429 of an address past its failed sign-ins (the app counts the seat's 401s), framed as the path's face. */
  tooMany(req: Request, path: string, retryAfterSeconds: number): Response;
}

/** A refusal's reason for the app's per-minute refusal log (never the token), rather than a log line per refusal. */
function refused(reason: string, res: Response): Response {
  refusalReason.set(res, reason);
  return res;
}

/** A form a page posts: URL-encoded, at most this many bytes. */
const FORM_MAX_BYTES = 64 * 1024;
const SHOP = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;

export function createSeat(deps: SeatDeps): Seat {
  const { core } = deps;
  const loaded = new Map<string, Promise<SeatPage>>();
  const load = (e: PageEntry) => {
    let p = loaded.get(e.path);
    if (!p) loaded.set(e.path, (p = e.load().then((m) => m.page)));
    return p;
  };
  let embeddedApp: Promise<EmbeddedApp> | null = null;
  const embedded = () => (embeddedApp ??= deps.embedded());
  const secure = core.config.publicUrl.startsWith('https:');

  async function fetch(req: Request, path: string, client: () => string | null): Promise<Response> {
    const face: Face = path === '/app' || path.startsWith('/app/') ? 'embedded' : 'console';
    const base = face === 'embedded' ? '/app' : '/console';
    const sub = path.slice(base.length).replace(/\/+$/, '');
    const nonce = randomBase62(16);
    const url = new URL(req.url);
    // Before the token is verified, an embedded refusal is framed for the shop the admin's query names.
    const claimed = face === 'embedded' && SHOP.test(url.searchParams.get('shop') ?? '') ? url.searchParams.get('shop') : null;
    if (req.method !== 'GET' && req.method !== 'POST')
      return bare(405, 'Method not allowed', '<p>Use GET or POST.</p>', face, nonce, claimed, { Allow: 'GET, POST' });
    try {
      return face === 'embedded' ? await embeddedRequest(req, url, sub, nonce, client) : await consoleRequest(req, url, sub, nonce, client);
    } catch (err) {
      const support = `sup-${randomBase62(8).slice(0, 10)}`;
      core.log.error(
        `seat ${face} ${req.method} ${sub || '/'} failed request=${requestIdOf(req)} support=${support}: ${err instanceof Error ? err.name : 'error'}`,
      );
      return bare(500, 'Something went wrong', `<p>Something went wrong on our side. Quote ${esc(support)}.</p>`, face, nonce, claimed);
    }
  }

  /** A page of the seat's own (sign-in, refusals), with its face's headers. */
  function bare(
    status: number,
    title: string,
    main: string,
    face: Face,
    nonce: string,
    shop: string | null,
    headers: Record<string, string> | [string, string][] = {},
    head = '',
  ) {
    const embedded = face === 'embedded';
    const all = new Headers(headers);
    for (const [k, v] of Object.entries(seatHeaders({ nonce, embedded, embeddedShop: shop }))) all.set(k, v);
    return new Response(renderBare({ title, main, nonce, head }), { status, headers: all });
  }

  // ——— embedded: the ID token on every request ———

  async function embeddedRequest(req: Request, url: URL, sub: string, nonce: string, client: () => string | null): Promise<Response> {
    const claimedShop = SHOP.test(url.searchParams.get('shop') ?? '') ? url.searchParams.get('shop') : null;
    const app = await embedded();
    const clientId = app.clientId();
    const form = req.method === 'POST' ? await readForm(req) : null;
    if (form === 'too_large') return bare(413, 'Too large', '<p>The form is too large.</p>', 'embedded', nonce, claimedShop);
    if (form === 'unsupported')
      return bare(415, 'Unsupported form', '<p>Send the form as application/x-www-form-urlencoded.</p>', 'embedded', nonce, claimedShop);
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.get('authorization') ?? '')?.[1];
    const idToken = bearer ?? form?.get('id_token') ?? url.searchParams.get('id_token');
    if (!idToken) {
      // A navigation inside the admin's frame carries no token: App Bridge gives one, and the page loads again with it.
      if (req.method === 'GET' && clientId) return bounce(nonce, claimedShop, clientId);
      return bare(
        401,
        'Open hookrelay from your Shopify admin',
        '<p>This page opens inside the Shopify admin (Apps → hookrelay).</p>',
        'embedded',
        nonce,
        claimedShop,
      );
    }
    const verified = app.verify(idToken);
    if (!verified.ok) {
      return refused(
        `ID token refused: ${verified.why}`,
        bare(401, 'Not signed in', '<p>Your session token is not valid. Open hookrelay again from your Shopify admin.</p>', 'embedded', nonce, claimedShop, {
          'WWW-Authenticate': 'Bearer realm="hookrelay"',
        }),
      );
    }
    const { identity } = verified;
    // The admin names the shop in the query too: a token of another shop is not this page's.
    if (url.searchParams.has('shop') && url.searchParams.get('shop') !== identity.shop) {
      return refused(
        'ID token refused: another shop than the page names',
        bare(
          401,
          'Not signed in',
          '<p>This session token is for another store. Open hookrelay again from your Shopify admin.</p>',
          'embedded',
          nonce,
          claimedShop,
        ),
      );
    }
    const installed = await app.ensureInstalled(identity, idToken);
    if (!installed.ok) {
      const status = installed.status;
      return bare(
        status,
        status === 401 ? 'Not signed in' : 'hookrelay could not be set up',
        `<p>${esc(status === 401 ? 'Shopify refused the session token. Open hookrelay again from your Shopify admin.' : 'Shopify did not complete the setup; reload to try again.')}</p>`,
        'embedded',
        nonce,
        identity.shop,
      );
    }
    const human: Human = { face: 'embedded', store: installed.store, actor: `shopify-staff:${identity.staffUser}`, sessionId: identity.sessionId };
    return dispatch(req, url, sub, nonce, human, form, null, client, clientId, identity.shop, idToken);
  }

  /** The page that gets a fresh ID token from App Bridge and loads the URL again with it. */
  function bounce(nonce: string, shop: string | null, clientId: string): Response {
    const head = `<meta name="shopify-api-key" content="${esc(clientId)}"><script src="${APP_BRIDGE_SRC}"></script><script nonce="${esc(nonce)}">(async()=>{try{const t=await shopify.idToken();const u=new URL(location.href);u.searchParams.set('id_token',t);location.replace(u.toString())}catch(e){}})();</script>`;
    return bare(
      401,
      'Loading hookrelay',
      '<p>Loading…</p><p>Open hookrelay from your Shopify admin (Apps → hookrelay) if this page stays.</p>',
      'embedded',
      nonce,
      shop,
      {},
      head,
    );
  }

  // ——— console: the session cookie, CSRF on writes ———

  async function consoleRequest(req: Request, url: URL, sub: string, nonce: string, client: () => string | null): Promise<Response> {
    if (sub === '/sign-in' && req.method === 'GET') return signInPage(req, url, nonce);
    const session = await sessionOf(core, req);
    if (!session)
      return bare(
        401,
        'Sign in to the hookrelay console',
        `<p>Run ${SIGN_IN_COMMAND}, and open the link it prints (it works once, for a few minutes).</p>`,
        'console',
        nonce,
        null,
      );
    const store = await core.repo.getStore(session.storeId);
    if (!store || store.uninstalledAt != null) {
      return bare(
        403,
        'This store is closed',
        `<p>The app was uninstalled from ${esc(store?.shopDomain ?? 'this store')}; its console opens again once it is installed again.</p>`,
        'console',
        nonce,
        null,
      );
    }
    let form: URLSearchParams | null = null;
    if (req.method === 'POST') {
      const read = await readForm(req);
      if (read === 'too_large') return bare(413, 'Too large', '<p>The form is too large.</p>', 'console', nonce, null);
      if (read === 'unsupported') return bare(415, 'Unsupported form', '<p>Send the form as application/x-www-form-urlencoded.</p>', 'console', nonce, null);
      if (!csrfOk(session.token, read.get('csrf')))
        return bare(403, 'Refused', '<p>This form is stale or did not come from this console: reload the page and try again.</p>', 'console', nonce, null);
      form = read;
      if (sub === '/sign-out') {
        await signOut(core, session.token);
        await recordAdminAction(core, session.actor, 'signOutConsole', { storeId: store.id }, 'console', requestIdOf(req));
        return bare(
          200,
          'Signed out',
          '<p>You are signed out. Run <code>hookrelay console</code> for a new link.</p>',
          'console',
          nonce,
          null,
          sessionCookies('', 0, secure).map((c) => ['Set-Cookie', c]),
        );
      }
    }
    const human: Human = { face: 'console', store, actor: session.actor, sessionId: session.id };
    return dispatch(req, url, sub, nonce, human, form, csrfOf(session.token), client, null, null);
  }

  /**
   * Opens a sign-in link: used once, a session started. The answer sets the cookie and moves on to /console with a
   * refresh from this page (same site), since a SameSite=Strict cookie is not sent on a redirect begun elsewhere.
   */
  async function signInPage(req: Request, url: URL, nonce: string): Promise<Response> {
    const started = await signIn(core, url.searchParams.get('token') ?? '');
    if (!started) {
      return bare(
        401,
        'This sign-in link is not valid',
        '<p>It was used already, has expired, or was never made. Run <code>hookrelay console</code> for a new one.</p>',
        'console',
        nonce,
        null,
      );
    }
    await recordAdminAction(core, started.actor, 'signInConsole', { storeId: started.store.id }, 'console', requestIdOf(req));
    const head = '<meta http-equiv="refresh" content="0;url=/console">';
    return bare(
      200,
      'Signed in',
      `<p>Signed in to ${esc(started.store.shopDomain)} as ${esc(started.actor)}. <a href="/console">Open the console</a>.</p>`,
      'console',
      nonce,
      null,
      sessionCookies(started.token, started.expiresAt - core.clock.now(), secure).map((c) => ['Set-Cookie', c]),
      head,
    );
  }

  // ——— the page ———

  async function dispatch(
    req: Request,
    url: URL,
    sub: string,
    nonce: string,
    human: Human,
    form: URLSearchParams | null,
    csrf: string | null,
    client: () => string | null,
    clientId: string | null,
    shop: string | null,
    idToken: string | null = null,
  ): Promise<Response> {
    const face = human.face;
    const base = face === 'embedded' ? '/app' : '/console';
    const entry = findPage(sub);
    const ctx: SeatContext = {
      core,
      human,
      url,
      form,
      call: seatCall(deps.invoke, human, requestIdOf(req), client),
      base,
      csrf,
      nonce,
      publicUrl: core.config.publicUrl,
      embedded: face === 'embedded',
    };
    const headers = seatHeaders({ nonce, embedded: face === 'embedded', embeddedShop: shop });
    if (!entry)
      return new Response(renderLayout({ ctx, title: 'Not found', main: '<section><p>No such page.</p></section>', nav: PAGES, clientId }), {
        status: 404,
        headers,
      });
    const page = await load(entry);
    let result: PageResult;
    if (req.method === 'POST') {
      if (!page.post)
        return new Response(renderLayout({ ctx, title: 'Not allowed', main: '<section><p>This page takes no form.</p></section>', nav: PAGES, clientId }), {
          status: 405,
          headers: { ...headers, Allow: 'GET' },
        });
      result = await page.post(ctx);
    } else result = await page.get(ctx);
    if ('redirect' in result)
      return new Response(null, { status: 303, headers: { ...headers, Location: carried(sameOrigin(result.redirect, base), url, idToken) } });
    return new Response(renderLayout({ ctx, title: result.title, main: result.html, nav: PAGES, clientId }), { status: result.status ?? 200, headers });
  }

  function tooMany(req: Request, path: string, retryAfterSeconds: number): Response {
    const embedded = path === '/app' || path.startsWith('/app/');
    const shop = new URL(req.url).searchParams.get('shop') ?? '';
    const res = bare(
      429,
      'Too many tries',
      `<p>Too many sign-ins that did not verify came from your address. Wait ${retryAfterSeconds} seconds, then open hookrelay again.</p>`,
      embedded ? 'embedded' : 'console',
      randomBase62(16),
      embedded && SHOP.test(shop) ? shop : null,
      { 'Retry-After': String(retryAfterSeconds) },
    );
    unlogged.add(res);
    return res;
  }

  return { fetch, tooMany };
}

/** The page a path under the base is (its registered path, or the parent of an item's path), or null. */
function findPage(sub: string): PageEntry | null {
  let best: PageEntry | null = null;
  for (const e of PAGES) {
    const hit = e.path === '' ? sub === '' : sub === e.path || (e.items === true && sub.startsWith(`${e.path}/`));
    if (hit && (!best || e.path.length > best.path.length)) best = e;
  }
  return best;
}

/** A page's redirect stays in the seat: a path under its base, never another origin. */
function sameOrigin(location: string, base: string): string {
  return location.startsWith(`${base}`) && !location.startsWith('//') ? location : base;
}

/**
 * An embedded page's redirect after a write keeps the admin's query (embedded, shop, host) and the ID token the
 * write carried (valid for its minute), so the GET that follows needs no round trip to App Bridge.
 */
function carried(location: string, from: URL, idToken: string | null): string {
  if (idToken === null) return location;
  const to = new URL(location, from);
  for (const k of ['embedded', 'shop', 'host', 'locale']) {
    const v = from.searchParams.get(k);
    if (v && !to.searchParams.has(k)) to.searchParams.set(k, v);
  }
  to.searchParams.set('id_token', idToken);
  return `${to.pathname}${to.search}`;
}

/** A POST's URL-encoded form (the seat's pages' and the OAuth consent's). */
export async function readForm(req: Request): Promise<URLSearchParams | 'too_large' | 'unsupported'> {
  const type = req.headers.get('content-type') ?? '';
  if (type && !/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) return 'unsupported';
  const bytes = await readCapped(req, FORM_MAX_BYTES);
  if (!bytes) return 'too_large';
  return new URLSearchParams(new TextDecoder().decode(bytes));
}
