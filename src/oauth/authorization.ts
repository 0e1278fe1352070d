/**
 * The authorization half of hookrelay's OAuth 2.1 server: an MCP client's /oauth/authorize request checked and held
 * for a person's decision (the consent page, or `hookrelay grant approve CODE`), the person's yes issuing an
 * ordinary grant of their store (the one grant-issuing function, audited as theirs), and the browser sent back to
 * the client with a single-use code. The seam with the pages is /work/wt/oauth-contract.md: the pages call these
 * functions and render; nothing here renders.
 */
import type { StoreRow } from '../../db/types.ts';
import type { OAuthRequestRow } from '../../db/areas/oauth.ts';
import { AppError } from '../contract/errors.ts';
import { SCOPES, TIERS, TIER_NAMES, type Scope, type Tier } from '../contract/scopes.ts';
import type { Core } from '../core.ts';
import { newToken, sha256Hex } from '../lib/crypto.ts';
import { randomBase62 } from '../lib/ids.ts';
import type { AdminSurface } from '../ops/human-audit.ts';
import { recordAdminAction } from '../ops/human-audit.ts';
import { checkGrantRequest, issueHumanGrant, revokeGrant, type GrantRequest } from '../ops/grants.ts';
import { clientMetadata } from './client-metadata.ts';
import { OAuthError } from './errors.ts';
import { issuerOf, newFamilyId, resourceUri } from './tokens.ts';

export { OAuthError };

export interface AuthorizationRequest {
  /** Opaque and unguessable (`oar_` + 192 random bits): the browser that started the flow holds it. */
  id: string;
  /** A short code a person can type (`WDJB-MJHT`), for `hookrelay grant approve CODE`. */
  userCode: string;
  /** From the client's metadata document: always shown as unverified. */
  client: { id: string; name: string; uri: string | null; verified: false };
  redirectUri: string;
  /** The canonical resource: `${publicUrl}/agent/v1/mcp` or `${publicUrl}/agent/v1`. */
  resource: string;
  /** From `scope` (absent: the observer tier's scopes). */
  requestedScopes: Scope[];
  /** The tiers a person may choose: never above what `scope` asked. */
  offeredTiers: Tier[];
  state: string | null;
  createdAt: number;
  expiresAt: number;
  status: 'pending' | 'approved' | 'denied' | 'expired' | 'finished';
  grantId: string | null;
  storeId: string | null;
}

/** The person deciding: their store, audit actor label and face (a seat's Human is one; the CLI builds one). */
export interface Approver {
  store: StoreRow;
  actor: string;
  face: AdminSurface;
}

/** How long a request waits for a person, and how long its browser may take to continue once decided. */
const REQUEST_TTL_MS = 10 * 60_000;
/** How long an authorization code may wait for its exchange. */
const CODE_TTL_MS = 60_000;
/** The longest `state` kept and sent back: a client's nonce, not a store of its own. */
const STATE_MAX_LENGTH = 512;
/** The user code's letters: consonants only (no words, no 0/O, 1/I confusions), 20^8 codes. */
const USER_CODE_LETTERS = 'BCDFGHJKLMNPQRSTVWXZ';
/**
 * The hosts of loopback redirect URIs, as URL spells them: the IP literals OAuth 2.1 names, and `localhost`, which
 * MCP clients in the field (Claude Code, VS Code) list in their documents and then listen on an ephemeral port of.
 */
const LOOPBACK_HOSTS = ['127.0.0.1', '[::1]', 'localhost'];

const notRedirectable = (error: string, why: string) => new OAuthError(error, why, false);
const redirectable = (error: string, why: string) => new OAuthError(error, why, true);

/**
 * Validates an /oauth/authorize query and records the pending request: the client's metadata document fetched
 * (src/oauth/client-metadata.ts), `redirect_uri` one of its redirect URIs exactly (a loopback IP one on any port),
 * `response_type=code`, PKCE S256,
 * `resource` one of the two canonical resources, `scope` within the ten scopes (absent or only `offline_access`: the
 * observer tier's). Throws OAuthError: not redirectable
 * while the client or its redirect URI cannot be trusted (an error page), redirectable after (redirect with error).
 */
