/**
 * The token half of hookrelay's authorization server: the two resources a token may be for, the authorization
 * code's exchange (PKCE S256), refresh with rotation, revocation (RFC 7009), and the lookup of an access token for
 * the one bearer step (src/ops/grants.ts). Tokens are stored as SHA-256 only and bound to their grant: a grant
 * revoked or expired ends its tokens where they are read. A code or refresh token used a second time is taken as
 * stolen: its family and its grant are revoked, and the audit says so.
 */
import { createHash } from 'node:crypto';
import type { GrantRow } from '../../db/types.ts';
import type { OAuthCodeRow, OAuthTokenRow } from '../../db/areas/oauth.ts';
import { API_PREFIX } from '../contract/scopes.ts';
import type { Repo } from '../../db/repo.ts';
import type { Core, CoreWith } from '../core.ts';
import { isWellFormedToken, newToken, sha256Hex } from '../lib/crypto.ts';
import { randomBase62 } from '../lib/ids.ts';
import { publicLink } from '../lib/web.ts';
import { OAuthError } from './errors.ts';

/** What a token may be for: the MCP endpoint or the Agent Operations API (RFC 8707 resource indicators). */
export type ResourceKind = 'mcp' | 'api';

/** The path of each resource; its canonical URI is the public URL with this path. */
export const RESOURCE_PATHS: Record<ResourceKind, string> = { mcp: `${API_PREFIX}/mcp`, api: API_PREFIX };

/** The canonical URI of a resource, e.g. `https://relay.example.com/agent/v1/mcp`. */
export const resourceUri = (publicUrl: string, kind: ResourceKind) => publicLink(publicUrl, RESOURCE_PATHS[kind]);

/** The issuer (RFC 8414, RFC 9207 `iss`): the public URL, without a trailing slash. */
export const issuerOf = (publicUrl: string) => publicLink(publicUrl, '');

/** The longest an access token lives; never past its grant's expiry. */
const ACCESS_TOKEN_TTL_MS = 3600_000;

/** A successful token answer (RFC 6749 §5.1). */
export interface TokenAnswer {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

const invalidGrant = (why: string) => new OAuthError('invalid_grant', why);

/** A new family id: one code's exchange and every rotation after it. */
export const newFamilyId = () => `fam_${randomBase62(16)}`;

/** base64url(SHA-256(verifier)): PKCE's S256 (RFC 7636 §4.2). */
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** POST /oauth/token's grant types, by the form's `grant_type`. Throws OAuthError. */
export async function exchange(core: Core, form: URLSearchParams): Promise<TokenAnswer> {
  const type = form.get('grant_type');
  if (!type) throw new OAuthError('invalid_request', 'grant_type is required.');
  if (type === 'authorization_code') return exchangeCode(core, form);
  if (type === 'refresh_token') return refresh(core, form);
  throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
}

/** The form's one value of `name`: invalid_request when it is missing (and required) or sent twice. */
function param(form: URLSearchParams, name: string, required: true): string;
function param(form: URLSearchParams, name: string, required?: false): string | null;
function param(form: URLSearchParams, name: string, required = false): string | null {
  const all = form.getAll(name);
  if (all.length > 1) throw new OAuthError('invalid_request', `${name} is sent more than once.`);
  if (required && !all[0]) throw new OAuthError('invalid_request', `${name} is required.`);
  return all[0] || null;
}

/**
 * The authorization_code grant: a code used once, for its client, redirect URI, PKCE verifier and resource. Only an
 * exchange that passes every check spends the code (a compare-and-set): one refused leaves it as it was, so a stolen
 * code without its verifier can neither spoil the rightful client's exchange nor, presented twice, get the grant
 * revoked. A verified exchange of a code already spent is a replay: what it issued and its grant are revoked.
 */
async function exchangeCode(core: Core, form: URLSearchParams): Promise<TokenAnswer> {
  const code = param(form, 'code', true);
  const clientId = param(form, 'client_id', true);
  const redirectUri = param(form, 'redirect_uri', true);
  const verifier = param(form, 'code_verifier', true);
  const resource = param(form, 'resource');
  if (!isWellFormedToken(code, 'hro_')) throw invalidGrant('The authorization code is not valid.');
  const row = await core.repo.oauth.codeByHash(sha256Hex(code));
  if (!row) throw invalidGrant('The authorization code is not valid.');
  if (row.clientId !== clientId) throw invalidGrant('The authorization code was issued to another client.');
  if (row.redirectUri !== redirectUri) throw invalidGrant('redirect_uri does not match the authorization request.');
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || s256(verifier) !== row.codeChallenge) throw invalidGrant('The PKCE code_verifier does not match.');
  if (resource !== null && resource !== row.resource) throw new OAuthError('invalid_target', 'resource does not match the authorization request.');
  const now = core.clock.now();
  if (row.usedAt !== null) await replayedCode(core, row);
  if (row.expiresAt <= now) throw invalidGrant('The authorization code has expired.');
  // The grant is read before the code is spent: of two verified exchanges at once, the one that spends it is answered.
  const grant = await liveGrant(core, row.grantId, now);
  if (!(await core.repo.oauth.spendCode(row.codeHash, now))) await replayedCode(core, row);
  return issuePair(core, grant, { familyId: row.familyId, clientId, resource: row.resource }, now);
}

