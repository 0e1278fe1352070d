/**
 * Metrics tokens: a scrape credential for GET /metrics that does not expire with grants. Made, listed and revoked
 * by the local admin only (`hookrelay metrics-token`); bound to one store, it sees what a grant of that store with
 * setup:read sees. Each token is one box-wide setting row keyed by its SHA-256 (`metrics-token:<hex>`): a scrape
 * reads one row by primary key (no cache, so a revoke applies to the next scrape on every instance), and issue and
 * revoke never rewrite a value another command may be writing, so instances on one PostgreSQL need no lock.
 */
import type { TenantStore } from '../../db/repo.ts';
import type { StoreRow } from '../../db/types.ts';
import { looksLikeToken } from '../client/config.ts';
import { AppError } from '../contract/errors.ts';
import type { CoreWith } from '../core.ts';
import { iso, isoOrNull } from '../lib/clock.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { randomBase62 } from '../lib/ids.ts';
import { storeOrOnly } from './stores.ts';

/** What starts every metrics token, so the redactor and a secret scanner can tell one. */
const METRICS_TOKEN_PREFIX = 'hrm_';
/** The settings rows' key prefix (no `_` or `%`: it is matched with LIKE). */
const KEY_PREFIX = 'metrics-token:';
const LABEL_MAX_LENGTH = 100;
/** 32 random bytes in base62 are 43 characters. */
const WELL_FORMED = /^hrm_[0-9A-Za-z]{43}$/;

type Core = CoreWith<TenantStore>;

/** One row's JSON value: never the token, whose hash is only the row's key. */
interface StoredMetricsToken {
  id: string;
  storeId: string;
  label: string;
  createdAt: number;
  revokedAt: number | null;
}

/** A metrics token as the admin sees it: never the token or its hash. */
export interface MetricsTokenView {
  tokenId: string;
  storeId: string;
  shopDomain: string | null;
  label: string;
  createdAt: string;
  revokedAt: string | null;
  state: 'active' | 'revoked';
}

const keyOf = (token: string) => `${KEY_PREFIX}${sha256Hex(token)}`;

/** The token of an `Authorization: Bearer hrm_…` header, or null when the bearer is anything else (a grant's). */
export function metricsTokenIn(authorization: string | null): string | null {
  const m = /^Bearer\s+(hrm_\S*)\s*$/i.exec(authorization ?? '');
  return m ? m[1]! : null;
}

/**
 * The store a metrics token scrapes; 401 (`unauthorized`, WWW-Authenticate) for a token that is malformed, unknown,
 * revoked or whose store is gone. The caller sends that failure through the failed-authentication limiter.
 */
export async function authenticateMetricsToken(core: CoreWith<TenantStore>, token: string): Promise<StoreRow> {
  if (!WELL_FORMED.test(token)) throw unauthorized('The bearer token is not a valid metrics token.');
  const raw = await core.repo.getSetting(keyOf(token));
  if (raw === null) throw unauthorized('The bearer token is not a valid metrics token.');
  const stored = JSON.parse(raw) as StoredMetricsToken;
  if (stored.revokedAt != null) throw unauthorized('This metrics token was revoked. Ask the operator for a new one (hookrelay metrics-token issue).');
  const store = await core.repo.getStore(stored.storeId);
  if (!store) throw unauthorized('The metrics token belongs to no store.');
  return store;
}

/**
 * Makes a metrics token for the store of `shopDomain` (or the box's only store). The only place the token exists
 * in clear is the answer: the row keeps its hash. Local admin only, never over HTTP.
 */
export async function issueMetricsToken(core: Core, input: { shopDomain?: string; label?: string }) {
  const label = checkLabel(input.label);
  const store = await storeOrOnly(core, input.shopDomain);
  const token = `${METRICS_TOKEN_PREFIX}${randomBase62(32)}`;
  const row: StoredMetricsToken = { id: newTokenId(), storeId: store.id, label, createdAt: core.clock.now(), revokedAt: null };
  await core.repo.putSetting(keyOf(token), JSON.stringify(row), row.createdAt);
  return {
    ...view(row, store.shopDomain),
    token,
    note: 'The token is shown this once and never again; send it as Authorization: Bearer <token> to GET /metrics. It does not expire: revoke it with hookrelay metrics-token revoke.',
  };
}

