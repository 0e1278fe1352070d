/**
 * A store's Admin API token, by credential mode. `static`: read from the variable the store names, never stored.
 * `client-credentials`: requested with the app's client id and secret (the secret read from its variable at the
 * moment of the request), sealed in platform_links, renewed when three quarters of its life has passed (the token
 * held still sends while the renewal runs, and carries on to near its expiry if the renewal fails) and once when
 * the platform refuses it. One renewal at a time per store: in this process a renewal in flight is shared,
 * and across instances the one holding platform_links' renewal lease renews while the others wait for its token.
 */
import { randomUUID } from 'node:crypto';
import type { ObtainedToken, PlatformLinkRow, PlatformLinkStore } from '../../../db/areas/platform-links.ts';
import type { StoreRow } from '../../../db/types.ts';
import type { CredentialMode } from '../../contract/platform.ts';
import { CREDENTIAL_MODES } from '../../contract/platform.ts';
import type { CoreWith } from '../../core.ts';
import type { PauseRequest } from '../types.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { refreshAccessToken, requestClientCredentialsToken, tokenUrl, type TokenReply } from './admin-api.ts';

/** A renewal holds the store's lease this long; a holder that died is replaced after it. */
const RENEWAL_LEASE_MS = 60_000;
/** How long a caller waits for another instance's renewal (real time) before giving up on this send. */
const RENEWAL_WAIT_MS = 15_000;
const RENEWAL_POLL_MS = 50;
/** A token is renewed once this share of its life has passed (6 h ahead for a 24 h token, 15 min for 60 min). */
const RENEW_AT_SHARE = 0.75;
/** After a failed renewal the token held (still alive) is used this long before the next renewal is tried. */
const RETRY_RENEWAL_MS = 30_000;

export interface Token {
  value: string;
  /** Which token this is: a refusal of generation g renews only while g is still current. Static tokens: 0. */
  generation: number;
}

export type TokenResult = { ok: true; token: Token } | { ok: false; pause: PauseRequest; httpStatus: number | null };

/** The store's credential mode; a store made before modes existed with a token variable is `static`. */
export function credentialModeOf(store: Pick<StoreRow, 'credentialMode' | 'adminTokenEnv'>): CredentialMode | null {
  const mode = store.credentialMode;
  if (mode && (CREDENTIAL_MODES as readonly string[]).includes(mode)) return mode as CredentialMode;
  return store.adminTokenEnv ? 'static' : null;
}

/** The variable the store's credential mode reads: a static token's, or the client secret's (client credentials, OAuth). */
export function credentialVariable(store: Pick<StoreRow, 'credentialMode' | 'adminTokenEnv' | 'clientSecretEnv'>): string | null {
  const mode = credentialModeOf(store);
  return mode === 'static' ? store.adminTokenEnv : mode === 'client-credentials' || mode === 'oauth' ? store.clientSecretEnv : null;
}

const missing = (message: string): TokenResult => ({ ok: false, httpStatus: null, pause: { reason: 'credentials', code: 'SVC_CREDENTIALS_MISSING', message } });

type Keeper = CoreWith<{ links: PlatformLinkStore }>;

interface Cached extends Token {
  expiresAt: number | null;
  obtainedAt: number;
  renewAt: number | null;
  clientId: string | null;
}

export class Credentials {
  /** Tokens this process holds, by store. */
  private readonly cache = new Map<string, Cached>();
  /** Renewals in flight in this process, by store: every concurrent caller shares one. */
  private readonly renewing = new Map<string, Promise<TokenResult>>();
  /** When a store's renewal may be tried again after one failed (in-process; the held token carries on meanwhile). */
  private readonly retryAt = new Map<string, number>();
  /** This process's name on the renewal lease. */
  private readonly owner = randomUUID();

  constructor(private readonly core: Keeper) {}