export async function startAuthorization(core: Core, query: URLSearchParams): Promise<AuthorizationRequest> {
  const one = (name: string, error: (e: string, why: string) => OAuthError) => {
    const all = query.getAll(name);
    if (all.length > 1) throw error('invalid_request', `${name} is sent more than once.`);
    return all[0] || null;
  };
  const clientId = one('client_id', notRedirectable);
  if (!clientId) throw notRedirectable('invalid_request', 'client_id is required: the https URL of the client’s metadata document.');
  const client = await clientMetadata(core, clientId);
  const redirectUri = one('redirect_uri', notRedirectable);
  if (!redirectUri) throw notRedirectable('invalid_request', 'redirect_uri is required.');
  if (!client.redirectUris.some((listed) => redirectMatches(listed, redirectUri))) {
    throw notRedirectable('invalid_request', 'redirect_uri is not one of the redirect_uris of the client’s metadata document.');
  }
  const state = one('state', redirectable);
  if (state && state.length > STATE_MAX_LENGTH) throw redirectable('invalid_request', `state may be at most ${STATE_MAX_LENGTH} characters.`);
  if (one('response_type', redirectable) !== 'code') throw redirectable('unsupported_response_type', 'response_type must be code.');
  if (one('code_challenge_method', redirectable) !== 'S256') throw redirectable('invalid_request', 'PKCE is required: code_challenge_method must be S256.');
  const challenge = one('code_challenge', redirectable);
  if (!challenge || !/^[A-Za-z0-9_-]{43}$/.test(challenge))
    throw redirectable('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters).');
  const resource = one('resource', redirectable);
  const resources = [resourceUri(core.config.publicUrl, 'mcp'), resourceUri(core.config.publicUrl, 'api')];
  if (!resource || !resources.includes(resource)) throw redirectable('invalid_target', `resource must be one of ${resources.join(', ')}.`);
  const scope = one('scope', redirectable);
  // offline_access (OIDC's ask for a refresh token) is granted to every client here, so it is no scope of ours.
  const asked = scope?.split(' ').filter((s) => s && s !== 'offline_access') ?? [];
  const requested = asked.length ? [...new Set(asked)] : [...TIERS.observer];
  const unknown = requested.filter((s) => !SCOPES.includes(s as Scope));
  if (unknown.length) throw redirectable('invalid_scope', `Unknown scopes: ${unknown.join(', ')}; use ${SCOPES.join(' ')}.`);
  const now = core.clock.now();
  const row: OAuthRequestRow = {
    id: `oar_${randomBase62(24)}`,
    userCode: newUserCode(),
    clientId,
    clientName: client.name,
    clientUri: client.uri,
    redirectUri,
    resource,
    scopes: JSON.stringify(requested),
    codeChallenge: challenge,
    state,
    status: 'pending',
    grantId: null,
    storeId: null,
    createdAt: now,
    expiresAt: now + REQUEST_TTL_MS,
  };
  await core.repo.oauth.addRequest(row);
  return view(row, now);
}

/**
 * Whether `asked` is the document's `listed` redirect URI: the same string, or for a loopback redirect
 * (`http://127.0.0.1:{port}/…`, `http://[::1]:{port}/…`, `http://localhost:{port}/…`) the same but for its port, which
 * OAuth 2.1 (§8.4.2, RFC 8252 §7.3) requires be allowed to vary: a native client listens on whatever port the system
 * gives it. The host itself must be the listed one.
 */
function redirectMatches(listed: string, asked: string): boolean {
  if (listed === asked) return true;
  if (!URL.canParse(listed) || !URL.canParse(asked)) return false;
  const [a, b] = [new URL(listed), new URL(asked)];
  if (a.protocol !== 'http:' || !LOOPBACK_HOSTS.includes(a.hostname)) return false;
  a.port = b.port;
  return a.href === b.href;
}

