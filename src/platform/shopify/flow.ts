/** Builds the flowTriggerReceive payload: exactly the fields the variant's trigger extension declares. */
import type { EndpointRow, EventRow } from '../../db/types.ts';
import type { TriggerVariant } from '../contract/schemas.ts';
import { FLOW_PAYLOAD_MAX_BYTES, TRIGGERS } from '../contract/triggers.ts';
import { iso } from '../lib/clock.ts';

export type FlowPayload = Record<string, string | number>;

export function triggerFor(variant: string) {
  return TRIGGERS[variant as TriggerVariant];
}

export function buildFlowPayload(endpoint: Pick<EndpointRow, 'triggerVariant' | 'sourceLabel'>, event: EventRow): FlowPayload {
  const t = triggerFor(endpoint.triggerVariant);
  const payload: FlowPayload = {};
  if (t.reference) payload[t.reference.key] = Number(event.resourceId);
  const values: Record<string, string> = {
    'event type': event.eventType ?? '',
    'external event id': event.externalEventId ?? '',
    source: endpoint.sourceLabel,
    'hookrelay event id': event.id,
    'received at': iso(event.receivedAt),
    'related resource id': event.relatedResourceId ?? '',
  };
  for (const key of t.textFields) payload[key] = values[key] ?? '';
  return payload;
}

export function flowPayloadBytes(payload: FlowPayload): number {
  return Buffer.byteLength(JSON.stringify(payload));
}

/**
 * Whether the payload stays under Flow's limit. It is serialised only when its fields could reach the limit:
 * JSON encodes a UTF-16 unit of a string in at most 6 bytes and a number in at most 24, and the fields are
 * short (text is capped at 255 characters), so on the hot paths this is a sum of lengths.
 */
export function flowPayloadFits(payload: FlowPayload): boolean {
  let bound = 2;
  for (const key in payload) {
    const v = payload[key]!;
    bound += 6 * key.length + 4 + (typeof v === 'string' ? 6 * v.length + 2 : 24);
  }
  return bound < FLOW_PAYLOAD_MAX_BYTES || flowPayloadBytes(payload) < FLOW_PAYLOAD_MAX_BYTES;
}
