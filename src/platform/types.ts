/**
 * What the handoff worker and the agent API see of a workflow platform: a destination that hands one event off,
 * and, for a platform that can pause a store (credentials), a probe of the link. Everything platform-specific
 * (URLs, tokens, API versions, error shapes) stays behind this, in a sibling folder per platform.
 */
import type { EndpointRow, EventRow, StoreRow } from '../../db/types.ts';
import type { LinkCheckResult, PauseCode, PauseReason } from '../contract/platform.ts';

/** One trigger to start on the platform: the store, the trigger's handle and its fields. */
export interface TriggerRequest {
  store: StoreRow;
  handle: string;
  /** The trigger's fields, built by the relay (src/relay/flow.ts, src/relay/alerts.ts). */
  payload: Record<string, string | number>;
}

/** An event's handoff: its trigger, with the event and the endpoint it came through. */
export interface HandoffRequest extends TriggerRequest {
  endpoint: EndpointRow;
  event: EventRow;
}

/** Error classes, recorded on attempts and counted by reliability reads. */
export type AttemptErrorClass =
  | 'throttled'
  | 'server_error'
  | 'timeout'
  | 'network'
  | 'user_errors'
  | 'http_error'
  | 'config'
  | 'payload_too_large'
  | 'no_workflow'
  | 'credentials';

/** Why a store's handoff must wait, and the stable code that says so (src/contract/platform.ts). */
export interface PauseRequest {
  reason: PauseReason;
  code: PauseCode;
  /** One line for people: names variables and statuses, never a token or secret. */
  message: string;
}

export type HandoffOutcome =
  | { kind: 'delivered'; httpStatus: number | null }
  | { kind: 'retry'; httpStatus: number | null; errorClass: AttemptErrorClass; message: string; retryAfterMs?: number }
  | { kind: 'failed'; httpStatus: number | null; errorClass: AttemptErrorClass; message: string }
  /** Flow has no enabled workflow for the trigger: decided before any request is sent. */
  | { kind: 'no_workflow'; httpStatus: null; errorClass: 'no_workflow'; message: string }
  /** The platform could not pay for the call now (THROTTLED): no attempt spent, the event goes again at `until`. */
  | { kind: 'deferred'; httpStatus: number | null; errorClass: 'throttled'; message: string; until: number }
  /**
   * The store's handoff must pause (credentials missing, refused, or not obtainable; or the token endpoint out,
   * `server_error`): the event waits, never fails. `sent` says whether a request reached the platform (an attempt
   * to record) or nothing left this box.
   */
  | { kind: 'paused'; httpStatus: number | null; errorClass: 'credentials' | 'server_error'; message: string; sent: boolean; pause: PauseRequest };

/** What a live, authenticated look at the destination found. */
export interface LinkCheck {
  result: LinkCheckResult;
  message: string;
  httpStatus: number | null;
  /** When: the clock's ms. */
  checkedAt: number;
  /** Set when the result is a credential failure: the pause it calls for. */
  pause?: PauseRequest;
}

export interface Destination {
  readonly name: 'shopify' | 'log';
  /**
   * Whether a send leaves this box (default true). Such a send's attempt is recorded as soon as it ends, so a crash
   * repeats only what was in flight; a local one (the log destination) is recorded with its round.
   */
  readonly external?: boolean;
  /** `timeoutMs`: how long a request to the platform may take (a destination without one ignores it). */
  send(req: HandoffRequest, timeoutMs: number): Promise<HandoffOutcome>;
  /**
   * The probe of a paused store: obtains credentials afresh (the ones refused are not reused) and makes one cheap
   * authenticated call. A destination that never pauses has none.
   */
  probe?(store: StoreRow, timeoutMs: number): Promise<LinkCheck>;
  /**
   * Pacing inside the store's budget on the platform: of `wanted` sends, how many may go now, and when each of the
   * others is due. A destination without a budget has none (everything goes).
   */
  pace?(store: StoreRow, wanted: number): Promise<{ granted: number; later: number[] }>;
}
