/**
 * The console's sign-in (self-hosted face): `hookrelay console` makes a single-use, short-lived sign-in link bound
 * to a store and a person; opening it starts a session held in an HttpOnly, SameSite=Strict cookie (sent to the
 * console and to the OAuth consent page). Only SHA-256
 * hashes of link and session tokens are stored (db/areas/console.ts). A session's CSRF token is derived from its
 * secret token, so a write proves it was made by a page of that session.
 */
import type { StoreRow } from '../../db/types.ts';
import { AppError } from '../contract/errors.ts';
import type { Core } from '../core.ts';
import { constantTimeEqual, sha256Hex } from '../lib/crypto.ts';
import { randomBase62 } from '../lib/ids.ts';
import { cookieOf, publicLink } from '../lib/web.ts';

const SESSION_COOKIE = 'hookrelay_console';
/** A sign-in link's life by default, and its longest. */
export const LINK_TTL_MS = 10 * 60_000;
export const LINK_TTL_MAX_MS = 60 * 60_000;
/** A console session's life. */
export const SESSION_TTL_MS = 12 * 3600_000;

/** How a person gets a sign-in link, as a page says it: the command with the store it defaults to, no placeholder. */
export const SIGN_IN_COMMAND =
  '<code>hookrelay console</code> where hookrelay runs (with <code>--shop</code> and your store’s myshopify.com domain on a box that serves several stores)';

const LINK_TOKEN = /^hrc_[0-9A-Za-z]{32}$/;
const SESSION_TOKEN = /^hrs_[0-9A-Za-z]{32}$/;

/** A new sign-in link for `shop` and `actor`: its URL (shown once) and expiry. */
export async function issueSignInLink(core: Core, shop: string, actor: string, ttlMs = LINK_TTL_MS) {
  const store = await core.repo.getStoreByShop(shop);
  if (!store) throw new AppError('not_found', `No store ${shop}; run hookrelay init --shop ${shop} first.`);
  if (store.uninstalledAt != null) throw new AppError('conflict', `The app was uninstalled from ${shop}; its console is closed until it is installed again.`);
  if (!(ttlMs > 0 && ttlMs <= LINK_TTL_MAX_MS)) throw new AppError('invalid_input', `--ttl is at most ${LINK_TTL_MAX_MS / 60_000} minutes.`);
  const token = `hrc_${randomBase62(32).slice(0, 32)}`;
  const now = core.clock.now();
  await core.repo.console.addLink({ tokenHash: sha256Hex(token), storeId: store.id, actor, createdAt: now, expiresAt: now + ttlMs });
  return {
    url: publicLink(core.config.publicUrl, `/console/sign-in?token=${token}`),
    shopDomain: store.shopDomain,
    actor,
    expiresAt: new Date(now + ttlMs).toISOString(),
  };
}

/** A sign-in: the link used once, a new session for its store and person; null when the link is not (or no longer) good. */
export async function signIn(core: Core, linkToken: string): Promise<{ token: string; id: string; store: StoreRow; actor: string; expiresAt: number } | null> {
  if (!LINK_TOKEN.test(linkToken)) return null;
  const now = core.clock.now();
  const link = await core.repo.console.useLink(sha256Hex(linkToken), now);
  if (!link) return null;
  const store = await core.repo.getStore(link.storeId);
  if (!store || store.uninstalledAt != null) return null;
  const token = `hrs_${randomBase62(32).slice(0, 32)}`;
  const id = `ses_${randomBase62(12).slice(0, 16)}`;
  const expiresAt = now + SESSION_TTL_MS;
  await core.repo.console.addSession({ tokenHash: sha256Hex(token), id, storeId: store.id, actor: link.actor, createdAt: now, expiresAt, endedAt: null });
  return { token, id, store, actor: link.actor, expiresAt };
}

/** The live session a request's cookie names, with its token (for the CSRF check); null without one. */
export async function sessionOf(core: Core, req: Request) {
  const token = cookieOf(req, SESSION_COOKIE);
  if (!token || !SESSION_TOKEN.test(token)) return null;
  const row = await core.repo.console.liveSession(sha256Hex(token), core.clock.now());
  return row ? { ...row, token } : null;
}

export async function signOut(core: Core, token: string): Promise<void> {
  await core.repo.console.endSession(sha256Hex(token), core.clock.now());
}

/** The CSRF token of a session: derived from its secret token (never stored, never the token itself). */
export const csrfOf = (sessionToken: string) => sha256Hex(`hookrelay/console-csrf/v1|${sessionToken}`).slice(0, 43);

/** Whether a write carries its session's CSRF token (constant time). */
export const csrfOk = (sessionToken: string, given: string | null | undefined) => !!given && constantTimeEqual(csrfOf(sessionToken), given);

/** Where the session cookie is sent: the console, and the OAuth consent (src/seat/consent.ts), which decides as the person. */
const SESSION_PATHS = ['/console', '/oauth/authorize'] as const;

/** The session cookies (one per path above): HttpOnly, SameSite=Strict, Secure when served over https. */
export function sessionCookies(token: string, maxAgeMs: number, secure: boolean): string[] {
  const rest = `Max-Age=${Math.max(0, Math.floor(maxAgeMs / 1000))}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  return SESSION_PATHS.map((path) => `${SESSION_COOKIE}=${token}; Path=${path}; ${rest}`);
}