  /**
   * The token to send with. `refused`: the generation the platform just refused (a 401), which is not handed out
   * again; a newer one (renewed meanwhile, here or by a peer) is. Never throws.
   */
  async token(store: StoreRow, refused?: number): Promise<TokenResult> {
    const mode = credentialModeOf(store);
    if (mode === 'static') return this.staticToken(store);
    if (mode !== 'client-credentials' && mode !== 'oauth') {
      return missing(
        `The store ${store.shopDomain} has no Admin API credentials configured (hookrelay store set --shop ${store.shopDomain} --auth client-credentials …).`,
      );
    }
    if (store.uninstalledAt != null) {
      return {
        ok: false,
        httpStatus: null,
        pause: {
          reason: 'uninstalled',
          code: 'SVC_APP_UNINSTALLED',
          message: `The app was uninstalled from ${store.shopDomain} on ${new Date(store.uninstalledAt).toISOString()}.`,
        },
      };
    }
    if (!store.clientId || !store.clientSecretEnv) {
      return missing(
        `The store ${store.shopDomain} has no client id or client secret variable configured (hookrelay store set --auth client-credentials --client-id … --client-secret-env …).`,
      );
    }
    if (!this.core.config.env(store.clientSecretEnv)) {
      return missing(`The client secret variable ${store.clientSecretEnv} is not set where hookrelay serve runs.`);
    }
    const held = this.cache.get(store.id);
    if (held && this.usable(held, store, refused)) return { ok: true, token: held };
    // Past its renewal point but alive, and not the one refused: send with it while one renewal runs beside.
    if (held && this.alive(held, store, refused)) {
      if (this.core.clock.now() >= (this.retryAt.get(store.id) ?? 0)) void this.shared(store, refused);
      return { ok: true, token: held };
    }
    let got = await this.shared(store, refused);
    // A renewal already in flight for another reason may hand back the very token refused: one more, of its own.
    if (got.ok && refused !== undefined && got.token.generation === refused) got = await this.shared(store, refused);
    if (got.ok) return got;
    // No new token (the token endpoint down, say): one still alive carries on until its end.
    const stored = await this.fromStore(store, refused, 'alive').catch(() => null);
    return stored ? { ok: true, token: stored } : got;
  }

  /**
   * Joins the renewal in flight for the store in this process, or starts one. One that fails is not tried again
   * for RETRY_RENEWAL_MS while the token held is alive (no renewal per send against a token endpoint that is down).
   */
  private shared(store: StoreRow, refused: number | undefined): Promise<TokenResult> {
    let flight = this.renewing.get(store.id);
    if (!flight) {
      flight = this.obtain(store, refused)
        .then((r) => {
          if (r.ok) this.retryAt.delete(store.id);
          else this.retryAt.set(store.id, this.core.clock.now() + RETRY_RENEWAL_MS);
          return r;
        })
        .finally(() => this.renewing.delete(store.id));
      this.renewing.set(store.id, flight);
    }
    return flight;
  }

  /** Drops what this process holds for a store (its credential settings changed). */
  forget(storeId: string): void {
    this.cache.delete(storeId);
  }

  /** When the token this process holds expires, or null (static, none yet). */
  heldUntil(storeId: string): number | null {
    return this.cache.get(storeId)?.expiresAt ?? null;
  }

  private staticToken(store: StoreRow): TokenResult {
    const name = store.adminTokenEnv;
    if (!name)
      return missing(
        `The store ${store.shopDomain} has no Admin API token variable configured (hookrelay store set --shop ${store.shopDomain} --admin-token-env NAME).`,
      );
    const value = this.core.config.env(name);
    if (!value) return missing(`The Admin API token variable ${name} is not set where hookrelay serve runs.`);
    return { ok: true, token: { value, generation: 0 } };
  }

  /** Fresh: for this app, not the one refused, and before its renewal point. */
  private usable(t: Cached, store: StoreRow, refused: number | undefined): boolean {
    if (t.clientId !== store.clientId || t.generation === refused) return false;
    return t.renewAt == null || this.core.clock.now() < t.renewAt;
  }

  /** Alive: for this app, not the one refused, and short of its expiry by a margin (a tenth of its life, at most a minute). */
  private alive(t: Cached, store: StoreRow, refused: number | undefined): boolean {
    if (t.clientId !== store.clientId || t.generation === refused) return false;
    if (t.expiresAt == null) return true;
    return this.core.clock.now() < t.expiresAt - Math.min(60_000, (t.expiresAt - t.obtainedAt) * 0.1);
  }

  /** A stored token when one is good, else a renewal: this process's, or a peer's awaited. */
  private async obtain(store: StoreRow, refused: number | undefined): Promise<TokenResult> {
    const { links } = this.core.repo;
    const started = Date.now();
    for (;;) {
      const stored = await this.fromStore(store, refused, 'fresh');
      if (stored) return { ok: true, token: stored };
      const now = this.core.clock.now();
      if (await links.takeRenewal(store.id, this.owner, now, now + RENEWAL_LEASE_MS)) {
        // A peer may have stored a token between the read above and taking the lease: use it, renew nothing.
        const landed = await this.fromStore(store, refused, 'fresh');
        if (!landed) return this.renew(store);
        await links.failRenewal(store.id, this.owner, null, now);
        return { ok: true, token: landed };
      }
      // Another instance renews: its token lands in platform_links (or its lease ends and this one takes over).
      if (Date.now() - started > RENEWAL_WAIT_MS) {
        return {
          ok: false,
          httpStatus: null,
          pause: {
            reason: 'credentials',
            code: 'SVC_TOKEN_REQUEST_FAILED',
            message: 'Another instance holds the token renewal and did not finish it in time.',
          },
        };
      }
      await Bun.sleep(RENEWAL_POLL_MS);
    }
  }

