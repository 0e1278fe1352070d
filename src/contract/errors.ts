/** The one error table: every stable code with its HTTP status and CLI exit code (HTTP, MCP and CLI read it). */

export const REFUSAL_CATEGORIES = [
  'scope',
  'usage',
  'target_state',
  'safety',
  'product_boundary',
  'human_only',
  'edition',
] as const;
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
} as const satisfies Record<string, { status: number; exitCode: number }>;
export type ErrorCode = keyof typeof ERROR_CODES;

/** Stable receipt and inbound codes, shared by reads, diagnostics and support. */
export const RECEIPT_CODES = [
  'SVC_AUTH_HEADER_MISSING',
  'SVC_AUTH_FAILED',
  'SVC_INVALID_JSON',
  'SVC_REQUIRED_PATH_MISSING',
  'SVC_RESOURCE_ID_UNMAPPABLE',
  'SVC_PAYLOAD_TOO_LARGE',
  'SVC_NO_WORKFLOW',
  'SVC_HANDOFF_REJECTED',
  'SVC_HANDOFF_RETRY_EXHAUSTED',
  'SVC_RETENTION_EXPIRED',
  'SVC_OVER_CAPACITY',
] as const;
export type ReceiptCode = (typeof RECEIPT_CODES)[number];

export interface Refusal {
  category: RefusalCategory;
  code: string;
  reason: string;
  recommendedAction: string;
}

/** The one error type. Throw it anywhere; HTTP, MCP and the CLI map it through ERROR_CODES. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly refusal?: Refusal,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

/** A refusal: an action outside the grant's authority or unsafe. Status follows the category. */
export function refuse(refusal: Refusal, details?: unknown): AppError {
  const code: ErrorCode =
    refusal.category === 'scope'
      ? 'insufficient_scope'
      : refusal.category === 'usage'
        ? 'plan_capacity_exhausted'
        : 'action_refused';
  return new AppError(code, refusal.reason, details, refusal);
}
