/**
 * The steps every grant-authenticated operation passes, once: bearer grant, expected-context headers, scopes,
 * input validation, handler, envelope, error mapping. Handlers only see validated input and a typed context.
 */
import type { z } from 'zod';
import { checkExpectedContext } from '../contract/context.ts';
import { IDEMPOTENCY_KEY_MAX_LENGTH, IDEMPOTENCY_STALE_MS, IDEMPOTENCY_TTL_MS, MAX_API_BODY_BYTES } from '../contract/limits.ts';
import { AppError, defaultRefusal, inProgress, type ErrorCode } from '../contract/errors.ts';
import type { Operation } from '../contract/operations.ts';
import { executesChange } from '../contract/schemas.ts';
import type { AuditLog } from '../../db/repo.ts';
import type { Core, CoreWith } from '../core.ts';
import { EDITION } from '../contract/scopes.ts';
import { readCapped } from '../lib/body.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { crashPoint } from '../lib/crash-points.ts';
import { metrics } from '../lib/instruments.ts';
import { redactDocument, redactSecretsIn } from '../lib/redact.ts';
import type { Actor, OpContext } from '../ops/context.ts';
import { authenticateBearer, missingScopeRefusal } from '../ops/grants.ts';
import { surfaceOf, type Surface } from '../mcp/surface.ts';
import type { Meter } from '../contract/plans.ts';
import { record } from '../ops/usage.ts';
import { envelopeBody, errorResponse, invalidInput, newSupportCode, withSupportCode } from './http.ts';
import { iso } from '../lib/clock.ts';
import { NO_CLIENT, type AuthFailureLimiter, type ClientOf } from '../lib/auth-failures.ts';
import type { RateLimiter } from './rate-limit.ts';
import { storageFault, storageUnavailable, type StorageHealth } from '../relay/storage-health.ts';

const UTF8 = new TextDecoder();

export type AnyHandler = (ctx: OpContext, input: { params: unknown; query: unknown; body: unknown }) => Promise<unknown>;

export interface PipelineDeps {
  core: Core;
  endpointChanged(id: string): void;
  limiter: RateLimiter;
  /** Failed bearer authentications per client address: 429 past the limit, audit rows folded under a flood. */
  authFailures: AuthFailureLimiter;
  /** Executions in flight per store + Idempotency-Key, so concurrent retries run once. */
  inflight: Map<string, Promise<unknown>>;
  /** Where storage faults are recorded (GET /status); absent in tests that build deps by hand. */
  storage?: StorageHealth;
}