  /** Takes the stored token of a link read for another purpose (a round's budgets) when none is held and it is fresh. */
  prime(store: StoreRow, link: PlatformLinkRow): void {
    if (!this.cache.has(store.id)) this.adopt(store, link, undefined, 'fresh');
  }

  /** The token in platform_links, opened and cached, when it is for this app, not the one refused, and fresh (or alive). */
  private async fromStore(store: StoreRow, refused: number | undefined, need: 'fresh' | 'alive'): Promise<Cached | null> {
    return this.adopt(store, await this.core.repo.links.get(store.id), refused, need);
  }

  /** A link's token, opened and cached, when it is for this app, not the one refused, and fresh (or alive). */
  private adopt(store: StoreRow, link: PlatformLinkRow | null, refused: number | undefined, need: 'fresh' | 'alive'): Cached | null {
    if (!link?.tokenSealed || link.tokenClientId !== store.clientId || link.tokenGeneration === refused) return null;
    let value: string;
    try {
      value = this.core.box.open(link.tokenSealed);
    } catch {
      return null; // sealed under another key (HOOKRELAY_SECRET_KEY changed): obtain a new one
    }
    const t: Cached = {
      value,
      generation: link.tokenGeneration,
      expiresAt: link.tokenExpiresAt,
      obtainedAt: link.tokenObtainedAt ?? 0,
      renewAt: renewAt(link.tokenObtainedAt ?? 0, link.tokenExpiresAt),
      clientId: link.tokenClientId,
    };
    if (!(need === 'fresh' ? this.usable(t, store, refused) : this.alive(t, store, refused))) return null;
    this.cache.set(store.id, t);
    return t;
  }

  /**
   * Under the renewal lease: asks the platform (client credentials, or an OAuth refresh with the stored refresh
   * token), seals and stores the new token — with its new refresh token, before it is used — or records why not. A
   * refresh answer lost on the way leaves the stored pair as it was: Shopify keeps that refresh token valid until
   * its replacement is used, so the next renewal recovers with it.
   */
  private async renew(store: StoreRow): Promise<TokenResult> {
    const { links } = this.core.repo;
    const secret = this.core.config.env(store.clientSecretEnv!) ?? '';
    const url = tokenUrl(store.shopDomain, this.core.config.shopifyAdminUrl);
    const timeout = this.core.config.handoff.timeoutMs;
    // The token's life counts from the request, not the answer: Shopify starts its clock first, and an answer
    // that arrives late must not make the token look longer-lived than it is.
    const asked = this.core.clock.now();
    let reply: TokenReply;
    if (credentialModeOf(store) === 'oauth') {
      const sealed = (await links.get(store.id))?.refreshSealed;
      let refresh: string | null = null;
      try {
        refresh = sealed ? this.core.box.open(sealed) : null;
      } catch {
        refresh = null;
      }
      if (!refresh) {
        await links.failRenewal(store.id, this.owner, 'SVC_REINSTALL_REQUIRED', this.core.clock.now()).catch(() => undefined);
        return { ok: false, httpStatus: null, pause: reinstall(store, 'hookrelay holds no refresh token for it') };
      }
      reply = await refreshAccessToken(url, store.clientId!, secret, refresh, timeout);
    } else {
      reply = await requestClientCredentialsToken(url, store.clientId!, secret, timeout);
    }
    const now = this.core.clock.now();
    if (reply.kind !== 'issued') {
      const pause = tokenFailure(store, reply);
      this.core.log.warn(`shopify: ${store.shopDomain} got no Admin API token: ${pause.message}`);
      await links.failRenewal(store.id, this.owner, pause.code, now).catch(() => undefined);
      return { ok: false, pause, httpStatus: reply.status };
    }
    const expiresAt = reply.expiresInSeconds == null ? null : asked + reply.expiresInSeconds * 1000;
    const generation = await links.saveToken(store.id, this.owner, obtainedToken(this.core.box, reply, store.clientId, asked), now);
    // The lease ran out meanwhile and a peer renewed too: this token still works; a refusal of it renews again.
    const t: Cached = {
      value: reply.accessToken,
      generation: generation ?? -1,
      expiresAt,
      obtainedAt: asked,
      renewAt: renewAt(asked, expiresAt),
      clientId: store.clientId,
    };
    this.cache.set(store.id, t);
    const how = credentialModeOf(store) === 'oauth' ? 'refreshed' : 'client credentials';
    this.core.log.info(`shopify: ${store.shopDomain} obtained an Admin API token (${how}${expiresAt ? `, expires ${new Date(expiresAt).toISOString()}` : ''})`);
    return { ok: true, token: t };
  }
}

