/** Agent grants: issue, list, revoke (local admin only) and bearer authentication (every API call). */
import type { GrantRow, StoreRow } from '../../db/types.ts';
import { AppError, refuse } from '../contract/errors.ts';
import { SCOPES, TIERS, TIER_LABELS, TIER_NAMES, type Scope, type Tier } from '../contract/scopes.ts';
import type { SharedAreas, TenantStore } from '../../db/repo.ts';
import type { Core, CoreWith } from '../core.ts';
import { parseDuration } from '../contract/durations.ts';
import { GRANT_MAX_TTL_MS } from '../contract/limits.ts';
import { iso, isoOrNull } from '../lib/clock.ts';
import { isWellFormedGrantToken, newGrantToken, sha256Hex } from '../lib/crypto.ts';
import { accessTokenGrant, type ResourceKind } from '../oauth/tokens.ts';
import type { Actor, OpContext } from './context.ts';
import { auditAdmin, type AdminSurface } from './human-audit.ts';

export interface IssueGrantInput {
  shopDomain: string;
  tier: Tier;
  scopes?: string[];
  ttlMs: number;
  label?: string;
  /** The OAuth client whose consent issues it (src/oauth/); absent for a grant issued by hand. */
  client?: { id: string; name: string };
}

/** The only place a token exists in clear: returned to the admin once, never stored. */
export async function issueGrant(core: CoreWith<TenantStore>, input: IssueGrantInput) {
  const store = await core.repo.getStoreByShop(input.shopDomain);
  if (!store) throw new AppError('not_found', `No store ${input.shopDomain}; run hookrelay init --shop ${input.shopDomain} first.`);
  const tierScopes: readonly Scope[] = TIERS[input.tier];
  if (!tierScopes) throw new AppError('invalid_input', `Unknown tier ${input.tier}.`);
  const scopes = input.scopes?.length ? input.scopes : [...tierScopes];
  const outside = scopes.filter((s) => !tierScopes.includes(s as Scope));
  if (outside.length) {
    const unknown = outside.filter((s) => !SCOPES.includes(s as Scope));
    throw new AppError(
      'invalid_input',
      unknown.length ? `Unknown scopes: ${unknown.join(', ')}.` : `Scopes outside tier ${input.tier}: ${outside.join(', ')}.`,
    );
  }
  const now = core.clock.now();
  const token = newGrantToken();
  const row: GrantRow = {
    id: core.ids.next('gr'),
    storeId: store.id,
    tier: input.tier,
    scopes: JSON.stringify([...new Set(scopes)]),
    label: input.label ?? `${input.tier} grant`,
    tokenHash: sha256Hex(token),
    expiresAt: now + input.ttlMs,
    revokedAt: null,
    createdAt: now,
    lastUsedAt: null,
    clientId: input.client?.id ?? null,
    clientName: input.client?.name ?? null,
  };
  await core.repo.insertGrant(row);
  return { grantId: row.id, token, tier: row.tier, scopes: JSON.parse(row.scopes) as string[], expiresAt: iso(row.expiresAt) };
}

/** A person's request for a grant, as typed: the tier's name, a lifetime such as `8h` or `30d`, an optional label. */
export interface GrantRequest {
  tier: string;
  ttl: string;
  label?: string;
}

/** The longest grant label: a name for a person to recognise, not a note. */
export const LABEL_MAX_LENGTH = 100;
const UNPRINTABLE = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

/**
 * The one check of a person's grant request, wherever it is typed (`grant issue`, the Agents page, OAuth consent):
 * a known tier, a lifetime of at most 90 days, a label of at most LABEL_MAX_LENGTH printable characters (blank: none).
 * Throws `invalid_input`.
 */
export function checkGrantRequest(req: GrantRequest): { tier: Tier; ttlMs: number; label: string | undefined } {
  if (!TIER_NAMES.includes(req.tier as Tier)) throw new AppError('invalid_input', `The tier must be one of ${TIER_NAMES.join(', ')}.`);
  const ttlMs = parseDuration(req.ttl.trim());
  if (!ttlMs) throw new AppError('invalid_input', 'The lifetime (TTL) must look like 30m, 8h or 7d.');
  if (ttlMs > GRANT_MAX_TTL_MS) throw new AppError('invalid_input', 'The lifetime (TTL) may be at most 90d: grants are time-bounded.');
  const label = req.label?.trim() || undefined;
  if (label && (label.length > LABEL_MAX_LENGTH || UNPRINTABLE.test(label))) {
    throw new AppError('invalid_input', `The label must be at most ${LABEL_MAX_LENGTH} printable characters.`);
  }
  return { tier: req.tier as Tier, ttlMs, label };
}

