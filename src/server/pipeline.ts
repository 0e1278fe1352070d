/**
 * The steps every grant-authenticated operation passes, once: bearer grant, expected-context headers, scopes,
 * input validation, handler, envelope, error mapping. Handlers only see validated input and a typed context.
 */
import type { z } from 'zod';
import { checkExpectedContext } from '../contract/context.ts';
import { IDEMPOTENCY_TTL_MS } from '../contract/limits.ts';
import { AppError, refuse } from '../contract/errors.ts';
import type { Operation } from '../contract/operations.ts';
import type { Scope } from '../contract/scopes.ts';
import type { Core } from '../core.ts';
import { EDITION } from '../contract/scopes.ts';
import { sha256Hex } from '../lib/crypto.ts';
import type { OpContext } from '../ops/context.ts';
import { authenticateBearer } from '../ops/grants.ts';
import { surfaceOf, type Surface } from '../mcp/surface.ts';
import { record, type Meter } from '../ops/usage.ts';
import { envelopeBody, errorResponse, invalidInput, newSupportCode } from './http.ts';
import type { RateLimiter } from './rate-limit.ts';

export type AnyHandler = (ctx: OpContext, input: { params: unknown; query: unknown; body: unknown }) => Promise<unknown>;

export interface PipelineDeps {
  core: Core;
  endpointChanged(id: string): void;
  limiter: RateLimiter;
  /** Executions in flight per store + Idempotency-Key, so concurrent retries run once. */
  inflight: Map<string, Promise<unknown>>;
}

const MAX_API_BODY = 1024 * 1024;

export async function runOperation(
  deps: PipelineDeps,
  op: Operation,
  handler: AnyHandler,
  req: Request,
  params: Record<string, string>,
  requestId: string,
): Promise<Response> {
  let ctx: OpContext | null = null;
  try {
    const { grant, store } = await authenticateBearer(deps.core, req.headers.get('authorization'));
    const scopes = JSON.parse(grant.scopes) as Scope[];
    ctx = {
      core: deps.core,
      store,
      grant,
      scopes,
      actor: { kind: 'agent', grantId: grant.id, label: grant.label },
      requestId,
      endpointChanged: deps.endpointChanged,
    };

    checkExpectedContext(req.headers, store);

    const missing = op.scopes.filter((s) => !scopes.includes(s));
    if (missing.length) {
      throw refuse(
        {
          category: 'scope',
          code: 'missing_scope',
          reason: `${op.operationId} needs ${missing.join(', ')}, which this grant does not hold.`,
          recommendedAction: 'Ask the merchant for a grant whose tier includes these scopes.',
        },
        { missingScopes: missing, requiredScopes: op.scopes },
      );
    }

    const input = {
      params: op.params ? parse(op.params, params, 'path') : undefined,
      query: op.query ? parse(op.query, Object.fromEntries(new URL(req.url).searchParams), 'query') : undefined,
      body: op.body ? parse(op.body, await readJsonBody(req), 'body') : undefined,
    };
    const mode = (input.body as { mode?: string } | undefined)?.mode;
    const executing = mode === 'execute' || mode === 'submit';

    if (op.rateLimitClass && !executing) {
      const d = deps.limiter.take(op.rateLimitClass, grant.id, store.id);
      if (d.limited) return rateLimited(ctx, op, d.scope, d.retryAfterSeconds, d.resetAt);
    }

    const key = req.headers.get('idempotency-key');
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
      if (key.length > 200) throw new AppError('invalid_input', 'Idempotency-Key is at most 200 characters.');
      const requestHash = sha256Hex(JSON.stringify([op.operationId, params, input.body ?? null]));
      const slot = `${store.id}\u0000${key}`;
      while (deps.inflight.has(slot)) await deps.inflight.get(slot)!.catch(() => {});
      // Claim the slot before any await, so concurrent requests with this key wait for this one.
      let release!: () => void;
      deps.inflight.set(slot, new Promise<void>((r) => (release = r)));
      try {
        const stored = await deps.core.repo.getIdempotency(store.id, key, deps.core.clock.now() - IDEMPOTENCY_TTL_MS);
        if (stored) {
          if (stored.operationId !== op.operationId || stored.requestHash !== requestHash) {
            throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request in the last 24 hours.');
          }
          result = { status: stored.status, body: JSON.parse(stored.response) };
          replayed = true;
        } else {
          result = await exec();
          await deps.core.repo.putIdempotency({
            storeId: store.id,
            key,
            operationId: op.operationId,
            requestHash,
            status: result.status,
            response: JSON.stringify(withoutSecrets(result.body)),
            createdAt: deps.core.clock.now(),
          });
        }
      } finally {
        deps.inflight.delete(slot);
        release();
      }
    } else {
      result = await exec();
    }
    await audit(deps.core, op, ctx, params, result.status, result.body.data, null, requestId, replayed, surfaceOf(req));
    return Response.json(result.body, { status: result.status, headers: replayed ? { 'Idempotent-Replayed': 'true' } : undefined });
  } catch (err) {
    let appErr: AppError;
    let supportCode: string | undefined;
    if (err instanceof AppError) appErr = err;
    else {
      supportCode = newSupportCode();
      deps.core.log.error(`internal error in ${op.operationId} request=${requestId} support=${supportCode}: ${describe(err)}`);
      appErr = new AppError('internal_error', 'Something went wrong on our side. Quote the support code.');
    }
    await audit(deps.core, op, ctx, params, appErr.status, null, appErr, requestId, false, surfaceOf(req)).catch(() => {});
    return errorResponse(ctx, appErr, supportCode);
  }
}

