/**
 * A merchant installs the Shopify app: GET /auth/install?shop=… sends them to Shopify's authorize page with a
 * signed, short-lived state bound to the shop (and to this browser, by a cookie), writing nothing; GET /auth/callback
 * checks Shopify's signature, the timestamp, the state and the shop, records the state as used, exchanges the code
 * for an expiring offline token and its refresh token, reads the shop's identity, creates the store (or brings an uninstalled one back), seals the token
 * pair, ends any pause, and lands the merchant on a page that says what to do next. Nothing here answers JSON or
 * carries a token, code or secret in what it shows or logs.
 */
import type { Repo } from '../../../db/repo.ts';
import type { StoreRow } from '../../../db/types.ts';
import { DEFAULT_PLAN } from '../../contract/plans.ts';
import type { Core } from '../../core.ts';
import { hmacDigest, sameDigest, sha256Hex } from '../../lib/crypto.ts';
import { randomBase62 } from '../../lib/ids.ts';
import { refusalReason } from '../../lib/refusal-log.ts';
import { cookieOf, escapeHtml as esc, htmlPage as page, publicLink, redirectTo } from '../../lib/web.ts';
import { adminGraphql, exchangeAuthorizationCode, graphqlUrl, tokenUrl, type TokenReply } from './admin-api.ts';
import { installLink } from '../../contract/platform.ts';
import { APP_CLIENT_ID_ENV, APP_SECRET_ENV, appClientId, authorizeUrl, shopDomainOf, signedQueryProblem } from './app.ts';
import { obtainedToken } from './credentials.ts';
import { billingMode } from './billing.ts';
import type { PlatformOps } from '../types.ts';
import { shopifyPlatform } from './platform.ts';
import { planChoices } from './billing-pages.ts';

/** An install begun must come back within this long. */
const STATE_TTL_MS = 10 * 60_000;
const COOKIE = 'hookrelay_install';
const IDENTITY_QUERY = 'query hookrelayInstall { shop { id myshopifyDomain } currentAppInstallation { id } }';

/** The state's MAC key: derived from the app's client secret, so no MAC of ours is one Shopify makes with it. */
const stateKey = (secret: string) => hmacDigest(secret, 'hookrelay/install-state/v1').toString('base64url');
const stateMac = (secret: string, shop: string, expires: string, nonce: string) =>
  hmacDigest(stateKey(secret), `${shop}|${expires}|${nonce}`).toString('base64url');
const STATE = /^([0-9a-z]{1,12})\.([0-9A-Za-z]{16,64})\.([0-9A-Za-z_-]{43})$/;

/**
 * An install's `state`: `<expiry, base-36 seconds>.<nonce>.<MAC>`, the MAC (HMAC-SHA256, base64url) over the shop,
 * the expiry and the nonce. Nothing is stored when it is made: the callback checks it, and records it as used only
 * once Shopify's signature, the cookie and the MAC have verified (see Repo.installs.useState).
 */
function makeState(secret: string, shop: string, expiresAt: number): string {
  const expires = Math.ceil(expiresAt / 1000).toString(36);
  const nonce = randomBase62(24);
  return `${expires}.${nonce}.${stateMac(secret, shop, expires, nonce)}`;
}

/** When the state expires (ms), if it is one this box made for `shop`, unexpired at `now`; else null. Constant time. */
function stateExpiry(secret: string, state: string, shop: string, now: number): number | null {
  const m = STATE.exec(state);
  if (!m) return null;
  const [, expires, nonce, mac] = m as unknown as [string, string, string, string];
  if (!sameDigest(Buffer.from(stateMac(secret, shop, expires, nonce)), Buffer.from(mac))) return null;
  const expiresAt = parseInt(expires, 36) * 1000;
  return expiresAt > now ? expiresAt : null;
}

/** The numeric tail of a GraphQL id (`gid://shopify/Shop/548380009` → `548380009`), or the id as given. */
const idTail = (gid: string) => gid.split('/').pop() || gid;

