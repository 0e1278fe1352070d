/**
 * The routes anyone can reach without a credential of hookrelay's own: GET /auth/install, what Shopify signs with
 * the app's client secret (GET /auth/callback, POST /shopify/webhooks, Flow's action runs and lifecycle callbacks),
 * and the OAuth authorization server's token and revocation endpoints.
 * A request to them costs nothing that outlives it:
 *   - an install writes nothing (its state is signed, see src/platform/shopify/app-install.ts), and is limited per client address
 *     (APP_INSTALL_LIMITS, counted in memory per instance): 429 past the limit;
 *   - a signed route's 401 (its signature did not verify; for the callback, anything about the install link) counts
 *     as a failed authentication from its address, with /hooks' and the agent API's (AUTH_FAILURE_LIMITS, shared by
 *     instances on one PostgreSQL), and past the limit answers 429 instead. Only failures count and only failures
 *     are refused: a request that verifies passes from any address;
 *   - the OAuth token and revocation endpoints (src/oauth/routes.ts): a refused code, token or form (400, 401) counts
 *     as a failed authentication from its address, as a signed route's 401 does;
 *   - no log line per refusal: RefusalLog logs the first of a minute per route and one summary (a 503 for want of
 *     the app's secret too), and a 429 gets no request line from serve either.
 */
import { APP_INSTALL_LIMITS, AUTH_FAILURE_LIMITS } from '../contract/limits.ts';
import type { Core } from '../core.ts';
import { AuthFailureLimiter, type ClientOf } from '../lib/auth-failures.ts';
import { RefusalLog, refusalReason, unlogged } from '../lib/refusal-log.ts';
import { htmlPage } from '../lib/web.ts';

type Handler = (req: Request) => Promise<Response>;
type Guarded = (req: Request, client: ClientOf) => Promise<Response>;

/** Which answer a 429 takes: a page for people (install, callback), JSON for Shopify's calls. */
type Audience = 'page' | 'json';

function tooMany(audience: Audience, what: string, retryAfterSeconds: number): Response {
  const headers = { 'Retry-After': String(retryAfterSeconds) };
  const res =
    audience === 'page'
      ? htmlPage(429, 'Too many tries from your address', [`${what} Wait ${retryAfterSeconds} seconds, then start the install again.`], headers)
      : Response.json({ code: 'rate_limited', message: `${what} Retry after ${retryAfterSeconds} s.`, retryAfterSeconds }, { status: 429, headers });
  unlogged.add(res);
  return res;
}

/** The reason a refusal gives: the handler's own word (a page; a 503 naming the variable to set), else the `code` of a JSON answer. */
async function reasonOf(res: Response): Promise<string> {
  const set = refusalReason.get(res);
  if (set) return set;
  if (!res.headers.get('content-type')?.includes('json')) return `HTTP ${res.status}`;
  const body = (await res.clone().json()) as { code?: unknown; message?: unknown; error?: unknown; error_description?: unknown };
  // The contract's shape ({ code, message }) or OAuth's ({ error, error_description }).
  const code = body.code ?? body.error;
  const message = body.message ?? body.error_description;
  if (typeof code !== 'string') return `HTTP ${res.status}`;
  return typeof message === 'string' ? `${code}: ${message}` : code;
}

export function createUnsignedRoutes(core: Core, authFailures: AuthFailureLimiter) {
  const installs = new AuthFailureLimiter(core.clock, { ...AUTH_FAILURE_LIMITS, ...APP_INSTALL_LIMITS, auditedPerClient: 0, auditedPerWindow: 0 });
  const log = new RefusalLog(core.clock, core.log, AUTH_FAILURE_LIMITS.windowMs);

  /** GET /auth/install: limited per address before the handler runs. */
  function install(handler: Handler): Guarded {
    return async (req, client) => {
      log.roll();
      const d = await installs.fail(client());
      if (!d.limited) return handler(req);
      await log.note('app install', client(), 429, () => `over ${APP_INSTALL_LIMITS.perClient} a minute from one address`);
      return tooMany('page', 'Too many install requests came from your address.', d.retryAfterSeconds);
    };
  }

  /** A route Shopify signs: its 401 counts as a failed authentication from the address, and past the limit is a 429. */
  function signed(route: string, audience: Audience, handler: Handler): Guarded {
    return guarded(route, audience, handler, (status) => status === 401);
  }

  /**
   * The OAuth token and revocation endpoints: a refused code, refresh token or form (400, 401) counts as a failed
   * authentication from the address, as a signed route's 401 does, and past the limit is a 429.
   */
  function oauth(handler: Handler): Guarded {
    return guarded('oauth token', 'json', handler, (status) => status === 400 || status === 401);
  }

  function guarded(route: string, audience: Audience, handler: Handler, failed: (status: number) => boolean): Guarded {
    return async (req, client) => {
      log.roll();
      const res = await handler(req);
      // Not set up to verify (no app secret): logged as a refusal, no failure of the sender's.
      if (res.status === 503) await log.note(route, client(), 503, () => reasonOf(res));
      if (!failed(res.status)) return res;
      const d = await authFailures.fail(client(), undefined, false);
      const answer = d.limited ? tooMany(audience, 'Too many requests that did not verify came from this address.', d.retryAfterSeconds) : res;
      await log.note(route, client(), answer.status, () => reasonOf(res));
      return answer;
    };
  }

  return { install, signed, oauth };
}
