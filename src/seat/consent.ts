/**
 * The consent a merchant sees when an agent's client connects by URL (issue 38; DESIGN.md "The merchant's seat and
 * agent consent"). GET /oauth/authorize starts the request (src/oauth/authorization.ts) and binds this browser to it
 * with a cookie; with a console session it shows the consent form, and POST /oauth/authorize decides as the signed-in
 * person (CSRF-checked as the console's writes are). Without a session it shows the request's user code and where to
 * approve it (the console, the App Home's Agents page, `hookrelay grant approve`), and waits. Once decided,
 * GET /oauth/authorize/continue sends the browser that started the request back to the client's redirect_uri.
 *
 * The MCP client sends the person here from another site: a SameSite=Strict session cookie is not sent on that first
 * navigation, so a request without it answers a page that moves on by itself (same site now) to the request's own
 * URL, `/oauth/authorize?request=ID`, where the cookie is read. Framed as the console: no CDN, no framing.
 */
import { AUTH_FAILURE_LIMITS, OAUTH_START_LIMITS } from '../contract/limits.ts';
import type { Core } from '../core.ts';
import { AuthFailureLimiter, type ClientOf } from '../lib/auth-failures.ts';
import { constantTimeEqual, sha256Hex } from '../lib/crypto.ts';
import { randomBase62 } from '../lib/ids.ts';
import { RefusalLog, unlogged } from '../lib/refusal-log.ts';
import { requestIdOf } from '../lib/request-ids.ts';
import { cookieOf } from '../lib/web.ts';
import {
  approveAuthorization,
  type AuthorizationRequest,
  authorizationRedirect,
  denyAuthorization,
  finishAuthorization,
  findAuthorization,
  OAuthError,
  startAuthorization,
} from '../oauth/authorization.ts';
import {
  CONSENT_DEFAULT_TTL,
  choiceFields,
  choiceOf,
  type ConsentChoice,
  decisionButtons,
  defaultChoice,
  notDone,
  refusalOf,
  requestFacts,
} from './consent-view.ts';
import { html, trusted, type Html } from './html.ts';
import { renderBare, seatHeaders } from './layout.ts';
import { readForm } from './router.ts';
import { csrfOf, csrfOk, SIGN_IN_COMMAND, sessionOf } from './session.ts';
import type { Human } from './types.ts';

/** How often the waiting page's script asks whether the request was decided. */
const WAIT_POLL_SECONDS = 3;

export interface Consent {
  /** Answers a path under /oauth/authorize. `client`: the caller's address key, for the limit on starts. */
  fetch(req: Request, path: string, client: ClientOf): Promise<Response>;
}

/** The cookie binding a browser to a request it started: one per request, so two flows in one browser both finish. */
const bindingName = (id: string) => `hookrelay_oauth_${sha256Hex(id).slice(0, 16)}`;

const requestLink = (id: string) => `/oauth/authorize?request=${encodeURIComponent(id)}`;
const continueLink = (id: string) => `/oauth/authorize/continue?request=${encodeURIComponent(id)}`;
const statusLink = (id: string) => `/oauth/authorize/status?request=${encodeURIComponent(id)}`;

