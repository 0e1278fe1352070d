/**
 * The app embedded in the Shopify admin (managed installation): the ID token App Bridge gives the page — verified on
 * every request (HS256 with the app's client secret, `aud` the client id, `exp`/`nbf` with a few seconds of skew,
 * `dest` a shop) — and, the first time a shop's page loads without a token of ours, the token exchange of that ID
 * token for the expiring offline token and refresh token the `oauth` credential mode renews. No cookie, no state.
 */
import type { StoreRow } from '../../../db/types.ts';
import type { Core } from '../../core.ts';
import { hmacDigest, sameDigest } from '../../lib/crypto.ts';
import type { EmbeddedApp, EmbeddedIdentity, PlatformOps } from '../types.ts';
import { exchangeIdToken, tokenUrl } from './admin-api.ts';
import { APP_SECRET_ENV, appClientId, shopDomainOf } from './app.ts';
import { completeInstall } from './app-install.ts';

/** How far `exp`/`nbf` may be from this box's clock. */
const ID_TOKEN_SKEW_MS = 5_000;
/** An ID token is 1 minute; anything much longer is not one Shopify made. */
const MAX_TOKEN_BYTES = 4096;

const b64urlJson = (part: string): Record<string, unknown> | null => {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) return null;
  try {
    const v = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
};

/** The shop of a `dest`/`iss` claim (`https://shop.myshopify.com[/admin]`), or null. */
function shopOfUrl(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  try {
    const u = new URL(value);
    return u.protocol === 'https:' ? shopDomainOf(u.hostname) : null;
  } catch {
    return null;
  }
}

/**
 * An ID token's identity when it is one Shopify made for this app and is valid at `now`: signature (HS256, the
 * client secret, constant time), `aud`, `exp`, `nbf`, `dest` (and `iss`, when present, the same shop). Else why not
 * (a short reason for the log, never the token).
 */
function verifyIdToken(
  token: string,
  app: { clientId: string; secret: string },
  now: number,
): { ok: true; identity: EmbeddedIdentity } | { ok: false; why: string } {
  if (token.length > MAX_TOKEN_BYTES) return { ok: false, why: 'too long' };
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, why: 'not a JWT' };
  const [h, p, s] = parts as [string, string, string];
  const header = b64urlJson(h);
  if (header?.alg !== 'HS256') return { ok: false, why: 'not HS256' };
  if (!/^[A-Za-z0-9_-]{43}$/.test(s)) return { ok: false, why: 'bad signature' };
  if (!sameDigest(hmacDigest(app.secret, `${h}.${p}`), Buffer.from(s, 'base64url'))) return { ok: false, why: 'bad signature' };
  const claims = b64urlJson(p);
  if (!claims) return { ok: false, why: 'unreadable claims' };
  const aud = claims.aud;
  if (!(aud === app.clientId || (Array.isArray(aud) && aud.includes(app.clientId)))) return { ok: false, why: 'wrong audience' };
  const exp = claims.exp;
  if (typeof exp !== 'number' || exp * 1000 + ID_TOKEN_SKEW_MS <= now) return { ok: false, why: 'expired' };
  const nbf = claims.nbf;
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf * 1000 - ID_TOKEN_SKEW_MS > now)) return { ok: false, why: 'not yet valid' };
  const shop = shopOfUrl(claims.dest);
  if (!shop) return { ok: false, why: 'no shop' };
  if (claims.iss !== undefined && shopOfUrl(claims.iss) !== shop) return { ok: false, why: 'issuer is another shop' };
  const sub = typeof claims.sub === 'string' && /^[0-9A-Za-z_-]{1,64}$/.test(claims.sub) ? claims.sub : null;
  if (!sub) return { ok: false, why: 'no staff user' };
  const sid = typeof claims.sid === 'string' ? claims.sid.slice(0, 128) : '';
  return { ok: true, identity: { shop, staffUser: sub, sessionId: sid } };
}

/** The embedded app's part of the platform (AppPlatform.embedded). */
export function shopifyEmbedded(core: Core, ops: Pick<PlatformOps, 'newStoreRow'>): EmbeddedApp {
  const appConfig = () => {
    const clientId = appClientId(core.config);
    const secretVar = APP_SECRET_ENV.find((name) => !!core.config.env(name));
    return clientId && secretVar ? { clientId, secretVar, secret: core.config.env(secretVar)! } : null;
  };
  const installing = new Map<string, Promise<Installed>>();
  return {
    clientId: () => appConfig()?.clientId ?? null,
    verify(token) {
      const app = appConfig();
      if (!app) return { ok: false, why: 'the app is not configured' };
      return verifyIdToken(token, app, core.clock.now());
    },
    ensureInstalled(identity, idToken) {
      // The admin's first load often comes with a second request at once: one exchange per shop in this process.
      let p = installing.get(identity.shop);
      if (!p) {
        p = install(identity, idToken).finally(() => installing.delete(identity.shop));
        installing.set(identity.shop, p);
      }
      return p;
    },
  };

  async function install(identity: EmbeddedIdentity, idToken: string): Promise<Installed> {
    const app = appConfig();
    if (!app) return { ok: false, status: 503, why: 'the app is not configured' };
    const existing = await core.repo.getStoreByShop(identity.shop);
    if (existing && existing.uninstalledAt == null && existing.credentialMode === 'oauth') {
      const link = await core.repo.links.get(existing.id);
      // A token held and not refused for good: nothing to exchange. A store paused for want of a token Shopify would
      // give (its refresh refused: reinstall required) is mended by the exchange of its merchant's ID token.
      const mendable = link?.pauseReason === 'credentials' && link.pauseCode === 'SVC_REINSTALL_REQUIRED';
      if ((link?.tokenSealed || link?.refreshSealed) && !mendable) return { ok: true, store: existing };
    } else if (existing && existing.uninstalledAt == null && existing.credentialMode !== 'oauth') {
      // A store set up by its operator with other credentials (a custom app's token): nothing to exchange.
      return { ok: true, store: existing };
    }
    const shop = identity.shop;
    const timeout = core.config.handoff.timeoutMs;
    const asked = core.clock.now();
    const reply = await exchangeIdToken(tokenUrl(shop, core.config.shopifyAdminUrl), app.clientId, app.secret, idToken, timeout);
    if (reply.kind !== 'issued') {
      const why = reply.kind === 'refused' ? `HTTP ${reply.status}${reply.error ? `, ${reply.error}` : ''}` : reply.why;
      core.log.warn(`token exchange for ${shop}: Shopify issued no token (${why})`);
      return { ok: false, status: reply.kind === 'refused' && reply.status < 500 ? 401 : 502, why: `Shopify issued no token (${why})` };
    }
    const store = await completeInstall(core, ops, shop, app.clientId, app.secretVar, reply, asked, 'token exchange');
    if (!store) {
      core.log.warn(`token exchange for ${shop}: the shop's identity could not be read`);
      return { ok: false, status: 502, why: "the shop's identity could not be read" };
    }
    return { ok: true, store };
  }
}

type Installed = { ok: true; store: StoreRow } | { ok: false; status: number; why: string };
