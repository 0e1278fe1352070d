/**
 * The Shopify app hookrelay is: its client id and secret (read from the environment, never stored), the scopes it
 * asks for, and what installing it takes (the authorize page, the signed callback). The same client secret signs
 * Flow's lifecycle callbacks and the webhooks Shopify sends.
 */
import { readCapped } from '../../lib/body.ts';
import { constantTimeEqual, hmacBase64, verifyHmacHex } from '../../lib/crypto.ts';
import { refusalReason } from '../../lib/refusal-log.ts';
import { adminBase } from './admin-api.ts';

/** The app's client secret, read from the first of these variables that is set. */
export const APP_SECRET_ENV = ['HOOKRELAY_SHOPIFY_APP_SECRET', 'SHOPIFY_API_SECRET'] as const;
/** The app's client id (Dev Dashboard → the app → Settings), for installs through /auth/install. */
export const APP_CLIENT_ID_ENV = 'HOOKRELAY_SHOPIFY_CLIENT_ID';
/** What the app asks a merchant for: the resources the order, customer and product triggers refer to (shopify.app.toml). */
const APP_SCOPES = 'read_orders,read_customers,read_products';
/** How long the callback's signed `timestamp` may be from this box's clock (Shopify's own library allows 90 s). */
const CALLBACK_CLOCK_TOLERANCE_MS = 90_000;

type Env = (name: string) => string | undefined;

/** The app's client secret, or undefined: serve and setup state warn without it. */
export function appSecret(env: Env): string | undefined {
  return APP_SECRET_ENV.map((name) => env(name)).find((v) => !!v);
}

/**
 * A 503 for want of the app's secret. Its reason, which the unsigned routes log once a minute (src/lib/refusal-log.ts),
 * names the variable to set; the answer itself does not.
 */
export function notConfigured(code: string, message: string): Response {
  const res = Response.json({ code, message }, { status: 503 });
  refusalReason.set(res, `${code}: set ${APP_SECRET_ENV[0]} to the app's client secret`);
  return res;
}

/** The app's client id: HOOKRELAY_SHOPIFY_CLIENT_ID, else the one `hookrelay store set --app-client-id` stored. */
export function appClientId(config: { env: Env; appClientId: string | null }): string | undefined {
  return config.env(APP_CLIENT_ID_ENV) || config.appClientId || undefined;
}

const SHOP = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;

/** A shop domain as Shopify names stores (`your-store.myshopify.com`), lowercased; null for anything else. */
export function shopDomainOf(value: string | null | undefined): string | null {
  const shop = value?.trim().toLowerCase() ?? '';
  return SHOP.test(shop) ? shop : null;
}

/** Shopify's authorize page for an install: offline access (no per-user grant), the app's scopes, our callback. */
export function authorizeUrl(shopDomain: string, adminUrl: string | null, p: { clientId: string; redirectUri: string; state: string }): string {
  const q = new URLSearchParams({ client_id: p.clientId, scope: APP_SCOPES, redirect_uri: p.redirectUri, state: p.state, 'grant_options[]': '' });
  return `${adminBase(shopDomain, adminUrl)}/admin/oauth/authorize?${q.toString().replace(/\+/g, '%20')}`;
}

/**
 * Whether a callback's query is signed by Shopify: `hmac` is the hex HMAC-SHA256, keyed with the app's client secret,
 * of every other parameter (`signature` aside) sorted by key and joined as a query string. Repeated parameters are
 * joined with commas, as Shopify's library does. Constant time.
 */
export function callbackSigned(query: URLSearchParams, secret: string): boolean {
  const given = query.get('hmac');
  if (!given) return false;
  const joined = new Map<string, string>();
  for (const [k, v] of query) {
    if (k === 'hmac' || k === 'signature') continue;
    joined.set(k, joined.has(k) ? `${joined.get(k)},${v}` : v);
  }
  const sorted = new URLSearchParams([...joined].sort(([a], [b]) => a.localeCompare(b)));
  return verifyHmacHex(secret, sorted.toString().replace(/\+/g, '%20'), given.toLowerCase());
}