export function createConsent(core: Core): Consent {
  const secure = core.config.publicUrl.startsWith('https:');
  const starts = new AuthFailureLimiter(core.clock, { ...AUTH_FAILURE_LIMITS, ...OAUTH_START_LIMITS, auditedPerClient: 0, auditedPerWindow: 0 });
  const refusals = new RefusalLog(core.clock, core.log, OAUTH_START_LIMITS.windowMs);

  async function fetch(req: Request, path: string, client: ClientOf): Promise<Response> {
    const url = new URL(req.url);
    const nonce = randomBase62(16);
    try {
      if (path === '/oauth/authorize' && req.method === 'GET') return await authorize(req, url, nonce, client);
      if (path === '/oauth/authorize' && req.method === 'POST') return await decide(req, nonce);
      if (path === '/oauth/authorize/continue' && req.method === 'GET') return await carryOn(req, url, nonce);
      if (path === '/oauth/authorize/status' && req.method === 'GET') return await statusOf(req, url);
      if (path !== '/oauth/authorize' && path !== '/oauth/authorize/continue' && path !== '/oauth/authorize/status')
        return page(404, 'Not found', html`<p>No such page.</p>`, nonce);
      return page(405, 'Method not allowed', html`<p>Use GET${path === '/oauth/authorize' ? ' or POST' : ''}.</p>`, nonce, {
        headers: { Allow: path === '/oauth/authorize' ? 'GET, POST' : 'GET' },
      });
    } catch (err) {
      const support = `sup-${randomBase62(8).slice(0, 10)}`;
      core.log.error(`oauth consent ${req.method} ${path} failed request=${requestIdOf(req)} support=${support}: ${err instanceof Error ? err.name : 'error'}`);
      return page(500, 'Something went wrong', html`<p>Something went wrong on our side. Quote ${support}.</p>`, nonce);
    }
  }

  /** A consent answer: the console's frame and headers; the form may also lead to the client's redirect_uri. */
  function page(
    status: number,
    title: string,
    main: Html,
    nonce: string,
    opts: { head?: string; formTo?: string; cookies?: string[]; headers?: Record<string, string> } = {},
  ): Response {
    const headers = new Headers({ ...opts.headers, ...seatHeaders({ nonce, embedded: false, embeddedShop: null, formTo: opts.formTo }) });
    for (const c of opts.cookies ?? []) headers.append('Set-Cookie', c);
    return new Response(renderBare({ title, main: main.markup, nonce, head: opts.head }), { status, headers });
  }

  const seeOther = (location: string, cookies: string[] = []) => {
    const headers = new Headers({ Location: location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
    for (const c of cookies) headers.append('Set-Cookie', c);
    return new Response(null, { status: 303, headers });
  };

  /** The binding cookie: HttpOnly, SameSite=Lax (it must come back from the client's cross-site redirect), for the request's life. */
  function binding(ar: AuthorizationRequest, clear = false): string {
    const maxAge = clear ? 0 : Math.max(0, Math.floor((ar.expiresAt - core.clock.now()) / 1000));
    return `${bindingName(ar.id)}=${clear ? '' : ar.id}; Path=/oauth/authorize; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
  }

  /** The request `id` names, if this browser started it (holds its binding cookie); null otherwise. */
  async function bound(req: Request, id: string | null | undefined): Promise<AuthorizationRequest | null> {
    if (!id) return null;
    const held = cookieOf(req, bindingName(id));
    if (!held || !constantTimeEqual(held, id)) return null;
    const ar = await findAuthorization(core, id);
    return ar && ar.id === id ? ar : null;
  }

  /** The signed-in person of a live console session whose store is open, or null. */
  async function personOf(req: Request): Promise<{ human: Human; token: string } | null> {
    const session = await sessionOf(core, req);
    if (!session) return null;
    const store = await core.repo.getStore(session.storeId);
    if (!store || store.uninstalledAt != null) return null;
    return { human: { face: 'console', store, actor: session.actor, sessionId: session.id }, token: session.token };
  }

  // ——— GET /oauth/authorize ———

  async function authorize(req: Request, url: URL, nonce: string, client: ClientOf): Promise<Response> {
    const id = url.searchParams.get('request');
    if (id !== null && !url.searchParams.has('client_id')) return show(req, id, nonce);
    const limited = await startLimited(client, nonce);
    if (limited) return limited;
    let ar: AuthorizationRequest;
    try {
      ar = await startAuthorization(core, url.searchParams);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      return err.redirectable ? refuseToClient(err, url.searchParams) : cannotStart(err, nonce);
    }
    const person = await personOf(req);
    if (person) return consentPage(ar, person, nonce, { cookies: [binding(ar)] });
    // Arrived from the client's site without the session cookie: move on from this page (same site) to read it.
    return page(200, 'Opening hookrelay', html`<p>Opening the connection request… <a href="${requestLink(ar.id)}">Continue</a></p>`, nonce, {
      head: `<meta http-equiv="refresh" content="0;url=${requestLink(ar.id)}">`,
      cookies: [binding(ar)],
    });
  }

  /** A start past OAUTH_START_LIMITS from its address: a 429 page (logged once a minute by RefusalLog, not per answer); else null. */
  async function startLimited(client: ClientOf, nonce: string): Promise<Response | null> {
    refusals.roll();
    const d = await starts.fail(client());
    if (!d.limited) return null;
    await refusals.note('oauth authorize', client(), 429, () => `over ${OAUTH_START_LIMITS.perClient} starts a minute from one address`);
    const res = page(
      429,
      'Too many connection requests',
      html`<p>Too many connection requests came from your address. Wait ${d.retryAfterSeconds} seconds, then start the connection again from your agent's app.</p>`,
      nonce,
      { headers: { 'Retry-After': String(d.retryAfterSeconds) } },
    );
    unlogged.add(res);
    return res;
  }

  /** The request's page once started: the form (signed in), the code and the wait (not), or where it ended. */
  async function show(req: Request, id: string, nonce: string): Promise<Response> {
    const ar = await bound(req, id);
    if (!ar) return notThisBrowser(nonce);
    if (ar.status === 'approved' || ar.status === 'denied') return seeOther(continueLink(ar.id));
    if (ar.status !== 'pending') return ended(ar, nonce);
    const person = await personOf(req);
    return person ? consentPage(ar, person, nonce) : waitingPage(ar, nonce);
  }

  /** The consent form: who asks, for what, and the choices; posted back with the session's CSRF token. */
  function consentPage(
    ar: AuthorizationRequest,
    person: { human: Human; token: string },
    nonce: string,
    opts: { cookies?: string[]; status?: number; problem?: Html; chosen?: ConsentChoice } = {},
  ): Response {
    const { human } = person;
    const form = html`<form method="post" action="/oauth/authorize"><input type="hidden" name="csrf" value="${csrfOf(person.token)}"><input type="hidden" name="request" value="${ar.id}">${choiceFields(
      ar,
      opts.chosen ?? defaultChoice(ar),
    )}${decisionButtons}</form>`;
    return page(
      opts.status ?? 200,
      `Connect ${ar.client.name} to ${human.store.shopDomain}?`,
      html`${opts.problem ?? ''}<p>An agent's app asks for access to hookrelay in <strong>${human.store.shopDomain}</strong>. You decide as ${human.actor}; what you approve is a grant you can revoke on the Agents page at any time.</p><section><h2>The request</h2>${requestFacts(ar)}</section><section><h2>Your decision</h2>${form}</section>`,
      nonce,
      { cookies: opts.cookies, formTo: ar.redirectUri },
    );
  }

  /**
   * No session: the user code, where to approve it, and the wait. The page stays still while it waits (no refresh
   * that would restart a screen reader): its script asks the request's status every few seconds and goes on once
   * it is decided; without the script, Continue does the same by hand.
   */
  function waitingPage(ar: AuthorizationRequest, nonce: string): Response {
    const code = ar.userCode;
    const here = requestLink(ar.id);
    const links = JSON.stringify({ status: statusLink(ar.id), next: continueLink(ar.id), here }).replace(/</g, '\\u003c');
    const script = `<script nonce="${nonce}">(()=>{const l=${links};const ask=async()=>{let s='pending';try{const r=await fetch(l.status,{headers:{accept:'application/json'},cache:'no-store'});if(r.ok)s=(await r.json()).status}catch(e){}if(s==='pending'){setTimeout(ask,${WAIT_POLL_SECONDS * 1000});return}document.getElementById('wait-status').textContent=s==='expired'?'The request expired.':'Decided: going on…';location.assign(s==='expired'?l.here:l.next)};setTimeout(ask,${WAIT_POLL_SECONDS * 1000})})();</script>`;
    return page(
      200,
      'Approve this connection',
      html`<p>${ar.client.name} <span class="badge warn">unverified</span> asks for access to hookrelay. A person of the store approves it with this code:</p>
<p class="user-code"><strong id="user-code">${code}</strong></p>
<section><h2>Approve it in one of these ways</h2><ul>
<li>Signed in to the hookrelay console? <a href="${here}">Reload this page</a> and decide here. Not signed in: run ${trusted(SIGN_IN_COMMAND)}, open the link it prints, then come back to this page.</li>
<li>In the Shopify admin: open hookrelay, then Agents → "Approve a connection", and enter <code>${code}</code>.</li>
<li>On the box that runs hookrelay: <code>hookrelay grant approve ${code} --tier ${ar.offeredTiers[0] ?? 'observer'} --ttl ${CONSENT_DEFAULT_TTL}</code> (or <code>--deny</code>).</li>
</ul></section>
<section><h2>Waiting for the decision</h2>${requestFacts(ar)}<p id="wait-status" role="status">Once the connection is approved or denied, this page goes on by itself (or press Continue). The request expires ${expiresIn(ar)}.</p><p><a class="button primary" href="${continueLink(ar.id)}">Continue</a></p></section>`,
      nonce,
      { head: script },
    );
  }

  /** GET /oauth/authorize/status: the request's status, for the waiting page's script (this browser's requests only). */
  async function statusOf(req: Request, url: URL): Promise<Response> {
    const ar = await bound(req, url.searchParams.get('request'));
    const headers = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' };
    if (!ar) return Response.json({ code: 'forbidden', message: 'This browser did not start that request.' }, { status: 403, headers });
    return Response.json({ status: ar.status }, { headers });
  }

  const expiresIn = (ar: AuthorizationRequest) => {
    const minutes = Math.max(0, Math.ceil((ar.expiresAt - core.clock.now()) / 60_000));
    return minutes <= 1 ? 'within a minute' : `in ${minutes} minutes`;
  };

  /** A request that is over: expired, or already returned to its client. */
  function ended(ar: AuthorizationRequest, nonce: string): Response {
    return ar.status === 'expired'
      ? page(
          410,
          'This connection request expired',
          html`<p>Nobody approved it in time. <a href="${continueLink(ar.id)}">Go back to ${ar.client.name}</a> and start the connection again from there.</p>`,
          nonce,
        )
      : page(410, 'This connection request is finished', html`<p>It was decided and returned to ${ar.client.name}. Go back to your agent's app.</p>`, nonce);
  }

  const notThisBrowser = (nonce: string) =>
    page(
      403,
      'This connection request is not open here',
      html`<p>Only the browser that started a connection request can follow it, and this one did not (or the request is unknown). Start the connection again from your agent's app, or approve its code on the Agents page.</p>`,
      nonce,
    );

  /** A request whose client or redirect_uri cannot be trusted: said here, never sent anywhere. */
  function cannotStart(err: OAuthError, nonce: string): Response {
    return page(
      400,
      'This connection cannot start',
      html`<p><strong>${err.description}</strong> <span class="code">(${err.error})</span></p><p>The agent's app sent a request hookrelay will not follow. Nothing was granted; tell the app's maker, or try another app.</p>`,
      nonce,
    );
  }

  /** A request refused with a trusted redirect_uri: back to the client with error, state and iss (RFC 6749 §4.1.2.1, RFC 9207). */
  function refuseToClient(err: OAuthError, query: URLSearchParams): Response {
    const to = { redirectUri: query.get('redirect_uri') ?? '', state: query.get('state') };
    return seeOther(authorizationRedirect(core, to, { error: err.error, error_description: err.description }));
  }

  // ——— POST /oauth/authorize ———

  async function decide(req: Request, nonce: string): Promise<Response> {
    const form = await readForm(req);
    if (form === 'too_large') return page(413, 'Too large', html`<p>The form is too large.</p>`, nonce);
    if (form === 'unsupported') return page(415, 'Unsupported form', html`<p>Send the form as application/x-www-form-urlencoded.</p>`, nonce);
    const person = await personOf(req);
    if (!person)
      return page(
        401,
        'Sign in to decide',
        html`<p>Deciding a connection here needs a console session. Run <code>hookrelay console</code>, open its link, and come back; or approve the request's code elsewhere.</p>`,
        nonce,
      );
    if (!csrfOk(person.token, form.get('csrf')))
      return page(403, 'Refused', html`<p>This form is stale or did not come from this console: reload the page and try again.</p>`, nonce);
    const ar = await bound(req, form.get('request'));
    if (!ar) return notThisBrowser(nonce);
    if (ar.status !== 'pending') return seeOther(requestLink(ar.id));
    const decision = form.get('decision');
    const chosen = choiceOf(form);
    try {
      if (decision === 'deny') await denyAuthorization(core, person.human, ar.id);
      else if (decision === 'approve') await approveAuthorization(core, person.human, ar.id, { ...chosen, label: chosen.label || undefined });
      else return consentPage(ar, person, nonce, { status: 400, problem: notDone('invalid_input', 'Choose Approve or Deny.'), chosen });
    } catch (err) {
      const refusal = refusalOf(err);
      if (!refusal) throw err;
      return consentPage(ar, person, nonce, { status: refusal.status, problem: notDone(refusal.code, refusal.message), chosen });
    }
    return seeOther(continueLink(ar.id));
  }

  // ——— GET /oauth/authorize/continue ———

  async function carryOn(req: Request, url: URL, nonce: string): Promise<Response> {
    const ar = await bound(req, url.searchParams.get('request'));
    if (!ar) return notThisBrowser(nonce);
    if (ar.status === 'pending') return seeOther(requestLink(ar.id));
    if (ar.status === 'finished') return ended(ar, nonce);
    // Approved: a code; denied or expired: access_denied, so the client stops waiting.
    let to: string | null;
    try {
      to = await finishAuthorization(core, ar.id);
    } catch (err) {
      // Finished meanwhile by another tab of this browser: its code went there.
      if (err instanceof OAuthError) return ended({ ...ar, status: 'finished' }, nonce);
      throw err;
    }
    if (to === null) return seeOther(requestLink(ar.id));
    return seeOther(to, [binding(ar, true)]);
  }

  return { fetch };
}
