/**
 * The one bearer step of the agent API, /metrics and the MCP endpoint: the Authorization header to a live grant
 * (ops/grants.ts: header parsing, token lookup, revocation and expiry; an OAuth access token only for the resource it
 * was issued for), a failed authentication answered here (401 with the OAuth challenge, or 429 past the client's
 * limit, audited or folded), and what the grant must match (expected context, scopes).
 * Loaded with serve (/metrics needs it): it imports nothing of the zod contract or of MCP.
 */
import { checkExpectedContext } from '../../contract/context.ts';
import { AppError } from '../../contract/errors.ts';
import type { Operation } from '../../contract/operations.ts';
import type { Scope } from '../../contract/scopes.ts';
import type { Core } from '../../core.ts';
import type { AuthFailureLimiter, ClientOf } from '../../lib/auth-failures.ts';
import { iso } from '../../lib/clock.ts';
import { metrics } from '../../lib/instruments.ts';
import type { Surface } from '../../mcp/surface.ts';
import { bearerChallenge } from '../../oauth/metadata.ts';
import type { ResourceKind } from '../../oauth/tokens.ts';
import { authenticateBearer, missingScopeRefusal, type AgentPrincipal, type Principal } from '../../ops/grants.ts';
import { errorAnswer, type Answer } from '../http.ts';
import { audit, auditSummary } from './audit.ts';
import { rateLimited } from './rate-limit.ts';

export interface AuthDeps {
  core: Core;
  /** Failed authentications per client address: 429 past the limit, audit rows folded under a flood. */
  authFailures: AuthFailureLimiter;
}

/** Who tried, for a failed authentication's limit and audit row (an invoke's Call is one). */
export interface Attempt {
  /** The client's address key (see lazyClient), asked only when authentication fails. */
  client: ClientOf;
  requestId: string;
  /** The surface, or how to tell it (/metrics loads MCP's surface rule only with a failure). */
  surface: Surface | (() => Promise<Surface>);
  params?: Record<string, string>;
}

/** A failed authentication's answer, already audited or folded. */
export class Refused {
  constructor(readonly answer: Answer) {}
}

const NO_PARAMS: Record<string, string> = {};

/**
 * The caller behind `authorization`: a grant's principal, or what `lookup` makes of the header (/metrics' metrics
 * tokens). A credential that does not authenticate is answered (Refused): limited per client and audited as `op`,
 * or, with no `attempt` (a scrape with a grant), counted on /metrics' series only. A storage fault is thrown.
 */
export function authenticate(deps: AuthDeps, op: Authenticated, authorization: string | null, attempt: Attempt | null): Promise<AgentPrincipal | Refused>;
export function authenticate<T>(
  deps: AuthDeps,
  op: Authenticated,
  authorization: string | null,
  attempt: Attempt | null,
  lookup: (core: Core, authorization: string | null, resource: ResourceKind) => Promise<T>,
): Promise<T | Refused>;
export async function authenticate(
  deps: AuthDeps,
  op: Authenticated,
  authorization: string | null,
  attempt: Attempt | null,
  lookup: (core: Core, authorization: string | null, resource: ResourceKind) => Promise<unknown> = authenticateBearer,
): Promise<unknown> {
  // An OAuth access token is good for the resource it was issued for: the MCP endpoint, or the API (/metrics too).
  const resource: ResourceKind = op.transport === 'mcp' ? 'mcp' : 'api';
  try {
    return await lookup(deps.core, authorization, resource);
  } catch (caught) {
    if (!(caught instanceof AppError)) throw caught;
    const err = caught.code === 'unauthorized' ? challenged(deps.core, caught, resource, authorization !== null) : caught;
    if (attempt) return new Refused(await failedAuthentication(deps, op, err, attempt));
    metrics.unauthenticated('metrics');
    return new Refused(errorAnswer(null, err));
  }
}

/** What is authenticated: an operation (the MCP transport's is the MCP endpoint), or a route outside the table by a name. */
type Authenticated = Pick<Operation, 'operationId' | 'transport'>;

/**
 * The 401 with the challenge that sends an OAuth client to the resource's metadata (RFC 9728 §5.1), and says
 * `invalid_token` when a credential was sent.
 */
function challenged(core: Core, err: AppError, resource: ResourceKind, tokenSent: boolean): AppError {
  return new AppError(err.code, err.message, err.details, err.refusal, {
    ...err.headers,
    'WWW-Authenticate': bearerChallenge(core.config.publicUrl, resource, tokenSent),
  });
}

/** The grant matches the expected-context headers and holds `scopes` (`what` names the call): else throws 403. */
export function authorize(principal: Pick<Principal, 'store' | 'scopes'>, expected: Headers, what: string, scopes: readonly Scope[]): void {
  checkExpectedContext(expected, principal.store);
  const lacking = missingScopeRefusal(what, scopes, principal.scopes);
  if (lacking) throw lacking;
}

/**
 * A failed bearer authentication: 401, or 429 `auth_failure` once the client address is over its limit. Audited one
 * row per failure up to the window's allowance (AUTH_FAILURE_LIMITS); past it the failures are counted and written as
 * one summary row per operation once their window has ended.
 */
async function failedAuthentication(deps: AuthDeps, op: Authenticated, err: AppError, attempt: Attempt): Promise<Answer> {
  const { requestId } = attempt;
  const d = await deps.authFailures.fail(attempt.client());
  const answer = d.limited
    ? rateLimited(null, 'auth_failure', 'client', d.retryAfterSeconds, d.resetAt, requestId)
    : errorAnswer(null, err, undefined, requestId);
  if (d.audit) {
    const recorded = d.limited ? new AppError('rate_limited', 'Too many failed authentications from this client.') : err;
    const surface = typeof attempt.surface === 'function' ? await attempt.surface() : attempt.surface;
    await audit(deps.core, op, null, attempt.params ?? NO_PARAMS, answer.status, null, recorded, requestId, false, surface).catch(() => {});
  } else {
    metrics.agentCall(null, op.operationId, answer.status);
    deps.authFailures.fold(op.operationId);
  }
  for (const f of deps.authFailures.takeFolded()) {
    const transition = `folded: ${f.count} further failed authentications from ${iso(f.from)} to ${iso(f.to)}`;
    await auditSummary(deps.core, {
      ...f,
      storeId: null,
      grantId: null,
      actorKind: 'anonymous',
      actorLabel: 'unauthenticated',
      status: 401,
      errorCode: 'unauthorized',
      transition,
    }).catch(() => {});
  }
  return answer;
}
