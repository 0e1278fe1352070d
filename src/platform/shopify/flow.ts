/**
 * Flow's trigger payload: exactly the fields the variant's trigger extension declares, and Flow's size rule. One
 * rule for both moments: at send the payload is built once and checked (flowHandoff); at receipt an event that
 * could never be handed off is refused from its fields' lengths, without building it (flowRefusal).
 *
 * At send the endpoint's typed fields join it (`sender.fields`: only values of their declared type; a missing or
 * wrong-typed one is absent and counted), and with includeBody the event's JSON as `body json`, trimmed to keep
 * the payload under Flow's limit in this order: the JSON as compact text; if too large, top-level members removed
 * largest first; if still too large (or the body is not an object), no body at all. `body cut` says what went.
 */
import type { EndpointRow, EventRow } from '../../../db/types.ts';
import type { TriggerVariant } from '../../contract/schemas.ts';
import { BODY_FIELDS, FLOW_PAYLOAD_MAX_BYTES, SENDER_FIELD, TRIGGERS } from '../../contract/triggers.ts';
import { iso } from '../../lib/clock.ts';
import { type FieldReading, fieldsOf, readFields } from '../../lib/fields.ts';
import type { Handoff, TriggerPayload } from '../types.ts';

type SenderItem = { name: string } & Record<string, string | number | boolean>;
export type FlowPayload = TriggerPayload;
type PayloadEndpoint = Pick<EndpointRow, 'triggerVariant' | 'sourceLabel'> & Partial<Pick<EndpointRow, 'fields' | 'includeBody' | 'requiredPaths'>>;

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

/** Each field the event's columns give, in the order the trigger declares them (the sender's come at send). */
function eachField(endpoint: PayloadEndpoint, event: EventRow, visit: (key: string, value: string | number) => void): void {
  const t = triggerFor(endpoint.triggerVariant);
  if (t.reference) visit(t.reference.key, Number(event.resourceId));
  for (const key of t.textFields) visit(key, textValue(key, endpoint, event));
}

/**
 * The sender of an endpoint without typed fields (most): one object for every payload, frozen, whose size the bound
 * knows without serialising it.
 */
const NO_SENDER: { fields: SenderItem[] } = Object.freeze({ fields: Object.freeze([]) as unknown as SenderItem[] });
/** `{"fields":[]}` */
const NO_SENDER_BYTES = 13;

/** `sender`: the typed values read, each under its name with the slot of its type. */
function senderOf(reading: FieldReading | null): { fields: SenderItem[] } {
  if (!reading?.values.length) return NO_SENDER;
  return { fields: reading.values.map((v) => ({ name: v.name, [v.type]: v.value })) };
}

/** The payload of an event, with the sender's fields as read (none when `reading` is null) and the body text given. */
export function buildFlowPayload(endpoint: PayloadEndpoint, event: EventRow, reading: FieldReading | null = null, body = { json: '', cut: '' }): FlowPayload {
  const payload: FlowPayload = {};
  eachField(endpoint, event, (key, value) => {
    payload[key] = value;
  });
  payload[SENDER_FIELD.key] = senderOf(reading);
  payload[BODY_FIELDS.json] = body.json;
  payload[BODY_FIELDS.cut] = body.cut;
  return payload;
}

export function flowPayloadBytes(payload: FlowPayload): number {
  return Buffer.byteLength(JSON.stringify(payload));
}

/**
 * What one field can add to the JSON at most: a UTF-16 unit of a string is encoded in at most 6 bytes and a number
 * in at most 24; with the quotes, colon and comma. The sender's list is bounded by its own serialisation.
 */
const fieldBound = (key: string, value: FlowPayload[string]) =>
  6 * key.length +
  4 +
  (typeof value === 'string'
    ? 6 * value.length + 2
    : typeof value === 'number'
      ? 24
      : value === NO_SENDER
        ? NO_SENDER_BYTES
        : Buffer.byteLength(JSON.stringify(value)));

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

/** Bytes a text adds inside a JSON string (its escapes), without the quotes. */
const inString = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;

const NO_BODY = "The event's body is no longer retained (past its retention), so none was sent.";

/** How many removed members `body cut` names before it says how many more. */
const CUT_NAMES = 10;

function cutText(removed: string[], bytes: number): string {
  const named = removed.slice(0, CUT_NAMES).join(', ');
  const more = removed.length > CUT_NAMES ? ` and ${removed.length - CUT_NAMES} more` : '';
  return `Removed ${removed.length} top-level member(s), largest first, to fit Flow's limit: ${named}${more} (the event's JSON was ${bytes} bytes).`;
}

