/**
 * Flow's trigger payload: exactly the fields the variant's trigger extension declares, and Flow's size rule. One
 * rule for both moments: at send the payload is built once and checked (flowHandoff); at receipt an event that
 * could never be handed off is refused from its fields' lengths, without building it (flowRefusal).
 */
import type { EndpointRow, EventRow } from '../../../db/types.ts';
import type { TriggerVariant } from '../../contract/schemas.ts';
import { FLOW_PAYLOAD_MAX_BYTES, TRIGGERS } from '../../contract/triggers.ts';
import { iso } from '../../lib/clock.ts';
import type { Handoff } from '../types.ts';

export type FlowPayload = Record<string, string | number>;
type PayloadEndpoint = Pick<EndpointRow, 'triggerVariant' | 'sourceLabel'>;

function triggerFor(variant: string) {
  return TRIGGERS[variant as TriggerVariant];
}

/** A text field's value: every trigger's text fields are among these. */
function textValue(key: string, endpoint: PayloadEndpoint, event: EventRow): string {
  switch (key) {
    case 'event type':
      return event.eventType ?? '';
    case 'external event id':
      return event.externalEventId ?? '';
    case 'source':
      return endpoint.sourceLabel;
    case 'hookrelay event id':
      return event.id;
    case 'received at':
      return iso(event.receivedAt);
    case 'related resource id':
      return event.relatedResourceId ?? '';
    default:
      return '';
  }
}

/** Each field of the event's payload, in the order the trigger declares them. */
function eachField(endpoint: PayloadEndpoint, event: EventRow, visit: (key: string, value: string | number) => void): void {
  const t = triggerFor(endpoint.triggerVariant);
  if (t.reference) visit(t.reference.key, Number(event.resourceId));
  for (const key of t.textFields) visit(key, textValue(key, endpoint, event));
}

export function buildFlowPayload(endpoint: PayloadEndpoint, event: EventRow): FlowPayload {
  const payload: FlowPayload = {};
  eachField(endpoint, event, (key, value) => {
    payload[key] = value;
  });
  return payload;
}

export function flowPayloadBytes(payload: FlowPayload): number {
  return Buffer.byteLength(JSON.stringify(payload));
}

/**
 * What one field can add to the JSON at most: a UTF-16 unit of a string is encoded in at most 6 bytes and a number
 * in at most 24; with the quotes, colon and comma.
 */
const fieldBound = (key: string, value: string | number) => 6 * key.length + 4 + (typeof value === 'string' ? 6 * value.length + 2 : 24);

/**
 * Whether the payload stays under Flow's limit. It is serialised only when its fields could reach the limit: the
 * fields are short (text is capped at 255 characters), so on the hot paths this is a sum of lengths.
 */
export function flowPayloadFits(payload: FlowPayload): boolean {
  let bound = 2;
  for (const key in payload) bound += fieldBound(key, payload[key]!);
  return bound < FLOW_PAYLOAD_MAX_BYTES || flowPayloadBytes(payload) < FLOW_PAYLOAD_MAX_BYTES;
}

const TOO_LARGE = { ok: false, code: 'SVC_PAYLOAD_TOO_LARGE', errorClass: 'payload_too_large', message: 'Flow payload would exceed 50,000 bytes.' } as const;

/** At send: the trigger and its payload, built once and checked against Flow's limit. */
export function flowHandoff(endpoint: PayloadEndpoint, event: EventRow): Handoff {
  const handle = triggerFor(endpoint.triggerVariant).handle;
  const payload = buildFlowPayload(endpoint, event);
  return flowPayloadFits(payload) ? { ok: true, handle, payload } : { ...TOO_LARGE, handle };
}

/**
 * At receipt: whether the event's payload would exceed Flow's limit, from its fields' lengths (the bound of
 * flowPayloadFits), building the payload only when the bound reaches the limit.
 */
export function flowRefusal(endpoint: PayloadEndpoint, event: EventRow): 'SVC_PAYLOAD_TOO_LARGE' | null {
  let bound = 2;
  eachField(endpoint, event, (key, value) => {
    bound += fieldBound(key, value);
  });
  if (bound < FLOW_PAYLOAD_MAX_BYTES) return null;
  return flowPayloadBytes(buildFlowPayload(endpoint, event)) < FLOW_PAYLOAD_MAX_BYTES ? null : TOO_LARGE.code;
}
