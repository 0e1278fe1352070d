/** Envelope and error responses for grant-authenticated operations. */
import type { ZodError } from 'zod';
import { AppError, ERROR_CODES } from '../contract/errors.ts';
import { EDITION } from '../contract/scopes.ts';
import { randomBase62 } from '../lib/ids.ts';
import type { OpContext } from '../ops/context.ts';

type Scoped = Pick<OpContext, 'store' | 'grant' | 'scopes' | 'actor'> | null;

function scopeOf(ctx: Scoped) {
  return ctx ? { storeId: ctx.store.id, shopDomain: ctx.store.shopDomain, grantId: ctx.grant?.id ?? null, scopes: ctx.scopes } : null;
}

/** A success envelope: edition, scope, actor, refusal, data. */
export function envelopeBody(ctx: NonNullable<Scoped>, data: unknown): Record<string, unknown> {
  return { edition: EDITION, scope: scopeOf(ctx), actor: ctx.actor, refusal: null, data };
}

export function newSupportCode(): string {
  return `sup-${randomBase62(8).slice(0, 10)}`;
}

/** The support code each error response carries, for its request's log line (see supportCodeOf). */
const supportCodes = new WeakMap<Response, string>();

/** The support code of an error response this module made, for the request's log line; else undefined. */
export function supportCodeOf(res: Response): string | undefined {
  return supportCodes.get(res);
}

/**
 * A contract operation's answer as data: what `invoke` returns and the HTTP route sends (`toResponse`). `headers`
 * are the answer's own (Retry-After, WWW-Authenticate, Allow); an error answer names its support code.
 */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  /** An error answer's support code, also in its body: the request's log line shows it (supportCodeOf). */
  supportCode?: string;
  /** A stored answer given again for its Idempotency-Key (sent with `Idempotent-Replayed: true`). */
  replayed?: boolean;
}

const REPLAYED = { 'Idempotent-Replayed': 'true' };

/** The HTTP response of an answer. */
export function toResponse(a: Answer): Response {
  const res = Response.json(a.body, { status: a.status, headers: a.replayed ? REPLAYED : a.headers });
  return a.supportCode === undefined ? res : withSupportCode(res, a.supportCode);
}

/** An error envelope; `requestId`, when known, is beside the support code (and in the `X-Request-Id` header serve sets). */
export function errorAnswer(ctx: Scoped, err: AppError, supportCode = newSupportCode(), requestId?: string): Answer {
  const body = {
    edition: EDITION,
    scope: scopeOf(ctx),
    actor: ctx?.actor ?? null,
    refusal: err.refusal ?? null,
    error: {
      code: err.code,
      message: err.message,
      supportCode,
      ...(requestId ? { requestId } : {}),
      ...(err.details !== undefined ? { details: err.details } : {}),
    },
  };
  return { status: ERROR_CODES[err.code].status, body, headers: err.headers, supportCode };
}

/** errorAnswer as a response. */
export function errorResponse(ctx: Scoped, err: AppError, supportCode = newSupportCode(), requestId?: string): Response {
  return toResponse(errorAnswer(ctx, err, supportCode, requestId));
}

/** Remembers the support code an error response carries in its body, for its log line. */
function withSupportCode(res: Response, supportCode: string): Response {
  supportCodes.set(res, supportCode);
  return res;
}

/** zod issues without the offending values (an input may hold a secret). */
export function invalidInput(where: string, error: ZodError): AppError {
  const details = error.issues.map((i) => ({ path: [where, ...i.path.map(String)].join('.'), code: i.code, message: i.message }));
  const first = details[0];
  return new AppError('invalid_input', first ? `Invalid ${first.path}: ${first.message}` : `Invalid ${where}.`, details);
}
