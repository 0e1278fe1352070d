/** Builds the flowTriggerReceive payload: exactly the fields the variant's trigger extension declares. */
import type { EndpointRow, EventRow } from '../../db/types.ts';
import type { TriggerVariant } from '../contract/schemas.ts';
import { TRIGGERS } from '../contract/triggers.ts';
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