export async function runOperation(
  deps: PipelineDeps,
  op: Operation,
  handler: AnyHandler,
  req: Request,
  params: Record<string, string>,
  requestId: string,
  /** The client's address key (see lazyClient), asked only when authentication fails. */
  client: ClientOf = NO_CLIENT,
): Promise<Response> {
  let ctx: OpContext | null = null;
  try {
    const principal = await authenticateBearer(deps.core, req.headers.get('authorization'));
    const { grant, store } = principal;
    ctx = { core: deps.core, ...principal, requestId, endpointChanged: deps.endpointChanged };
    checkExpectedContext(req.headers, store);
    const lacking = missingScopeRefusal(op.operationId, op.scopes, principal.scopes);
    if (lacking) throw lacking;

    const input = {
      params: op.params ? parse(op.params, params, 'path') : undefined,
      query: op.query ? parse(op.query, Object.fromEntries(new URL(req.url).searchParams), 'query') : undefined,
      body: op.body ? parse(op.body, await readJsonBody(req), 'body') : undefined,
    };
    const executing = executesChange(input.body);

    if (op.rateLimitClass && !executing) {
      const d = await deps.limiter.take(op.rateLimitClass, grant.id, store.id);
      // A 429 is audited like any refusal: the first per grant and operation in a window with its own row, the rest
      // folded into one row written by the first limited-class call after the window ends.
      const { refusals } = deps.limiter;
      for (const f of refusals.takeFolded()) {
        const transition = `folded: ${f.count} further rate-limited calls from ${iso(f.from)} to ${iso(f.to)}`;
        await auditSummary(deps.core, { ...f, actorKind: 'agent', status: 429, errorCode: 'rate_limited', transition }).catch(() => {});
      }
      if (d.limited) {
        if (refusals.own({ storeId: store.id, grantId: grant.id, actorLabel: ctx.actor.label, operationId: op.operationId })) {
          const err = new AppError('rate_limited', `Too many ${op.rateLimitClass} calls for this ${d.scope}.`);
          await audit(deps.core, op, ctx, params, 429, null, err, requestId, false, surfaceOf(req)).catch(() => {});
        } else metrics.agentCall(store.id, op.operationId, 429);
        return rateLimited(ctx.actor, op.rateLimitClass, d.scope, d.retryAfterSeconds, d.resetAt, requestId);
      }
    }

    const key = req.headers.get('idempotency-key');
    if (key) ctx.idempotencyKey = key;
    if (op.idempotency === 'execute' && executing && !key) {
      throw new AppError('invalid_input', 'Send an Idempotency-Key header with every execute step.', [
        { path: 'header.Idempotency-Key', code: 'required', message: 'Required on execute' },
      ]);
    }
    const exec = async () => {
      const data = await handler(ctx!, input);
      const status = op.effect === 'preview_or_execute' && !executing ? 201 : op.successStatus;
      const meter = meterOf(op, executing);
      if (meter) await record(deps.core, store, meter);
      return { status, body: envelopeBody(ctx!, data) };
    };
    let result: { status: number; body: Record<string, unknown> };
    let replayed = false;
    if (key && op.idempotency !== 'none') {
      if (key.length > IDEMPOTENCY_KEY_MAX_LENGTH) {
        throw new AppError('invalid_input', `Idempotency-Key is at most ${IDEMPOTENCY_KEY_MAX_LENGTH} characters.`);
      }
      const requestHash = sha256Hex(JSON.stringify([op.operationId, params, input.body ?? null]));
      const slot = `${store.id}\u0000${key}`;
      // Requests with this key on this instance wait for the first; the storage claim decides across instances.
      while (deps.inflight.has(slot)) await deps.inflight.get(slot)!.catch(() => {});
      // Claim the slot before any await, so concurrent requests with this key wait for this one.
      let release!: () => void;
      deps.inflight.set(slot, new Promise<void>((r) => (release = r)));
      try {
        const { repo } = deps.core;
        const now = deps.core.clock.now();
        const me = await repo.instance.id();
        let held = await repo.claimIdempotency(
          { storeId: store.id, key, operationId: op.operationId, requestHash, createdAt: now, owner: me },
          now - IDEMPOTENCY_TTL_MS,
          now - IDEMPOTENCY_STALE_MS,
        );
        // A pending claim whose holder is gone (killed mid-request; or this instance's own, left by a request that
        // could not release it: this one holds the key's in-flight slot) is taken over now, not when it turns stale.
        if (held?.status === 0 && held.owner !== null && (held.owner === me || !(await repo.instance.alive(held.owner)))) {
          if (await repo.takeOverIdempotency(store.id, key, held.owner, me, now)) held = null;
        }
        if (held) {
          if (held.operationId !== op.operationId || held.requestHash !== requestHash) {
            throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request in the last 24 hours.');
          }
          if (held.status === 0) {
            throw inProgress(
              'request_in_progress',
              'A request with this Idempotency-Key is still in progress on another instance; retry with the same key once it has finished.',
            );
          }
          result = { status: held.status, body: JSON.parse(held.response) };
          replayed = true;
        } else {
          crashPoint('key-claimed');
          try {
            result = await exec();
          } catch (err) {
            // Nothing to replay: a retry with this key may run again.
            await deps.core.repo.releaseIdempotency(store.id, key).catch(() => {});
            throw err;
          }
          await deps.core.repo.putIdempotency({
            storeId: store.id,
            key,
            operationId: op.operationId,
            requestHash,
            status: result.status,
            response: JSON.stringify(withoutSecrets(result.body)),
            createdAt: deps.core.clock.now(),
            owner: null,
          });
          crashPoint('answer-stored');
        }
      } finally {
        deps.inflight.delete(slot);
        release();
      }
    } else {
      result = await exec();
    }
    await audit(deps.core, op, ctx, params, result.status, result.body.data, null, requestId, replayed, surfaceOf(req));
    if (executing) crashPoint('audited');
    deps.storage?.succeeded();
    return Response.json(result.body, { status: result.status, headers: replayed ? { 'Idempotent-Replayed': 'true' } : undefined });
  } catch (err) {
    let appErr: AppError;
    let supportCode: string | undefined;
    const fault = err instanceof AppError ? null : (deps.storage?.failed(err) ?? storageFault(err));
    if (err instanceof AppError) appErr = err;
    else if (req.signal.aborted)
      throw err; // the client hung up: nobody to answer, and not our failure (serve logs it)
    else if (fault) appErr = storageUnavailable(fault);
    else {
      supportCode = newSupportCode();
      deps.core.log.error(`internal error in ${op.operationId} request=${requestId} support=${supportCode}: ${describe(err)}`);
      appErr = new AppError('internal_error', 'Something went wrong on our side. Quote the support code.');
    }
    if (!ctx && appErr.code === 'unauthorized') return failedAuthentication(deps, op, appErr, client, requestId, surfaceOf(req), params);
    await audit(deps.core, op, ctx, params, appErr.status, null, appErr, requestId, false, surfaceOf(req)).catch(() => {});
    return errorResponse(ctx, appErr, supportCode, requestId);
  }
}