/** By id or by user code (case-insensitive, dash optional); null when unknown. An expired request reads 'expired'. */
export async function findAuthorization(core: Core, idOrUserCode: string): Promise<AuthorizationRequest | null> {
  const row = await rowOf(core, idOrUserCode);
  return row && view(row, core.clock.now());
}

/**
 * The person's yes: issues a grant of `human`'s store through the one grant-issuing function (audited as the human,
 * the client's id and name recorded on the grant), its scopes the tier's within what the client asked. Refuses a
 * tier not offered (`invalid_input`, 400: above the requested scope), a TTL over 90 days or a bad label
 * (`invalid_input`), an unknown request (`not_found`) and one no longer pending (`conflict`).
 */
export async function approveAuthorization(core: Core, human: Approver, idOrUserCode: string, choice: GrantRequest): Promise<AuthorizationRequest> {
  const req = await pending(core, idOrUserCode);
  checkGrantRequest(choice);
  if (!req.offeredTiers.includes(choice.tier as Tier)) {
    throw new AppError(
      'invalid_input',
      `The tier ${choice.tier} is above what ${req.client.name} asked for (${req.requestedScopes.join(' ')}); choose one of ${req.offeredTiers.join(', ')}.`,
    );
  }
  const scopes = TIERS[choice.tier as Tier].filter((s) => req.requestedScopes.includes(s));
  const granted = await issueHumanGrant(core, human, choice, { scopes, client: { id: req.client.id, name: req.client.name } });
  const won = await core.repo.oauth.decideRequest(req.id, core.clock.now(), {
    status: 'approved',
    grantId: granted.grantId,
    storeId: human.store.id,
    expiresAt: core.clock.now() + REQUEST_TTL_MS,
  });
  if (!won) {
    // Decided by someone else meanwhile (or expired): the grant just issued is no one's.
    await revokeGrant(core, granted.grantId);
    throw new AppError('conflict', 'This authorization request was decided meanwhile or has expired.');
  }
  return (await findAuthorization(core, req.id))!;
}

/** The person's no, audited as theirs: the client's browser is sent back with `error=access_denied`. */
export async function denyAuthorization(core: Core, human: Approver, idOrUserCode: string): Promise<AuthorizationRequest> {
  const req = await pending(core, idOrUserCode);
  const now = core.clock.now();
  const won = await core.repo.oauth.decideRequest(req.id, now, { status: 'denied', grantId: null, storeId: human.store.id, expiresAt: now + REQUEST_TTL_MS });
  if (!won) throw new AppError('conflict', 'This authorization request was decided meanwhile or has expired.');
  await recordAdminAction(
    core,
    human.actor,
    'denyAuthorization',
    { storeId: human.store.id, targetId: req.id, transition: `denied OAuth client ${req.client.id}` },
    human.face,
  );
  return (await findAuthorization(core, req.id))!;
}

/**
 * Where the browser that started request `id` goes next: once approved, the client's redirect_uri with a fresh
 * single-use code (minted here, once; 60 s), `state` and `iss`; once denied or expired, `error=access_denied`; null
 * while pending. Throws OAuthError (not redirectable) for an unknown request or one already finished.
 */
export async function finishAuthorization(core: Core, id: string): Promise<string | null> {
  const row = id.startsWith('oar_') ? await core.repo.oauth.requestById(id) : null;
  if (!row) throw notRedirectable('invalid_request', 'No such authorization request.');
  const req = view(row, core.clock.now());
  if (req.status === 'pending') return null;
  if (req.status === 'finished') throw notRedirectable('invalid_request', 'This authorization was already completed; start again from the client.');
  if (req.status === 'denied') return authorizationRedirect(core, req, { error: 'access_denied', error_description: 'The merchant denied the request.' });
  if (req.status === 'expired') return authorizationRedirect(core, req, { error: 'access_denied', error_description: 'Nobody approved the request in time.' });
  if (!(await core.repo.oauth.finishRequest(row.id)))
    throw notRedirectable('invalid_request', 'This authorization was already completed; start again from the client.');
  const code = newToken('hro_');
  const now = core.clock.now();
  await core.repo.oauth.addCode({
    codeHash: sha256Hex(code),
    grantId: row.grantId!,
    familyId: newFamilyId(),
    clientId: row.clientId,
    redirectUri: row.redirectUri,
    codeChallenge: row.codeChallenge,
    resource: row.resource,
    createdAt: now,
    expiresAt: now + CODE_TTL_MS,
    usedAt: null,
  });
  return authorizationRedirect(core, req, { code });
}