/** The install pages; `ops` makes a new store's row (src/ops/stores.ts), handed in by the server. */
export function createAppInstall(core: Core, ops: Pick<PlatformOps, 'newStoreRow'>) {
  const installs = core.repo.installs;
  const secretVar = () => APP_SECRET_ENV.find((name) => !!core.config.env(name));
  const notConfigured = () =>
    page(503, 'Installs are not set up on this server', [
      `The operator sets ${APP_CLIENT_ID_ENV} (the app's client id) and ${APP_SECRET_ENV[0]} (its client secret) where hookrelay serve runs, then restarts it.`,
    ]);

  /** Where a merchant starts (again): the install link for `shop` when it is known, else how to write one. */
  const startAgain = (shop: string | null) => {
    if (!shop) return 'your store: <code>/auth/install?shop=your-store.myshopify.com</code>';
    const link = esc(installLink({ publicUrl: core.config.publicUrl, shopDomain: shop }));
    return `<a href="${link}">${link}</a>`;
  };

  /** Writes nothing and logs nothing: a flood of these costs what answering it costs (see src/server/unsigned-routes.ts). */
  async function install(req: Request): Promise<Response> {
    if (req.method !== 'GET') return new Response(null, { status: 405, headers: { Allow: 'GET' } });
    const clientId = appClientId(core.config);
    const secretName = secretVar();
    if (!clientId || !secretName) return notConfigured();
    const given = new URL(req.url).searchParams.get('shop')?.trim() ?? '';
    const shop = shopDomainOf(given);
    if (!shop) {
      const what = given ? `<code>${esc(given.slice(0, 100))}</code> is not a Shopify store domain. ` : '';
      return page(400, 'Which store?', [`${what}Open this page with your store: <code>/auth/install?shop=your-store.myshopify.com</code>.`]);
    }
    const state = makeState(core.config.env(secretName)!, shop, core.clock.now() + STATE_TTL_MS);
    const redirectUri = publicLink(core.config.publicUrl, '/auth/callback');
    const secure = redirectUri.startsWith('https:') ? '; Secure' : '';
    const to = redirectTo(authorizeUrl(shop, core.config.shopifyAdminUrl, { clientId, redirectUri, state }));
    to.headers.set('Set-Cookie', `${COOKIE}=${state}; Path=/auth/callback; Max-Age=${STATE_TTL_MS / 1000}; HttpOnly; SameSite=Lax${secure}`);
    return to;
  }

  async function callback(req: Request): Promise<Response> {
    if (req.method !== 'GET') return new Response(null, { status: 405, headers: { Allow: 'GET' } });
    const clientId = appClientId(core.config);
    const secretName = secretVar();
    if (!clientId || !secretName) return notConfigured();
    const secret = core.config.env(secretName)!;
    const q = new URL(req.url).searchParams;
    const shop = shopDomainOf(q.get('shop'));
    const clear = { 'Set-Cookie': `${COOKIE}=; Path=/auth/callback; Max-Age=0; HttpOnly; SameSite=Lax` };
    // Not logged here: the route's guard logs the first refusal of a minute with this reason, and counts the rest.
    const refuse = (why: string) => {
      const res = page(401, 'This install link is not valid', [`${esc(why)} Start again from ${startAgain(shop)}.`], clear);
      refusalReason.set(res, `${why}${shop ? ` (${shop})` : ''}`);
      return res;
    };
    if (q.get('error')) return page(400, 'The app was not installed', [`Shopify says: ${esc(q.get('error')!.slice(0, 100))}. Nothing was changed.`], clear);
    const problem = signedQueryProblem(q, secret, core.clock.now());
    if (problem) return refuse(problem === 'unsigned' ? 'Its signature does not verify.' : 'It is too old (or the clocks differ).');
    if (!shop) return refuse('It names no valid shop.');
    const state = q.get('state') ?? '';
    if (!state || cookieOf(req, COOKIE) !== state) return refuse('It was not begun in this browser.');
    const checkedAt = core.clock.now();
    const expiresAt = stateExpiry(secret, state, shop, checkedAt);
    if (expiresAt === null) return refuse('It has expired, or was made for another shop.');
    const code = q.get('code');
    if (!code) return refuse('It carries no code.');
    // Everything about it verified: only now is it written down, as used (a second use finds the row).
    if (!(await installs.useState(sha256Hex(state), shop, checkedAt, expiresAt))) return refuse('It was used already.');

    const timeout = core.config.handoff.timeoutMs;
    const asked = core.clock.now(); // the token's life counts from the request: its answer may arrive late
    const reply = await exchangeAuthorizationCode(tokenUrl(shop, core.config.shopifyAdminUrl), clientId, secret, code, timeout);
    if (reply.kind !== 'issued') {
      core.log.warn(
        `app install for ${shop}: Shopify issued no token (${reply.kind === 'refused' ? `HTTP ${reply.status}${reply.error ? `, ${reply.error}` : ''}` : reply.why})`,
      );
      return page(
        502,
        'The install did not complete',
        [
          `Shopify did not issue an access token. Start the install again from ${startAgain(shop)}; if it keeps failing, the operator checks the app's client id and secret.`,
        ],
        clear,
      );
    }
    const store = await completeInstall(core, ops, shop, clientId, secretName, reply, asked, 'OAuth');
    if (!store) {
      core.log.warn(`app install for ${shop}: the shop's identity could not be read`);
      return page(
        502,
        'The install did not complete',
        [`Shopify did not tell us which store this is. Start the install again from ${startAgain(shop)}.`],
        clear,
      );
    }
    return page(
      200,
      `hookrelay is installed on ${shop}`,
      [
        "Events sent to this store's hookrelay endpoints are now handed to Shopify Flow.",
        `Next, <a href="${esc(`https://admin.shopify.com/store/${shop.replace(/\.myshopify\.com$/, '')}/apps/${clientId}`)}" target="_top">open hookrelay in your Shopify admin</a>: its Home shows what to set up next, and its Agents page gives an AI agent a grant to set it up for you.`,
        'In Shopify Flow, create a workflow that starts from one of hookrelay\'s triggers ("Relay order event received" and the others) and turn it on.',
        ...choices(core, shop),
      ],
      clear,
    );
  }

  return { install, callback };
}