/** A stored idempotent response never keeps a secret: it was shown once, in the original response. */
function withoutSecrets(value: unknown): unknown {
  return redactDocument(value, { text: redactSecretsIn, secretField: () => '(shown once in the original response)' });
}

/** Which usage meter a call counts against, from the table's classes. */
function meterOf(op: Operation, executing: boolean): Meter | null {
  if (op.rateLimitClass === 'simple_read') return 'simple_reads';
  if (op.rateLimitClass === 'rich_read') return 'rich_reads';
  // An execute counts executed_actions with its change, in one transaction (src/ops/intents.ts): once, or not at all.
  if (op.effect === 'preview_or_execute') return executing ? null : 'action_previews';
  return null;
}

function rateLimited(
  actor: Actor | null,
  rateLimitClass: Operation['rateLimitClass'] | 'auth_failure',
  scope: 'grant' | 'store' | 'client',
  retryAfterSeconds: number,
  resetAt: number,
  requestId: string,
): Response {
  const authFailure = rateLimitClass === 'auth_failure';
  const message = authFailure
    ? `Too many failed authentications from this client; wait ${retryAfterSeconds} s.`
    : `Too many ${rateLimitClass} calls for this ${scope}; wait ${retryAfterSeconds} s.`;
  const recommendedAction = authFailure
    ? `Fix the bearer token first (a live grant token, sent as Authorization: Bearer <token>); a valid token is never refused here. Wait ${retryAfterSeconds} seconds before retrying.`
    : `Wait ${retryAfterSeconds} seconds before retrying; read GET /agent/v1/plan-usage before loops or polling.`;
  const body = {
    edition: EDITION,
    actor,
    refusal: { ...defaultRefusal('rate_limited', message)!, recommendedAction },
    error: { code: 'rate_limited', message, supportCode: newSupportCode(), requestId },
    retryAfterSeconds,
    resetAt: new Date(resetAt).toISOString(),
    rateLimitClass,
    scope,
    recommendedAction,
  };
  return withSupportCode(Response.json(body, { status: 429, headers: { 'Retry-After': String(retryAfterSeconds) } }), body.error.supportCode);
}

/**
 * A failed bearer authentication (REST or the MCP endpoint): 401, or 429 `auth_failure` once the client address is
 * over its limit. Audited one row per failure up to the window's allowance (AUTH_FAILURE_LIMITS); past it the
 * failures are counted and written as one summary row per operation once their window has ended (see auditFolded).
 */