/** A stored idempotent response never keeps a secret: it was shown once, in the original response. */
function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, k === 'secret' ? '(shown once in the original response)' : withoutSecrets(v)]),
    );
  }
  return value;
}

/** Which usage meter a call counts against, from the table's classes. */
function meterOf(op: Operation, executing: boolean): Meter | null {
  if (op.rateLimitClass === 'simple_read') return 'simple_reads';
  if (op.rateLimitClass === 'rich_read') return 'rich_reads';
  if (op.effect === 'preview_or_execute') return executing ? 'executed_actions' : 'action_previews';
  return null;
}

function rateLimited(ctx: OpContext, op: Operation, scope: 'grant' | 'store', retryAfterSeconds: number, resetAt: number): Response {
  const body = {
    edition: EDITION,
    actor: ctx.actor,
    refusal: null,
    error: { code: 'rate_limited', message: `Too many ${op.rateLimitClass} calls for this ${scope}; wait ${retryAfterSeconds} s.`, supportCode: newSupportCode() },
    retryAfterSeconds,
    resetAt: new Date(resetAt).toISOString(),
    rateLimitClass: op.rateLimitClass,
    scope,
    recommendedAction: `Wait ${retryAfterSeconds} seconds before retrying; read GET /agent/v1/plan-usage before loops or polling.`,
  };
  return Response.json(body, { status: 429, headers: { 'Retry-After': String(retryAfterSeconds) } });
}

/**
 * One audit row per call: who, what, which target, the outcome and any refusal. Never inputs or secrets.
 * The MCP transport writes its own calls (session start, refused connects) through this too.
 */
export async function audit(
  core: Core,
  op: Operation,
  ctx: Pick<OpContext, 'store' | 'grant' | 'scopes' | 'actor'> | null,
  params: Record<string, string>,
  status: number,
  data: unknown,
  err: AppError | null,
  requestId: string,
  replayed: boolean,
  surface: Surface,
): Promise<void> {
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

/** The request body as JSON: `{}` when empty, 415 for another type, 413 past 1 MiB, 400 when malformed. */
export async function readJsonBody(req: Request): Promise<unknown> {
  const length = Number(req.headers.get('content-length') ?? '0');
  if (length > MAX_API_BODY) throw new AppError('payload_too_large', 'Request bodies are limited to 1 MiB.');
  const text = req.body ? await req.text() : '';
  if (text.length > MAX_API_BODY) throw new AppError('payload_too_large', 'Request bodies are limited to 1 MiB.');
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