/** The person issuing a grant: their store, their audit actor label and where they act (a Human of the seat is one). */
export interface GrantIssuer {
  store: StoreRow;
  actor: string;
  face: AdminSurface;
}

/**
 * Issues a grant of the issuer's store, as the issuer: the one place a person's grant is minted (`grant issue`, the
 * Agents page, OAuth consent). Checks the request (checkGrantRequest), narrows the tier's scopes to `scopes` when
 * given (OAuth: what the client asked), and writes the audit row as the person's (the token is in the answer only).
 */
export async function issueHumanGrant(
  core: Core,
  issuer: GrantIssuer,
  req: GrantRequest,
  extra: { scopes?: string[]; client?: { id: string; name: string } } = {},
) {
  const { tier, ttlMs, label } = checkGrantRequest(req);
  const { store } = issuer;
  return auditAdmin(
    core,
    issuer.actor,
    'issueGrant',
    () => issueGrant(core, { shopDomain: store.shopDomain, tier, ttlMs, label, scopes: extra.scopes, client: extra.client }),
    (g) => ({
      storeId: store.id,
      targetId: g.grantId,
      transition: `issued ${g.tier} (${g.scopes.join(', ')}) for ${ttlMs / 1000} s${extra.client ? ` to OAuth client ${extra.client.id}` : ''}`,
    }),
    async () => store.id,
    issuer.face,
  );
}

/** A grant as the admin sees it: never the token or its hash. */
function grantView(g: GrantRow, now: number) {
  return {
    grantId: g.id,
    storeId: g.storeId,
    tier: g.tier,
    scopes: JSON.parse(g.scopes) as string[],
    label: g.label,
    createdAt: iso(g.createdAt),
    expiresAt: iso(g.expiresAt),
    revokedAt: isoOrNull(g.revokedAt),
    state: g.revokedAt != null ? 'revoked' : g.expiresAt <= now ? 'expired' : 'active',
    /** The OAuth client whose consent issued it (its metadata document's URL and unverified name); null when issued by hand. */
    client: g.clientId === null ? null : { id: g.clientId, name: g.clientName ?? g.clientId },
  };
}

export async function listGrants(core: CoreWith<TenantStore>, shopDomain?: string) {
  let storeId: string | undefined;
  if (shopDomain) {
    const store = await core.repo.getStoreByShop(shopDomain);
    if (!store) throw new AppError('not_found', `No store ${shopDomain}.`);
    storeId = store.id;
  }
  const now = core.clock.now();
  return (await core.repo.listGrants(storeId)).map((g) => grantView(g, now));
}

/** Revokes a grant now, and with it every OAuth access and refresh token it holds (they are refused from this moment). */
export async function revokeGrant(core: CoreWith<TenantStore & Pick<SharedAreas, 'oauth'>>, grantId: string) {
  const g = await core.repo.revokeGrant(grantId, core.clock.now());
  if (!g) throw new AppError('not_found', `No grant ${grantId}.`);
  await core.repo.oauth.revokeGrantTokens(grantId, core.clock.now());
  return grantView(g, core.clock.now());
}

/**
 * Who calls an operation: a bearer grant (its grant, store and scopes), or a human acting from the merchant's seat
 * (no grant); and the actor audit rows and envelopes name.
 */
export interface Principal {
  grant: GrantRow | null;
  store: StoreRow;
  scopes: Scope[];
  actor: Actor;
}

/** A principal authenticated by a grant token. */
export interface AgentPrincipal extends Principal {
  grant: GrantRow;
}

/** Every scope of the contract's tiers: what the merchant holds on their own store (still checked per operation). */
const MERCHANT_SCOPES: readonly Scope[] = [...new Set(Object.values(TIERS).flat())];

/**
 * The merchant acting on their store from the seat (src/seat): actor kind `human`, no grant and no token, every
 * scope of the tiers. The seat authenticates the person (an ID token, a console session) before it builds this.
 */