/**
 * The event's JSON as `body json` and `body cut`, within `room` bytes (what the rest of the payload leaves under
 * the limit): whole; else without its largest top-level members; else nothing.
 */
function trimmedBody(doc: unknown, room: number): { json: string; cut: string } {
  const full = JSON.stringify(doc);
  const bytes = Buffer.byteLength(full);
  if (inString(full) <= room) return { json: full, cut: '' };
  if (doc !== null && typeof doc === 'object' && !Array.isArray(doc)) {
    const members = Object.entries(doc as Record<string, unknown>).map(([k, v]) => ({ k, cost: inString(`${JSON.stringify(k)}:${JSON.stringify(v)},`) }));
    members.sort((a, b) => b.cost - a.cost);
    let estimate = inString(full);
    const removed = new Set<string>();
    for (const m of members) {
      removed.add(m.k);
      estimate -= m.cost;
      const cut = cutText([...removed], bytes);
      if (estimate + inString(cut) > room) continue;
      const json = JSON.stringify(Object.fromEntries(Object.entries(doc as Record<string, unknown>).filter(([k]) => !removed.has(k))));
      if (inString(json) + inString(cut) <= room) return { json, cut };
    }
  }
  return { json: '', cut: `The event's JSON (${bytes} bytes) was left out: no part of it fits Flow's limit.` };
}

/**
 * At send: the trigger and its payload, built once and checked against Flow's limit, with the typed fields read
 * from the body (`doc`) and what they found (`fieldCounts`, names only). A field whose path is also a required
 * path and whose value is of another type fails the event (SVC_REQUIRED_PATH_MISSING): the endpoint requires it.
 */
export function flowHandoff(endpoint: PayloadEndpoint, event: EventRow, doc?: unknown): Handoff {
  const handle = triggerFor(endpoint.triggerVariant).handle;
  const fields = endpoint.fields ? fieldsOf({ fields: endpoint.fields }) : [];
  const reading = fields.length ? readFields(fields, doc) : null;
  if (reading?.wrongType.length && endpoint.requiredPaths) {
    const required = new Set(JSON.parse(endpoint.requiredPaths) as string[]);
    const broken = fields.find((f) => reading.wrongType.includes(f.name) && required.has(f.path));
    if (broken) {
      return {
        ok: false,
        handle,
        code: 'SVC_REQUIRED_PATH_MISSING',
        errorClass: 'config',
        message: `Required path ${broken.path} holds no ${broken.type} value.`,
      };
    }
  }
  let payload = buildFlowPayload(endpoint, event, reading);
  let bodyCut: string | null = null;
  if (endpoint.includeBody) {
    const body = doc === undefined ? { json: '', cut: NO_BODY } : trimmedBody(doc, FLOW_PAYLOAD_MAX_BYTES - 1 - flowPayloadBytes(payload));
    payload = buildFlowPayload(endpoint, event, reading, body);
    bodyCut = body.cut || null;
  }
  if (!flowPayloadFits(payload)) return { ...TOO_LARGE, handle };
  const counts =
    reading || bodyCut ? { found: reading?.values.length ?? 0, missing: reading?.missing ?? [], wrongType: reading?.wrongType ?? [], bodyCut } : null;
  return { ok: true, handle, payload, fieldCounts: counts && JSON.stringify(counts) };
}

/** The sender and body fields when empty, with the payload's braces: what every payload has beyond the event's columns. */
const EMPTY_SENDER_BYTES = flowPayloadBytes({ [SENDER_FIELD.key]: { fields: [] }, [BODY_FIELDS.json]: '', [BODY_FIELDS.cut]: '' }) + 1;

/**
 * At receipt: whether the event's payload would exceed Flow's limit, from its fields' lengths (the bound of
 * flowPayloadFits), building the payload only when the bound reaches the limit. The sender's fields are bounded
 * (ENDPOINT_FIELDS) and the body is trimmed to fit, so only the event's own columns can make it too large.
 */
export function flowRefusal(endpoint: PayloadEndpoint, event: EventRow): 'SVC_PAYLOAD_TOO_LARGE' | null {
  let bound = EMPTY_SENDER_BYTES;
  eachField(endpoint, event, (key, value) => {
    bound += fieldBound(key, value);
  });
  if (bound < FLOW_PAYLOAD_MAX_BYTES) return null;
  return flowPayloadBytes(buildFlowPayload(endpoint, event)) < FLOW_PAYLOAD_MAX_BYTES ? null : TOO_LARGE.code;
}