/**
 * An install whose token Shopify issued (by OAuth's code or the embedded app's token exchange): the shop's identity
 * read with it, the store created or brought back, the token sealed, handoff resumed. Null when the identity could
 * not be read (nothing written).
 */
export async function completeInstall(
  core: Core,
  ops: Pick<PlatformOps, 'newStoreRow'>,
  shop: string,
  clientId: string,
  secretVar: string,
  reply: Extract<TokenReply, { kind: 'issued' }>,
  asked: number,
  how: string,
): Promise<StoreRow | null> {
  const identity = await adminGraphql(
    graphqlUrl(shop, core.config.shopifyAdminUrl),
    reply.accessToken,
    IDENTITY_QUERY,
    undefined,
    core.config.handoff.timeoutMs,
  );
  const data = identity.kind === 'answered' ? identity.data : undefined;
  const shopGid = (data?.shop as { id?: unknown } | undefined)?.id;
  const installGid = (data?.currentAppInstallation as { id?: unknown } | undefined)?.id;
  if (typeof shopGid !== 'string' || typeof installGid !== 'string') return null;
  const now = core.clock.now();
  const store = await upsertStore(core.repo, core, ops, shop, clientId, secretVar, now);
  await core.repo.installs.setStoreIdentity(store.id, idTail(shopGid), idTail(installGid), now);
  await core.repo.links.installToken(store.id, obtainedToken(core.box, reply, clientId, asked), now);
  await core.repo.links.resume(store.id, now);
  shopifyPlatform(core).forget(store.id);
  core.log.info(`app installed on ${shop} (store ${store.id}; ${how}, expiring offline token)`);
  return (await core.repo.getStore(store.id)) ?? store;
}

/** The store for an install: created (destination Shopify, OAuth credentials) or brought back, uninstalled no more. */
async function upsertStore(
  repo: Repo,
  core: Core,
  ops: Pick<PlatformOps, 'newStoreRow'>,
  shop: string,
  clientId: string,
  secretVar: string,
  now: number,
): Promise<StoreRow> {
  const existing = await repo.getStoreByShop(shop);
  const credentials = { destination: 'shopify', credentialMode: 'oauth', clientId, clientSecretEnv: secretVar, adminTokenEnv: null } as const;
  if (existing) {
    const row = { ...existing, ...credentials, uninstalledAt: null, updatedAt: now };
    await repo.updateStore(row);
    return row;
  }
  // A deployment that bills starts stores on its free plan; a self-hosted box caps nothing.
  const row = await ops.newStoreRow(core, shop, { ...credentials, plan: billingMode(core.config.env) === 'off' ? DEFAULT_PLAN : 'free' });
  await repo.insertStore(row);
  return row;
}

/**
 * Shopify's app/uninstalled: the app's access to the store ended. Its tokens are forgotten and its handoff paused
 * (`uninstalled`): events are kept and wait, never failed; an install of the app again brings the store back and
 * drains them. Returns the store, or null when this box has none for the shop.
 */
export async function markUninstalled(core: Core, shopDomain: string, at: number): Promise<StoreRow | null> {
  const store = await core.repo.getStoreByShop(shopDomain);
  if (!store) return null;
  const row = { ...store, uninstalledAt: at, updatedAt: at };
  await core.repo.updateStore(row);
  await core.repo.links.clearToken(store.id, at);
  const message = `The app was uninstalled from ${shopDomain}; its events wait for an install again.`;
  await core.repo.links.pause(store.id, { reason: 'uninstalled', code: 'SVC_APP_UNINSTALLED', message }, at, 0, at + core.config.handoff.probeMaxDelayMs);
  shopifyPlatform(core).forget(store.id);
  core.log.warn(`app uninstalled from ${shopDomain}: handoff paused, events kept`);
  return row;
}

/** The plan choices for the landing page, when the deployment bills (a human's page: the merchant's own choice). */
function choices(core: Core, shop: string): string[] {
  const links = planChoices(core, shop);
  return links.length ? [`Choose a plan (you approve the charge in your Shopify admin):<ul>${links.map((l) => `<li>${l}</li>`).join('')}</ul>`] : [];
}
