import type { EndpointRow, EventRow, StoreRow } from '../../../db/types.ts';
import type { FlowPayload } from '../flow.ts';

export interface HandoffRequest {
  store: StoreRow;
  endpoint: EndpointRow;
  event: EventRow;
  handle: string;
  payload: FlowPayload;
}

/** Error classes, recorded on attempts and counted by reliability reads. */
export type AttemptErrorClass = 'throttled' | 'server_error' | 'timeout' | 'network' | 'user_errors' | 'http_error' | 'config' | 'payload_too_large' | 'no_workflow';

export type HandoffOutcome =
  | { kind: 'delivered'; httpStatus: number | null }
  | { kind: 'retry'; httpStatus: number | null; errorClass: AttemptErrorClass; message: string; retryAfterMs?: number }
  | { kind: 'failed'; httpStatus: number | null; errorClass: AttemptErrorClass; message: string }
  /** Flow has no enabled workflow for the trigger: decided before any request is sent. */
  | { kind: 'no_workflow'; httpStatus: null; errorClass: 'no_workflow'; message: string };

export interface Destination {
  readonly name: 'shopify' | 'log';
  /** `timeoutMs`: how long a request to the platform may take (a destination without one ignores it). */
  send(req: HandoffRequest, timeoutMs: number): Promise<HandoffOutcome>;
}