export async function failedAuthentication(
  deps: Pick<PipelineDeps, 'core' | 'authFailures'>,
  /** What the failed call was for: a contract operation, or a surface outside the table (/metrics' scrape). */
  op: Pick<Operation, 'operationId'>,
  err: AppError,
  client: ClientOf,
  requestId: string,
  surface: Surface,
  params: Record<string, string> = {},
): Promise<Response> {
  const d = await deps.authFailures.fail(client());
  const res = d.limited
    ? rateLimited(null, 'auth_failure', 'client', d.retryAfterSeconds, d.resetAt, requestId)
    : errorResponse(null, err, undefined, requestId);
  if (d.audit) {
    const recorded = d.limited ? new AppError('rate_limited', 'Too many failed authentications from this client.') : err;
    await audit(deps.core, op, null, params, res.status, null, recorded, requestId, false, surface).catch(() => {});
  } else {
    metrics.agentCall(null, op.operationId, res.status);
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
  return res;
}

/**
 * One audit row standing for a window's refusals that had no row of their own (failed authentications, 429s): the
 * count is in `transition`.
 */
async function auditSummary(
  core: CoreWith<AuditLog>,
  f: {
    storeId: string | null;
    grantId: string | null;
    actorKind: 'agent' | 'anonymous';
    actorLabel: string;
    operationId: string;
    lastAt: number;
    status: number;
    errorCode: ErrorCode;
    transition: string;
  },
): Promise<void> {
  const refusal = defaultRefusal(f.errorCode, '');
  await core.repo.insertAudit({
    id: core.ids.next('aud'),
    at: f.lastAt,
    storeId: f.storeId,
    grantId: f.grantId,
    actorKind: f.actorKind,
    actorLabel: f.actorLabel,
    operationId: f.operationId,
    scopes: '[]',
    targetId: null,
    intentId: null,
    transition: f.transition,
    outcome: refusal ? 'refused' : 'error',
    status: f.status,
    errorCode: f.errorCode,
    refusalCategory: refusal?.category ?? null,
    refusalCode: refusal?.code ?? null,
    requestId: null,
    surface: null,
  });
}

/**
 * One audit row per call: who, what, which target, the outcome and any refusal. Never inputs or secrets.
 * The MCP transport writes its own calls (session start, refused connects) through this too.
 */
export async function audit(
  core: CoreWith<AuditLog>,
  op: Pick<Operation, 'operationId'>,
  ctx: Pick<OpContext, 'store' | 'grant' | 'scopes' | 'actor'> | null,
  params: Record<string, string>,
  status: number,
  data: unknown,
  err: AppError | null,
  requestId: string,
  replayed: boolean,
  surface: Surface,
): Promise<void> {
  metrics.agentCall(ctx?.store.id ?? null, op.operationId, status);
  const intent = (data as { intent?: { id: string; state: string; targetId: string | null } } | null)?.intent;
  await core.repo.insertAudit({
    id: core.ids.next('aud'),
    at: core.clock.now(),
    storeId: ctx?.store.id ?? null,
    grantId: ctx?.grant.id ?? null,
    actorKind: ctx ? 'agent' : 'anonymous',
    actorLabel: ctx?.actor.label ?? 'unauthenticated',
    operationId: op.operationId,
    scopes: JSON.stringify(ctx?.scopes ?? []),
    targetId: params.endpointId ?? params.eventId ?? intent?.targetId ?? null,
    intentId: intent?.id ?? null,
    transition: intent ? (replayed ? `${intent.state} (idempotent replay)` : intent.state) : null,
    outcome: err ? (err.refusal ? 'refused' : 'error') : 'ok',
    status,
    errorCode: err?.code ?? null,
    refusalCategory: err?.refusal?.category ?? null,
    refusalCode: err?.refusal?.code ?? null,
    requestId,
    surface,
  });
}

function parse<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw invalidInput(where, r.error);
  return r.data;
}

/**
 * The request body as JSON: `{}` when empty, 415 for another type, 413 past 1 MiB (declared, or found while
 * reading a body sent without a length: never buffered whole), 400 when malformed.
 */
async function readJsonBody(req: Request): Promise<unknown> {
  const bytes = await readCapped(req, MAX_API_BODY_BYTES);
  if (!bytes) throw new AppError('payload_too_large', 'Request bodies are limited to 1 MiB.');
  const text = UTF8.decode(bytes);
  if (text.trim() === '') return {};
  const type = req.headers.get('content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) throw new AppError('unsupported_media_type', 'Send Content-Type: application/json.');
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('invalid_input', 'The body is not valid JSON.', [{ path: 'body', code: 'invalid_json', message: 'Malformed JSON' }]);
  }
}

/** An error's class and first line, with anything after `params:` dropped (drivers echo bound values there). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return 'non-error thrown';
  const first = (err.message.split('\n')[0] ?? '').split(/params:/i)[0]!.slice(0, 200);
  return `${err.name}: ${first}`;
}
