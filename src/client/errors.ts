/** Failures of a call to the Agent Operations API, each carrying the CLI exit code it maps to. */
import { ERROR_CODES, EXIT, IN_PROGRESS_CODES, type Refusal } from '../contract/errors.ts';

/** What a 429 answer says about waiting (the `RateLimitedResponse` body and the `Retry-After` header). */
export interface RateLimitInfo {
  retryAfterSeconds: number;
  resetAt?: string;
  rateLimitClass?: string;
  /** Which limit was hit: the grant's or the store's. */
  scope?: string;
  recommendedAction?: string;
}

export interface ClientErrorInfo {
  /** HTTP status, or null when no answer arrived. */
  status?: number | null;
  supportCode?: string;
  details?: unknown;
  refusal?: Refusal | null;
  rateLimit?: RateLimitInfo;
  hint?: string;
}

/**
 * An API call that did not succeed: an error answer, no answer (unreachable, timeout) or an answer that is not
 * the contract's. `toJSON()` is the one document the CLI prints; it never holds the token or a full header.
 */
export class ClientError extends Error {
  /** Extra facts a command attaches (the idempotency key it used, the config source…), printed with the error. */
  readonly annotations: Record<string, unknown> = {};

  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: number,
    readonly info: ClientErrorInfo = {},
  ) {
    super(message);
    this.name = 'ClientError';
  }

  get status(): number | null {
    return this.info.status ?? null;
  }

  annotate(extra: Record<string, unknown>): this {
    Object.assign(this.annotations, extra);
    return this;
  }

  toJSON(): Record<string, unknown> {
    const { status, supportCode, details, refusal, rateLimit, hint } = this.info;
    const error: Record<string, unknown> = { code: this.code, message: this.message, status: status ?? null };
    if (supportCode) error.supportCode = supportCode;
    if (details !== undefined) error.details = details;
    if (hint) error.hint = hint;
    const doc: Record<string, unknown> = { error };
    if (refusal) doc.refusal = refusal;
    if (rateLimit) {
      doc.retryAfterSeconds = rateLimit.retryAfterSeconds;
      if (rateLimit.resetAt) doc.resetAt = rateLimit.resetAt;
      if (rateLimit.rateLimitClass) doc.rateLimitClass = rateLimit.rateLimitClass;
      if (rateLimit.scope) doc.rateLimitScope = rateLimit.scope;
      if (rateLimit.recommendedAction) doc.recommendedAction = rateLimit.recommendedAction;
    }
    return { ...doc, ...this.annotations };
  }
}

/** The exit code of an error answer: the error table for a known code, else by HTTP status. */
export function exitCodeFor(status: number, code?: string): number {
  if (code && code in ERROR_CODES) return ERROR_CODES[code as keyof typeof ERROR_CODES].exitCode;
  if (status === 401) return EXIT.auth;
  if (status === 402 || status === 403 || status === 409) return EXIT.refused;
  if (status === 404) return EXIT.notFound;
  if (status === 429) return EXIT.rateLimited;
  if (status === 400 || status === 405 || status === 413 || status === 415 || status === 422) return EXIT.usage;
  return EXIT.error;
}

/**
 * Whether sending the same request again (same Idempotency-Key) may succeed: no answer arrived, a 429, a 5xx, or a
 * 409 saying the same request is running now (IN_PROGRESS_CODES). Any other answer is final: a 409 for a spent or
 * expired confirmation, a 422 reused key or a refusal answers the same however often it is retried, so no retry
 * hint goes with it.
 */
function retryMayHelp(err: ClientError): boolean {
  const s = err.status;
  const running = (IN_PROGRESS_CODES as readonly string[]).includes(err.info.refusal?.code ?? '');
  return s === null || s === 429 || s >= 500 || (s === 409 && running);
}

/** The `idempotency` annotation of a failed execute: the key, and a retry hint only where a retry can help. */
export function idempotencyNote(err: ClientError, key: string, generated: boolean, hint: string): Record<string, unknown> {
  return { key, generated, ...(retryMayHelp(err) ? { hint } : {}) };
}
