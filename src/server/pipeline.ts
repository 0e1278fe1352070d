/**
 * The Agent Operations contract without HTTP: `invoke(op, call)` passes a call through the steps every
 * grant-authenticated operation takes, once each, in order (src/server/steps/): authenticate, authorize (expected
 * context, scopes), validate, rate limit, idempotency, the handler and its envelope, audit with the call's meter
 * (one transaction). Whatever throws becomes the contract's error answer, audited. The answer is data: the HTTP route
 * (agent-api.ts) makes a Response of it, and an in-process caller (MCP code mode) reads it as it is.
 */
import { AppError, refuse } from '../contract/errors.ts';
import type { Operation } from '../contract/operations.ts';
import { executesChange } from '../contract/schemas.ts';
import type { ClientOf } from '../lib/auth-failures.ts';
import { crashPoint } from '../lib/crash-points.ts';
import type { Surface } from '../mcp/surface.ts';
import type { OpContext } from '../ops/context.ts';
import type { Principal } from '../ops/grants.ts';
import type { StorageHealth } from '../relay/storage-health.ts';
import { HANDLERS } from './handlers.ts';
import { errorAnswer, type Answer } from './http.ts';
import type { RateLimiter } from './rate-limit.ts';
import { audit } from './steps/audit.ts';
import { authenticate, authorize, Refused, type AuthDeps } from './steps/authenticate.ts';
import { failure } from './steps/failure.ts';
import { handle, meterOf, type AnyHandler } from './steps/handle.ts';
import { idempotent, requireKey, type IdempotencyDeps } from './steps/idempotency.ts';
import { rateLimit } from './steps/rate-limit.ts';
import { validate, type Input, type RawInput } from './steps/validate.ts';

export interface PipelineDeps extends AuthDeps, IdempotencyDeps {
  endpointChanged(id: string): void;
  limiter: RateLimiter;
  /** Where storage faults are recorded (GET /status); absent in tests that build deps by hand. */
  storage?: StorageHealth;
}

/**
 * One call of a contract operation. The caller is a grant authenticated once for several calls (`principal`: MCP
 * authenticates once per MCP request), or the `authorization` header to authenticate now; either way the expected
 * context and the scopes are checked on every call. `params` are the raw path parameters even when the input comes
 * `validated`: they name the audit row's target and key the idempotency hash. A `principal` is not looked up again:
 * a grant revoked or expired meanwhile is refused from its next authentication on (MCP: the next MCP request).
 */
export interface Call extends RawInput {
  principal?: Principal;
  authorization?: string | null;
  /** The headers that may carry the expected context (X-Service-Expected-*). */
  expected: Headers;
  /** Input the caller has validated against the operation's schemas (its one validation): handed over as is. */
  validated?: Input;
  idempotencyKey: string | null;
  /** One id for every call of a request or of a run: its audit rows and error answers carry it. */
  requestId: string;
  /** The client's address key (see lazyClient), asked only when authentication fails. */
  client: ClientOf;
  surface: Surface;
  /** A write to this read's path that only a human may do (a POST there): refused after the read's steps. */
  humanOnlyWrite?: boolean;
  /** Whether the caller has hung up: an unexpected error then is thrown (nobody to answer), not answered. */
  aborted?: () => boolean;
}

export type Invoke = (op: Operation, call: Call) => Promise<Answer>;

const HANDLED = HANDLERS as Partial<Record<string, AnyHandler>>;

/** `invoke` over `deps`: one per app, shared by every call. */
export function createInvoke(deps: PipelineDeps): Invoke {
  return (op, call) => invoke(deps, op, call);
}

async function invoke(deps: PipelineDeps, op: Operation, call: Call): Promise<Answer> {
  const handler = call.humanOnlyWrite && op.humanOnlyWrite ? refuseHumanOnly(op.humanOnlyWrite) : HANDLED[op.operationId];
  if (!handler) return errorAnswer(null, new AppError('not_found', `${op.operationId} is answered by its own route, not invoked.`), undefined, call.requestId);
  let ctx: OpContext | null = null;
  try {
    const who = call.principal ?? (await authenticate(deps, op, call.authorization ?? null, call));
    if (who instanceof Refused) return who.answer;
    const scoped: OpContext = (ctx = { core: deps.core, ...who, requestId: call.requestId, endpointChanged: deps.endpointChanged });
    authorize(who, call.expected, op.operationId, op.scopes);
    const input = call.validated ?? (await validate(op, call));
    const executing = executesChange(input.body);
    const limited = op.rateLimitClass && !executing ? await rateLimit(deps, op, scoped, call) : null;
    if (limited) return limited;
    const key = call.idempotencyKey;
    if (key) scoped.idempotencyKey = key;
    requireKey(op, executing, key);
    const run = () => handle(op, handler, scoped, input, executing);
    const answer =
      key && op.idempotency !== 'none' ? await idempotent(deps, op, who.store.id, key, { params: call.params, body: input.body }, run) : await run();
    // The handler ran (not a stored answer given again): its meter is counted with the audit row, in one transaction.
    const replayed = answer.replayed === true;
    const meter = replayed ? null : meterOf(op, executing);
    await audit(deps.core, op, scoped, call.params, answer.status, answer.body.data, null, call.requestId, replayed, call.surface, meter);
    if (executing) crashPoint('audited');
    deps.storage?.succeeded();
    return answer;
  } catch (err) {
    return failure(deps, op, ctx, call, err);
  }
}

/** The handler of a human-only write: the call is still authenticated, rate-limited and audited as the read's. */
function refuseHumanOnly(write: NonNullable<Operation['humanOnlyWrite']>): AnyHandler {
  return async () => {
    throw refuse({ category: 'human_only', ...write });
  };
}