/** Every metrics token of the box (or of one store), oldest first; never a token or its hash. */
export async function listMetricsTokens(core: Core, shopDomain?: string): Promise<MetricsTokenView[]> {
  const storeId = shopDomain === undefined ? undefined : (await storeOrOnly(core, shopDomain)).id;
  const shops = new Map((await core.repo.listStores()).map((s) => [s.id, s.shopDomain]));
  return (await storedTokens(core))
    .map((t) => t.row)
    .filter((r) => storeId === undefined || r.storeId === storeId)
    .map((r) => view(r, shops.get(r.storeId) ?? null));
}

/** Revokes a token by its id (`mtk_…`) now: its next scrape, on any instance, answers 401. Revoking twice changes nothing. */
export async function revokeMetricsToken(core: Core, tokenId: string) {
  if (tokenId.trim().toLowerCase().startsWith(METRICS_TOKEN_PREFIX) || looksLikeToken(tokenId)) {
    throw new AppError('invalid_input', "Give the token's id (mtk_…, from hookrelay metrics-token list), never the token itself.");
  }
  const found = (await storedTokens(core)).find((t) => t.row.id === tokenId);
  if (!found) throw new AppError('not_found', `No metrics token ${tokenId}; hookrelay metrics-token list shows them.`);
  const { key, row } = found;
  const already = row.revokedAt != null;
  if (!already) {
    row.revokedAt = core.clock.now();
    await core.repo.putSetting(key, JSON.stringify(row), row.revokedAt);
  }
  return { ...view(row, (await core.repo.getStore(row.storeId))?.shopDomain ?? null), alreadyRevoked: already };
}

/** The rows, oldest first. The key (the hash) stays here: only revoke writes back under it. */
async function storedTokens(core: Core): Promise<{ key: string; row: StoredMetricsToken }[]> {
  const rows = await core.repo.listSettings(KEY_PREFIX);
  return rows
    .map((r) => ({ key: r.key, row: JSON.parse(r.value) as StoredMetricsToken }))
    .sort((a, b) => a.row.createdAt - b.row.createdAt || a.row.id.localeCompare(b.row.id));
}

/** Free text naming the scraper, e.g. `prometheus`; nothing shaped like a token (refused unechoed). */
function checkLabel(label: string | undefined): string {
  if (label === undefined) return 'metrics token';
  const l = label.trim();
  if (l.length === 0 || l.length > LABEL_MAX_LENGTH || /[\p{Cc}\p{Cf}\u2028\u2029]/u.test(l)) {
    throw new AppError('invalid_input', `--label must be 1 to ${LABEL_MAX_LENGTH} printable characters, e.g. prometheus.`);
  }
  if (l.split(/\s+/).some((w) => looksLikeToken(w) || w.toLowerCase().startsWith(METRICS_TOKEN_PREFIX))) {
    throw new AppError('invalid_input', '--label looks like a credential; name the scraper (e.g. prometheus), never a token.');
  }
  return l;
}

/** `mtk_` and 16 lower-case hex characters: an id that says what it names, unlike the token. */
function newTokenId(): string {
  return `mtk_${Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

function view(row: StoredMetricsToken, shopDomain: string | null): MetricsTokenView {
  return {
    tokenId: row.id,
    storeId: row.storeId,
    shopDomain,
    label: row.label,
    createdAt: iso(row.createdAt),
    revokedAt: isoOrNull(row.revokedAt),
    state: row.revokedAt == null ? 'active' : 'revoked',
  };
}

function unauthorized(message: string): AppError {
  return new AppError('unauthorized', message, undefined, undefined, { 'WWW-Authenticate': 'Bearer realm="hookrelay"' });
}