/** A verified code presented after its exchange: its family and grant end. Always throws invalid_grant. */
async function replayedCode(core: Core, row: OAuthCodeRow): Promise<never> {
  await endAuthorization(core, row.familyId, row.grantId, 'authorization code used again');
  throw invalidGrant('The authorization code was already used; what it issued is revoked.');
}

/** The refresh_token grant: rotation (a new pair; the old refresh token used); a second use ends the family and the grant. */
async function refresh(core: Core, form: URLSearchParams): Promise<TokenAnswer> {
  const token = param(form, 'refresh_token', true);
  const clientId = param(form, 'client_id', true);
  const resource = param(form, 'resource');
  if (!isWellFormedToken(token, 'hrr_')) throw invalidGrant('The refresh token is not valid.');
  const now = core.clock.now();
  const used = await core.repo.oauth.useRefresh(sha256Hex(token), now);
  if (used?.row.kind !== 'refresh') throw invalidGrant('The refresh token is not valid.');
  const { row } = used;
  if (!used.firstUse) {
    await endAuthorization(core, row.familyId, row.grantId, 'refresh token used again after rotation');
    throw invalidGrant('The refresh token was already used; its family and grant are revoked.');
  }
  if (row.revokedAt !== null) throw invalidGrant('The refresh token was revoked.');
  if (row.expiresAt <= now) throw invalidGrant('The refresh token has expired.');
  if (row.clientId !== clientId) throw invalidGrant('The refresh token was issued to another client.');
  if (resource !== null && resource !== row.resource) throw new OAuthError('invalid_target', 'resource does not match the refresh token’s.');
  const grant = await liveGrant(core, row.grantId, now);
  return issuePair(core, grant, { familyId: row.familyId, clientId, resource: row.resource }, now);
}

/** The token's grant, when it is neither revoked nor expired: else invalid_grant. */
async function liveGrant(core: Core, grantId: string, now: number): Promise<GrantRow> {
  const grant = await core.repo.getGrant(grantId);
  if (!grant || grant.revokedAt !== null) throw invalidGrant('The grant was revoked.');
  if (grant.expiresAt <= now) throw invalidGrant('The grant has expired.');
  return grant;
}

