/**
 * Shopify's Admin API over HTTP, read as Shopify answers today: GraphQL replies with their cost extension and
 * THROTTLED errors, the version that answered (X-Shopify-API-Version), 401 for a dead token, and the token
 * endpoint of the client credentials grant. No policy here (what to retry, when to pause): only what was said.
 */
import { SHOPIFY_ADMIN_API_VERSION } from './version.ts';

/**
 * `https://<shop>`, or the base tests and proxies set (HOOKRELAY_SHOPIFY_ADMIN_URL), without a trailing slash. A
 * `{shop}` in that base is the shop's domain, so one proxy (or one fake per shop behind a router) serves many stores.
 */
export function adminBase(shopDomain: string, adminUrl: string | null): string {
  return (adminUrl === null ? `https://${shopDomain}` : adminUrl.replaceAll('{shop}', shopDomain)).replace(/\/+$/, '');
}

export function graphqlUrl(shopDomain: string, adminUrl: string | null): string {
  return `${adminBase(shopDomain, adminUrl)}/admin/api/${SHOPIFY_ADMIN_API_VERSION}/graphql.json`;
}

export function tokenUrl(shopDomain: string, adminUrl: string | null): string {
  return `${adminBase(shopDomain, adminUrl)}/admin/oauth/access_token`;
}

/** `extensions.cost` of a GraphQL reply: what the call cost and the store's bucket after it. */
export interface QueryCost {
  requested: number | null;
  actual: number | null;
  maximumAvailable: number | null;
  currentlyAvailable: number | null;
  restoreRate: number | null;
}

export interface GraphqlError {
  message?: string;
  extensions?: { code?: string };
}

export type GraphqlReply =
  /** HTTP 200 with a JSON document (which may still carry `errors`: THROTTLED, or a query error). */
  | { kind: 'answered'; status: number; data: Record<string, unknown> | null; errors: GraphqlError[]; cost: QueryCost | null; version: string | null }
  /** 401/403: the token is missing, dead or lacks access. */
  | { kind: 'refused'; status: number; version: string | null }
  /** HTTP 429 (REST-style limit); GraphQL's own throttling is an `answered` THROTTLED error. */
  | { kind: 'limited'; status: number; retryAfterMs?: number; version: string | null }
  | { kind: 'server_error'; status: number; version: string | null }
  | { kind: 'http_error'; status: number; version: string | null }
  | { kind: 'unreadable'; status: number; version: string | null }
  | { kind: 'timeout' }
  | { kind: 'network' };

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** Reads `extensions.cost`; null when absent or malformed. */
function readCost(extensions: unknown): QueryCost | null {
  const cost = (extensions as { cost?: Record<string, unknown> } | null | undefined)?.cost;
  if (!cost || typeof cost !== 'object') return null;
  const t = (cost.throttleStatus ?? {}) as Record<string, unknown>;
  return {
    requested: num(cost.requestedQueryCost),
    actual: num(cost.actualQueryCost),
    maximumAvailable: num(t.maximumAvailable),
    currentlyAvailable: num(t.currentlyAvailable),
    restoreRate: num(t.restoreRate),
  };
}

export const isThrottled = (errors: GraphqlError[]) => errors.some((e) => e.extensions?.code === 'THROTTLED');

/** One GraphQL call with an access token. Never throws; never echoes the token. */
export async function adminGraphql(
  url: string,
  token: string,
  query: string,
  variables: Record<string, unknown> | undefined,
  timeoutMs: number,
): Promise<GraphqlReply> {
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-Shopify-Access-Token': token },
      body: JSON.stringify(variables ? { query, variables } : { query }),
      signal,
    });
  } catch (err) {
    return signal.aborted || (err instanceof Error && err.name === 'TimeoutError') ? { kind: 'timeout' } : { kind: 'network' };
  }
  const version = res.headers.get('x-shopify-api-version');
  const status = res.status;
  if (status === 401 || status === 403) return drained(res, { kind: 'refused', status, version });
  if (status === 429) return drained(res, { kind: 'limited', status, retryAfterMs: retryAfterMs(res.headers.get('retry-after')), version });
  if (status >= 500) return drained(res, { kind: 'server_error', status, version });
  if (status !== 200) return drained(res, { kind: 'http_error', status, version });
  let doc: { data?: Record<string, unknown> | null; errors?: unknown; extensions?: unknown };
  try {
    doc = (await res.json()) as typeof doc;
  } catch {
    return { kind: 'unreadable', status, version };
  }
  if (!doc || typeof doc !== 'object') return { kind: 'unreadable', status, version };
  const errors = Array.isArray(doc.errors) ? (doc.errors as GraphqlError[]) : doc.errors ? [{ message: String(doc.errors) }] : [];
  return { kind: 'answered', status, data: doc.data ?? null, errors, cost: readCost(doc.extensions), version };
}