/**
 * The client's redirect URI with `params`, its `state` and `iss` (RFC 9207): how an authorization answer, or a
 * redirectable OAuthError of startAuthorization (`{ error, error_description }` with the query's redirect_uri and
 * state), goes back to the client.
 */
export function authorizationRedirect(core: Core, to: { redirectUri: string; state: string | null }, params: Record<string, string>): string {
  const url = new URL(to.redirectUri);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  if (to.state !== null) url.searchParams.set('state', to.state);
  url.searchParams.set('iss', issuerOf(core.config.publicUrl));
  return url.href;
}

/** The request by id (`oar_…`) or user code (case-insensitive, dash and spaces optional). */
async function rowOf(core: Core, idOrUserCode: string): Promise<OAuthRequestRow | null> {
  const key = idOrUserCode.trim();
  if (key.startsWith('oar_')) return core.repo.oauth.requestById(key);
  const letters = key.toUpperCase().replace(/[\s-]/g, '');
  if (!new RegExp(`^[${USER_CODE_LETTERS}]{8}$`).test(letters)) return null;
  return core.repo.oauth.requestByUserCode(`${letters.slice(0, 4)}-${letters.slice(4)}`);
}

/** A pending request, else `not_found` (unknown) or `conflict` (decided, expired). */
async function pending(core: Core, idOrUserCode: string): Promise<AuthorizationRequest> {
  const req = await findAuthorization(core, idOrUserCode);
  if (!req) throw new AppError('not_found', 'No such authorization request; check the code the page shows.');
  if (req.status !== 'pending') throw new AppError('conflict', `This authorization request is ${req.status}, no longer pending.`);
  return req;
}

function newUserCode(): string {
  // Bytes at or past the last whole multiple of the alphabet are drawn again, so every letter is equally likely.
  const n = USER_CODE_LETTERS.length;
  const unbiased = 256 - (256 % n);
  let letters = '';
  while (letters.length < 8) {
    for (const b of crypto.getRandomValues(new Uint8Array(8))) if (b < unbiased && letters.length < 8) letters += USER_CODE_LETTERS[b % n];
  }
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}

/**
 * The tiers a person may choose for `requested`: from observer up to the lowest tier holding every requested scope
 * (a higher one would only add scopes nobody asked for), leaving out a tier that holds none of them.
 */
export function offeredTiers(requested: readonly Scope[]): Tier[] {
  const offered: Tier[] = [];
  for (const tier of TIER_NAMES) {
    const scopes: readonly Scope[] = TIERS[tier];
    if (scopes.some((s) => requested.includes(s))) offered.push(tier);
    if (requested.every((s) => scopes.includes(s))) break;
  }
  return offered;
}

function view(row: OAuthRequestRow, now: number): AuthorizationRequest {
  const requestedScopes = JSON.parse(row.scopes) as Scope[];
  const open = row.status === 'pending' || row.status === 'approved';
  return {
    id: row.id,
    userCode: row.userCode,
    client: { id: row.clientId, name: row.clientName, uri: row.clientUri, verified: false },
    redirectUri: row.redirectUri,
    resource: row.resource,
    requestedScopes,
    offeredTiers: offeredTiers(requestedScopes),
    state: row.state,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    status: open && row.expiresAt <= now ? 'expired' : (row.status as AuthorizationRequest['status']),
    grantId: row.grantId,
    storeId: row.storeId,
  };
}