function renewAt(obtainedAt: number, expiresAt: number | null): number | null {
  return expiresAt == null ? null : obtainedAt + Math.floor((expiresAt - obtainedAt) * RENEW_AT_SHARE);
}

/** A token reply as platform_links keeps it: sealed with the box key, with its refresh token when one came; its life counted from when it was asked for. */
export function obtainedToken(box: SecretBox, reply: Extract<TokenReply, { kind: 'issued' }>, clientId: string | null, askedAt: number): ObtainedToken {
  return {
    sealed: box.seal(reply.accessToken),
    expiresAt: reply.expiresInSeconds == null ? null : askedAt + reply.expiresInSeconds * 1000,
    obtainedAt: askedAt,
    scope: reply.scope,
    clientId,
    refreshSealed: reply.refreshToken ? box.seal(reply.refreshToken) : null,
    refreshExpiresAt: reply.refreshToken && reply.refreshExpiresInSeconds != null ? askedAt + reply.refreshExpiresInSeconds * 1000 : null,
  };
}

const reinstall = (store: StoreRow, why: string): PauseRequest => ({
  reason: 'credentials',
  code: 'SVC_REINSTALL_REQUIRED',
  message: `No new Admin API token can be had for ${store.shopDomain}: ${why}. The merchant reinstalls the app.`,
});

function tokenFailure(store: StoreRow, reply: Exclude<TokenReply, { kind: 'issued' }>): PauseRequest {
  if (reply.kind === 'refused' && credentialModeOf(store) === 'oauth') {
    return reinstall(store, `Shopify refused its refresh token (HTTP ${reply.status}${reply.error ? `, ${reply.error}` : ''})`);
  }
  if (reply.kind === 'refused') {
    const message = `Shopify refused the client credentials of ${store.shopDomain} (HTTP ${reply.status}${reply.error ? `, ${reply.error}` : ''}): check the client id ${store.clientId} and the secret in ${store.clientSecretEnv}, and that the app is installed on the store.`;
    return { reason: 'credentials', code: 'SVC_TOKEN_REQUEST_FAILED', message };
  }
  // No answer, a timeout or a 5xx says nothing of the credentials: Shopify is out, and a probe that gets an answer resumes.
  if (reply.why !== 'unreadable') {
    const what = reply.why === 'timeout' ? 'did not answer in time' : reply.why === 'network' ? 'could not be reached' : `answered HTTP ${reply.status}`;
    return { reason: 'platform_unavailable', code: 'SVC_PLATFORM_UNAVAILABLE', message: `Shopify's token endpoint for ${store.shopDomain} ${what}.` };
  }
  return { reason: 'credentials', code: 'SVC_TOKEN_REQUEST_FAILED', message: `Shopify's token endpoint for ${store.shopDomain} answered without a token.` };
}

/** A store's credentials as `store show` and setup state show them: mode, names of variables, token times. Never a value. */
export interface CredentialView {
  mode: CredentialMode | null;
  /** `static`: the variable holding the token. */
  adminTokenEnv: string | null;
  /** `client-credentials`: the app's client id and the variable holding its secret. */
  clientId: string | null;
  clientSecretEnv: string | null;
  /** Whether the variable the mode reads is set where this runs (null when the mode reads none). */
  variableSet: boolean | null;
  /** The token hookrelay obtained (client-credentials, oauth): when, until when, and the last renewal's failure code. */
  token: { obtainedAt: number | null; expiresAt: number | null; lastRenewalAt: number | null; lastRenewalError: string | null } | null;
}

export function describeCredentials(
  store: StoreRow,
  link: Pick<PlatformLinkRow, 'tokenObtainedAt' | 'tokenExpiresAt' | 'lastRenewalAt' | 'lastRenewalError' | 'tokenSealed' | 'tokenClientId'> | null,
  env: (name: string) => string | undefined,
): CredentialView {
  const mode = credentialModeOf(store);
  const variable = credentialVariable(store);
  const own = link?.tokenSealed && link.tokenClientId === store.clientId;
  return {
    mode,
    adminTokenEnv: store.adminTokenEnv,
    clientId: store.clientId,
    clientSecretEnv: store.clientSecretEnv,
    variableSet: variable ? !!env(variable) : null,
    token:
      (mode === 'client-credentials' || mode === 'oauth') && link
        ? {
            obtainedAt: own ? link.tokenObtainedAt : null,
            expiresAt: own ? link.tokenExpiresAt : null,
            lastRenewalAt: link.lastRenewalAt,
            lastRenewalError: link.lastRenewalError,
          }
        : null,
  };
}