/** Reads and drops a body nobody uses, so the connection goes back to the pool. */
async function drained<T>(res: Response, reply: T): Promise<T> {
  await res.arrayBuffer().catch(() => undefined);
  return reply;
}

export type TokenReply =
  | {
      kind: 'issued';
      accessToken: string;
      scope: string | null;
      expiresInSeconds: number | null;
      refreshToken: string | null;
      refreshExpiresInSeconds: number | null;
    }
  /** The platform refused the request (invalid_client, invalid_grant and other 4xx but 429): the OAuth `error` code, never the body. */
  | { kind: 'refused'; status: number; error: string | null }
  | { kind: 'unavailable'; status: number | null; why: 'timeout' | 'network' | 'server_error' | 'unreadable' };

/**
 * One request to the store's token endpoint (`/admin/oauth/access_token`), as JSON, as Shopify's own library sends
 * it: the client credentials grant, an install's authorization code, or a refresh. The client secret goes in the
 * body only and is never logged; nothing of the answer but the token fields is kept.
 */
async function requestToken(url: string, body: Record<string, string>, timeoutMs: number): Promise<TokenReply> {
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(body), signal });
  } catch (err) {
    const timedOut = signal.aborted || (err instanceof Error && err.name === 'TimeoutError');
    return { kind: 'unavailable', status: null, why: timedOut ? 'timeout' : 'network' };
  }
  let doc: Record<string, unknown> | null = null;
  try {
    doc = (await res.json()) as Record<string, unknown>;
  } catch {
    doc = null;
  }
  // A 429 is Shopify throttling the endpoint, as a 5xx is it failing: neither says anything of the credentials.
  if (res.status >= 500 || res.status === 429) return { kind: 'unavailable', status: res.status, why: 'server_error' };
  if (res.status !== 200) return { kind: 'refused', status: res.status, error: typeof doc?.error === 'string' ? doc.error.slice(0, 64) : null };
  const token = doc?.access_token;
  if (typeof token !== 'string' || !token) return { kind: 'unavailable', status: res.status, why: 'unreadable' };
  return {
    kind: 'issued',
    accessToken: token,
    scope: typeof doc?.scope === 'string' ? doc.scope : null,
    expiresInSeconds: num(doc?.expires_in),
    refreshToken: typeof doc?.refresh_token === 'string' && doc.refresh_token ? doc.refresh_token : null,
    refreshExpiresInSeconds: num(doc?.refresh_token_expires_in),
  };
}

/** The client credentials grant: the app's client id and secret for a token of the store (24 h, no refresh token). */
export function requestClientCredentialsToken(url: string, clientId: string, clientSecret: string, timeoutMs: number): Promise<TokenReply> {
  return requestToken(url, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }, timeoutMs);
}

/** An install's authorization code for an expiring offline token (60 min) and its refresh token. */
export function exchangeAuthorizationCode(url: string, clientId: string, clientSecret: string, code: string, timeoutMs: number): Promise<TokenReply> {
  return requestToken(url, { client_id: clientId, client_secret: clientSecret, code, expiring: '1' }, timeoutMs);
}

/**
 * Token exchange (managed install): the ID token App Bridge gave the page, for an expiring offline token (60 min) and
 * its refresh token, as the authorization code would give. 400 (`invalid_subject_token`) for an invalid or expired one.
 */
export function exchangeIdToken(url: string, clientId: string, clientSecret: string, idToken: string, timeoutMs: number): Promise<TokenReply> {
  return requestToken(
    url,
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: idToken,
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      requested_token_type: 'urn:shopify:params:oauth:token-type:offline-access-token',
      expiring: '1',
    },
    timeoutMs,
  );
}

/** A refresh token for a new access token and a new refresh token (Shopify rotates both). */
export function refreshAccessToken(url: string, clientId: string, clientSecret: string, refreshToken: string, timeoutMs: number): Promise<TokenReply> {
  return requestToken(url, { grant_type: 'refresh_token', client_id: clientId, client_secret: clientSecret, refresh_token: refreshToken }, timeoutMs);
}

/** Retry-After as seconds or an HTTP date; undefined when absent or unreadable. */
function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