/** A new access token (≤ 1 h, ≤ the grant's life) and refresh token (the grant's life) of one family. */
async function issuePair(core: Core, grant: GrantRow, bound: { familyId: string; clientId: string; resource: string }, now: number): Promise<TokenAnswer> {
  const access = newToken('hra_');
  const refreshToken = newToken('hrr_');
  const accessExpiry = Math.min(now + ACCESS_TOKEN_TTL_MS, grant.expiresAt);
  const row = (token: string, kind: 'access' | 'refresh', expiresAt: number): OAuthTokenRow => ({
    tokenHash: sha256Hex(token),
    kind,
    grantId: grant.id,
    ...bound,
    createdAt: now,
    expiresAt,
    usedAt: null,
    revokedAt: null,
  });
  await core.repo.oauth.addTokens([row(access, 'access', accessExpiry), row(refreshToken, 'refresh', grant.expiresAt)]);
  return {
    access_token: access,
    token_type: 'Bearer',
    expires_in: Math.floor((accessExpiry - now) / 1000),
    refresh_token: refreshToken,
    scope: (JSON.parse(grant.scopes) as string[]).join(' '),
  };
}

/**
 * A replay (a code or a refresh token used a second time): the family's tokens and the grant are revoked at once,
 * and one audit row says why (the grant's; no token in it).
 */
async function endAuthorization(core: Core, familyId: string, grantId: string, why: string): Promise<void> {
  const now = core.clock.now();
  await core.repo.oauth.revokeFamily(familyId, now);
  const grant = await core.repo.revokeGrant(grantId, now);
  await core.repo.oauth.revokeGrantTokens(grantId, now);
  await core.repo.insertAudit({
    id: core.ids.next('aud'),
    at: now,
    storeId: grant?.storeId ?? null,
    grantId,
    actorKind: 'agent',
    actorLabel: grant?.label ?? 'unknown grant',
    operationId: 'oauthToken',
    scopes: grant?.scopes ?? '[]',
    targetId: grantId,
    intentId: null,
    transition: `${why}: its tokens and the grant revoked`,
    outcome: 'refused',
    status: 400,
    errorCode: 'invalid_grant',
    refusalCategory: 'safety',
    refusalCode: 'oauth_token_reused',
    requestId: null,
    surface: 'http',
  });
}

/**
 * POST /oauth/revoke (RFC 7009): an access or refresh token ends with its family (the access tokens a refresh token
 * led to, and the reverse). Unknown or malformed tokens are answered as revoked, as the RFC asks.
 */
export async function revokeToken(core: Core, form: URLSearchParams): Promise<void> {
  const token = param(form, 'token', true);
  if (!isWellFormedToken(token, 'hra_') && !isWellFormedToken(token, 'hrr_')) return;
  const row = await core.repo.oauth.tokenByHash(sha256Hex(token));
  if (row) await core.repo.oauth.revokeFamily(row.familyId, core.clock.now());
}

/**
 * The grant of an access token that is live (not revoked, unexpired) and was issued for `kind`, or why not in the
 * 401's words. The grant's own state (revoked, expired) is the caller's to check (src/ops/grants.ts).
 */
export async function accessTokenGrant(
  core: CoreWith<Pick<Repo, 'oauth' | 'getGrant'>>,
  token: string,
  kind: ResourceKind,
): Promise<{ grant: GrantRow } | { refused: string }> {
  if (!isWellFormedToken(token, 'hra_')) return { refused: 'The bearer token is not a valid access token.' };
  const row = await core.repo.oauth.tokenByHash(sha256Hex(token));
  if (row?.kind !== 'access') return { refused: 'The bearer token is not a valid access token.' };
  if (row.revokedAt !== null) return { refused: 'This access token was revoked. Authorize again.' };
  if (row.expiresAt <= core.clock.now()) return { refused: 'This access token has expired. Refresh it.' };
  if (row.resource !== resourceUri(core.config.publicUrl, kind)) {
    return { refused: `This access token was issued for another resource (${row.resource}), not ${resourceUri(core.config.publicUrl, kind)}.` };
  }
  const grant = await core.repo.getGrant(row.grantId);
  if (!grant) return { refused: 'The access token belongs to no grant.' };
  return { grant };
}