export function humanPrincipal(store: StoreRow, label: string): Principal {
  return { grant: null, store, scopes: [...MERCHANT_SCOPES], actor: { kind: 'human', grantId: null, label } };
}

/**
 * The bearer token to a live grant of an existing store: the lookup of the one authentication step of the API,
 * /metrics and the MCP endpoint (src/server/steps/authenticate.ts, which answers failures). The token is a grant's
 * own (`hrg_`, issued by hand, good for every resource) or an OAuth access token (`hra_`, src/oauth/tokens.ts: live
 * and issued for `resource`, the resource being called). Throws 401 `unauthorized`.
 */
export async function authenticateBearer(
  core: CoreWith<TenantStore & Pick<SharedAreas, 'oauth'>>,
  authorization: string | null,
  resource: ResourceKind = 'api',
): Promise<AgentPrincipal> {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!m) throw unauthorized('Send Authorization: Bearer <grant token>.');
  const token = m[1]!;
  const grant = token.startsWith('hra_') ? await grantOfAccessToken(core, token, resource) : await grantOfToken(core, token);
  if (grant.revokedAt != null) throw unauthorized('This grant was revoked. Ask the merchant for a new one.');
  if (grant.expiresAt <= core.clock.now()) throw unauthorized('This grant has expired. Ask the merchant for a new one.');
  const store = await core.repo.getStore(grant.storeId);
  if (!store) throw unauthorized('The grant belongs to no store.');
  return { grant, store, scopes: JSON.parse(grant.scopes) as Scope[], actor: { kind: 'agent', grantId: grant.id, label: grant.label } };
}

async function grantOfToken(core: CoreWith<TenantStore>, token: string): Promise<GrantRow> {
  const grant = isWellFormedGrantToken(token) ? await core.repo.getGrantByTokenHash(sha256Hex(token)) : null;
  if (!grant) throw unauthorized('The bearer token is not a valid grant token.');
  return grant;
}

async function grantOfAccessToken(core: CoreWith<TenantStore & Pick<SharedAreas, 'oauth'>>, token: string, resource: ResourceKind): Promise<GrantRow> {
  const found = await accessTokenGrant(core, token, resource);
  if ('refused' in found) throw unauthorized(found.refused);
  return found.grant;
}

/** 403 `missing_scope` when `held` lacks any of what `what` requires; null when it holds them all. */
export function missingScopeRefusal(what: string, required: readonly Scope[], held: readonly Scope[]): AppError | null {
  const missing = required.filter((s) => !held.includes(s));
  if (!missing.length) return null;
  return refuse(
    {
      category: 'scope',
      code: 'missing_scope',
      reason: `${what} needs ${missing.join(', ')}, which this grant does not hold.`,
      recommendedAction: 'Ask the merchant for a grant whose tier includes these scopes.',
    },
    { missingScopes: missing, requiredScopes: required },
  );
}

function unauthorized(message: string): AppError {
  return new AppError('unauthorized', message, undefined, undefined, { 'WWW-Authenticate': 'Bearer realm="hookrelay"' });
}

export async function getCurrentAgentGrant(ctx: OpContext<unknown>) {
  const { grant, store } = ctx;
  if (!grant) throw new AppError('not_found', "A person signed in to the merchant's seat acts without a grant; there is no current grant to show.");
  const now = ctx.core.clock.now();
  return {
    grant: {
      id: grant.id,
      tier: grant.tier,
      tierDescription: TIER_LABELS[grant.tier as Tier] ?? grant.tier,
      label: grant.label,
      scopes: ctx.scopes,
      createdAt: iso(grant.createdAt),
      expiresAt: iso(grant.expiresAt),
      expiresInSeconds: Math.max(0, Math.floor((grant.expiresAt - now) / 1000)),
      revoked: grant.revokedAt != null,
      revokedAt: isoOrNull(grant.revokedAt),
    },
    store: {
      platformKey: store.platformKey,
      platformAccountId: store.platformAccountId,
      shopDomain: store.shopDomain,
      installationId: store.installationId,
    },
    safetyGuidance: [
      'Preview every change; execute only with the confirmation token and an Idempotency-Key.',
      "`delivered` means handed to the store's workflow platform, not that downstream work completed.",
      'Never ask for endpoint secrets or raw event bodies; no read returns them.',
      'Billing approval and grant minting are human-only.',
      'Ask the merchant to revoke this grant when the work is finished.',
    ],
  };
}