/**
 * Why a query Shopify signed (an install's callback, the app opened from the admin) is not to be taken at `now`
 * (ms): `unsigned` (no valid hmac), `stale` (its timestamp further than CALLBACK_CLOCK_TOLERANCE_MS away); null when good.
 */
export function signedQueryProblem(query: URLSearchParams, secret: string, now: number): 'unsigned' | 'stale' | null {
  if (!callbackSigned(query, secret)) return 'unsigned';
  const timestamp = Number(query.get('timestamp')) * 1000;
  return Number.isFinite(timestamp) && Math.abs(now - timestamp) <= CALLBACK_CLOCK_TOLERANCE_MS ? null : 'stale';
}

/** What Shopify may POST signed with the app's client secret (webhooks, Flow's lifecycle callbacks); more is refused unread. */
const SIGNED_BODY_MAX = 64 * 1024;

export type SignedRefusal = { ok: false; status: 400 | 401 | 413; code: string; message: string };

const refusal = (status: 400 | 401 | 413, code: string, message: string): SignedRefusal => ({ ok: false, status, code, message });

/**
 * The raw body of a POST Shopify signed with the app's client secret (`what`: "Webhooks", "Lifecycle callbacks"):
 * at most SIGNED_BODY_MAX bytes, and X-Shopify-Hmac-Sha256 — the base64 HMAC-SHA256 of the exact bytes — checked in
 * constant time before anything else of the request is believed.
 */
export async function readSignedBody(req: Request, secret: string, what: string): Promise<{ ok: true; body: Uint8Array } | SignedRefusal> {
  const body = await readCapped(req, SIGNED_BODY_MAX);
  if (!body) return refusal(413, 'payload_too_large', `${what} are limited to 64 KiB.`);
  const signature = req.headers.get('x-shopify-hmac-sha256');
  if (!signature) return refusal(401, 'SVC_AUTH_HEADER_MISSING', 'X-Shopify-Hmac-Sha256 is missing.');
  if (!constantTimeEqual(hmacBase64(secret, body), signature.trim())) return refusal(401, 'SVC_AUTH_FAILED', 'The Shopify HMAC did not verify.');
  return { ok: true, body };
}

/** A verified body read as JSON (strict UTF-8). */
export function signedJson(body: Uint8Array): { ok: true; doc: unknown } | SignedRefusal {
  try {
    return { ok: true, doc: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)) };
  } catch {
    return refusal(400, 'invalid_input', 'The body is not valid JSON.');
  }
}

/**
 * What a POST Flow signs (a lifecycle callback, an action run) must pass before its fields are read: POST, the app
 * secret configured (else `notConfigured(code, message)`, a 503 Flow retries), the body signed (readSignedBody) and
 * JSON. Returns the document, or the Response refusing the request.
 */
export async function readSignedFlowPost(
  req: Request,
  env: Env,
  what: string,
  unconfigured: { code: string; message: string },
): Promise<{ ok: true; doc: unknown } | { ok: false; res: Response }> {
  if (req.method !== 'POST')
    return { ok: false, res: Response.json({ code: 'method_not_allowed', message: 'Use POST.' }, { status: 405, headers: { Allow: 'POST' } }) };
  const secret = appSecret(env);
  if (!secret) return { ok: false, res: notConfigured(unconfigured.code, unconfigured.message) };
  const signed = await readSignedBody(req, secret, what);
  const json = signed.ok ? signedJson(signed.body) : signed;
  if (!json.ok) return { ok: false, res: Response.json({ code: json.code, message: json.message }, { status: json.status }) };
  return json;
}

/** The fields a payload lacked or got wrong, for a 400: their paths, never their values. */
export function malformedFields(issues: readonly { path: readonly PropertyKey[] }[]): string {
  return [...new Set(issues.map((i) => i.path.map(String).join('.') || 'body'))].join(', ');
}
