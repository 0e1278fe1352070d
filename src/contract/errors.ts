/** The one error table: every stable code with its HTTP status and CLI exit code (HTTP, MCP and CLI read it). */
import { MAX_API_BODY_BYTES } from './limits.ts';

export const REFUSAL_CATEGORIES = ['scope', 'usage', 'target_state', 'safety', 'product_boundary', 'human_only', 'edition'] as const;
export type RefusalCategory = (typeof REFUSAL_CATEGORIES)[number];

/** CLI exit codes (documented in the README and `--help`). */
export const EXIT = { ok: 0, error: 1, usage: 2, auth: 3, refused: 4, rateLimited: 5, notFound: 6, unreachable: 7 } as const;

export const ERROR_CODES = {
  invalid_input: { status: 400, exitCode: EXIT.usage },
  unauthorized: { status: 401, exitCode: EXIT.auth },
  plan_capacity_exhausted: { status: 402, exitCode: EXIT.refused },
  insufficient_scope: { status: 403, exitCode: EXIT.refused },
  agent_context_mismatch: { status: 403, exitCode: EXIT.auth },
  action_refused: { status: 403, exitCode: EXIT.refused },
  not_found: { status: 404, exitCode: EXIT.notFound },
  method_not_allowed: { status: 405, exitCode: EXIT.usage },
  conflict: { status: 409, exitCode: EXIT.refused },
  payload_too_large: { status: 413, exitCode: EXIT.usage },
  unsupported_media_type: { status: 415, exitCode: EXIT.usage },
  idempotency_key_reused: { status: 422, exitCode: EXIT.usage },
  rate_limited: { status: 429, exitCode: EXIT.rateLimited },
  internal_error: { status: 500, exitCode: EXIT.error },
  not_implemented: { status: 501, exitCode: EXIT.error },
  mcp_code_mode_unavailable: { status: 503, exitCode: EXIT.error },
  /** The database refuses writes (disk full, I/O error); GET /status says which. Retry after the operator frees it. */
  storage_unavailable: { status: 503, exitCode: EXIT.error },
  /** The server is stopping (SIGTERM): retry against it once restarted. */
  shutting_down: { status: 503, exitCode: EXIT.unreachable },
  /** The request body did not arrive in time (BODY_READ.deadlineMs); nothing was done and the connection is closed. */
  request_timeout: { status: 408, exitCode: EXIT.unreachable },
  /** Too many request bodies are being received at once (BODY_READ); nothing was done. Retry after Retry-After. */
  server_busy: { status: 503, exitCode: EXIT.rateLimited },
  /**
   * A secret sealed in the box does not open with the key this process runs with (HOOKRELAY_SECRET_KEY, or the data
   * directory's secret.key): not the key that sealed it. Nothing was done; serve refuses to start so (exit 2).
   */
  secret_key_mismatch: { status: 503, exitCode: EXIT.usage },
} as const satisfies Record<string, { status: number; exitCode: number }>;
export type ErrorCode = keyof typeof ERROR_CODES;

export interface Refusal {
  category: RefusalCategory;
  code: string;
  reason: string;
  recommendedAction: string;
}

/**
 * The refusal an agent can act on, for codes that are refusals whatever the throw site: each answer with one of
 * these codes carries `{category, code, reason, recommendedAction}`, the reason being the error's own message.
 * Scope, usage and action refusals always come from `refuse()` with their own refusal.
 */
const DEFAULT_REFUSALS: Partial<Record<ErrorCode, Omit<Refusal, 'reason'>>> = {
  agent_context_mismatch: {
    category: 'scope',
    code: 'expected_context_mismatch',
    recommendedAction: "Use the grant of the store you meant, or fix the X-Service-Expected-* header (GET /agent/v1/grant shows this grant's store).",
  },
  conflict: {
    category: 'target_state',
    code: 'target_state_conflict',
    recommendedAction: 'Read the target again, then preview a fresh intent; a confirmation token works once, for 15 minutes.',
  },
  idempotency_key_reused: {
    category: 'safety',
    code: 'idempotency_key_reused',
    recommendedAction: 'Send a new Idempotency-Key for a different request; resend the identical request to get the stored response.',
  },
  rate_limited: {
    category: 'usage',
    code: 'rate_limited',
    recommendedAction: 'Wait Retry-After seconds before retrying; read GET /agent/v1/plan-usage before loops or polling.',
  },
};

/**
 * The advice of every 409 whose cause is the same request running now (another instance holds its
 * Idempotency-Key, or is executing the intent): send it again as it is. Never "preview again", which would make
 * the change a second time. Each such 409 carries `Retry-After: 1`.
 */
export const RETRY_SAME_KEY =
  'Wait Retry-After seconds, then send the same request again with the same Idempotency-Key to get its result; do not preview again (that would make the change a second time).';

/** The refusal codes of a 409 for a request that is running now: its Idempotency-Key's, or its intent's. */
export const IN_PROGRESS_CODES = ['request_in_progress', 'intent_executing'] as const;

/** 409 for a request that is running now, advising RETRY_SAME_KEY. */
export function inProgress(code: (typeof IN_PROGRESS_CODES)[number], reason: string, details?: unknown): AppError {
  return new AppError('conflict', reason, details, { category: 'target_state', code, reason, recommendedAction: RETRY_SAME_KEY }, { 'Retry-After': '1' });
}

/** 413 for an API request body past MAX_API_BODY_BYTES: sent over HTTP, or built by code mode's `api.*`. */
export function bodyTooLarge(): AppError {
  return new AppError('payload_too_large', `Request bodies are limited to ${MAX_API_BODY_BYTES / 1024 / 1024} MiB.`);
}

/** The refusal a code carries by default (null when the code is no refusal), with `reason` as its reason. */
export function defaultRefusal(code: ErrorCode, reason: string): Refusal | null {
  const d = DEFAULT_REFUSALS[code];
  return d ? { category: d.category, code: d.code, reason, recommendedAction: d.recommendedAction } : null;
}

/** The one error type. Throw it anywhere; HTTP, MCP and the CLI map it through ERROR_CODES. */
export class AppError extends Error {
  /** The refusal given, else the code's default (see DEFAULT_REFUSALS). */
  readonly refusal?: Refusal;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    refusal?: Refusal,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
    this.refusal = refusal ?? defaultRefusal(code, message) ?? undefined;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

/** A refusal: an action outside the grant's authority or unsafe. Status follows the category. */
export function refuse(refusal: Refusal, details?: unknown): AppError {
  const code: ErrorCode = refusal.category === 'scope' ? 'insufficient_scope' : refusal.category === 'usage' ? 'plan_capacity_exhausted' : 'action_refused';
  return new AppError(code, refusal.reason, details, refusal);
}
