/**
 * The rate-limit step (a call of a limited class, not an execute: src/server/rate-limit.ts counts the windows), and
 * the 429 answer it shares with failed authentication.
 */
import { AppError, defaultRefusal } from '../../contract/errors.ts';
import type { Operation } from '../../contract/operations.ts';
import { EDITION } from '../../contract/scopes.ts';
import type { Core } from '../../core.ts';
import { iso } from '../../lib/clock.ts';
import { metrics } from '../../lib/instruments.ts';
import type { Surface } from '../../mcp/surface.ts';
import { holderOf, type Actor, type OpContext } from '../../ops/context.ts';
import { newSupportCode, type Answer } from '../http.ts';
import type { RateLimiter } from '../rate-limit.ts';
import { audit, auditSummary } from './audit.ts';

/**
 * Takes one call of `op`'s class for the grant and its store: null while within both limits (or for an operation of
 * no class), else the 429. A 429 is
 * audited like any refusal: the first per grant and operation in a window with its own row, the rest folded into one
 * row written by the first limited-class call after the window ends.
 */
export async function rateLimit(
  deps: { core: Core; limiter: RateLimiter },
  op: Operation,
  ctx: OpContext,
  call: { params: Record<string, string>; requestId: string; surface: Surface },
): Promise<Answer | null> {
  const cls = op.rateLimitClass;
  if (!cls) return null;
  const { store } = ctx;
  // Per grant, or per human (the merchant from the seat, by actor label): the per-grant window keys either.
  const holder = holderOf(ctx);
  const d = await deps.limiter.take(cls, holder, store.id);
  const { refusals } = deps.limiter;
  for (const f of refusals.takeFolded()) {
    const transition = `folded: ${f.count} further rate-limited calls from ${iso(f.from)} to ${iso(f.to)}`;
    await auditSummary(deps.core, { ...f, status: 429, errorCode: 'rate_limited', transition }).catch(() => {});
  }
  if (!d.limited) return null;
  if (
    refusals.own({
      storeId: store.id,
      holder,
      grantId: ctx.grant?.id ?? null,
      actorKind: ctx.actor.kind,
      actorLabel: ctx.actor.label,
      operationId: op.operationId,
    })
  ) {
    const err = new AppError('rate_limited', `Too many ${cls} calls for this ${d.scope}.`);
    await audit(deps.core, op, ctx, call.params, 429, null, err, call.requestId, false, call.surface).catch(() => {});
  } else metrics.agentCall(store.id, op.operationId, 429);
  return rateLimited(ctx.actor, cls, d.scope, d.retryAfterSeconds, d.resetAt, call.requestId);
}

/** The 429 of a limited class, or of a client's failed authentications (`auth_failure`), with Retry-After. */
export function rateLimited(
  actor: Actor | null,
  rateLimitClass: Operation['rateLimitClass'] | 'auth_failure',
  scope: 'grant' | 'store' | 'client',
  retryAfterSeconds: number,
  resetAt: number,
  requestId: string,
): Answer {
  const authFailure = rateLimitClass === 'auth_failure';
  const message = authFailure
    ? `Too many failed authentications from this client; wait ${retryAfterSeconds} s.`
    : `Too many ${rateLimitClass} calls for this ${scope}; wait ${retryAfterSeconds} s.`;
  const recommendedAction = authFailure
    ? `Fix the bearer token first (a live grant token, sent as Authorization: Bearer <token>); a valid token is never refused here. Wait ${retryAfterSeconds} seconds before retrying.`
    : `Wait ${retryAfterSeconds} seconds before retrying; read GET /agent/v1/plan-usage before loops or polling.`;
  const supportCode = newSupportCode();
  const body = {
    edition: EDITION,
    actor,
    refusal: { ...defaultRefusal('rate_limited', message)!, recommendedAction },
    error: { code: 'rate_limited', message, supportCode, requestId },
    retryAfterSeconds,
    resetAt: new Date(resetAt).toISOString(),
    rateLimitClass,
    scope,
    recommendedAction,
  };
  return { status: 429, body, headers: { 'Retry-After': String(retryAfterSeconds) }, supportCode };
}
