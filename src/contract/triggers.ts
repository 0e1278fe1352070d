/**
 * The eight Flow trigger variants: handle, reference field and declared fields. The shipped extensions
 * (shopify/extensions/<variant>/shopify.extension.toml) must declare exactly these; a test checks it. Also what the
 * confirm action and the alert trigger carry. Free of zod: serve's start loads it.
 */
import type { TriggerVariant } from './schemas.ts';

/** The Confirm hookrelay event action extension (shopify/extensions/confirm-action): its handle, where Flow sends its runs, and the keys of its fields in `properties`. */
export const CONFIRM_ACTION = {
  handle: 'hookrelay-confirm',
  path: '/flow/actions/confirm',
  fields: { eventId: 'event_id', outcome: 'outcome', note: 'note' },
} as const;

/** Outcomes a Confirm hookrelay event step (the Flow action, shopify/extensions/confirm-action) reports. */
export const CONFIRMATION_OUTCOMES = ['ok', 'error'] as const;

/**
 * What the `hookrelay-alert` trigger reports (src/relay/alerts.ts raises and recovers them):
 * - `silence`: an endpoint with a silence watch (expectedEvery) received nothing for longer;
 * - `handoff_paused`: the store's handoff is paused for its credentials (missing, refused, not issued);
 * - `uninstalled`: the app was uninstalled from the store;
 * - `auth_failures`: a burst of failed authentications on one endpoint (ALERTS.authBurst).
 */
export const ALERT_KINDS = ['silence', 'handoff_paused', 'uninstalled', 'auth_failures'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface TriggerDef {
  handle: string;
  name: string;
  description: string;
  /** Flow reference field type and its payload key, for variants that point at a Shopify resource. */
  reference: { type: 'order_reference' | 'customer_reference' | 'product_reference'; key: string } | null;
  /** Which mapping the endpoint must configure. */
  requires: 'resourceIdPath' | 'relatedResourceIdPath' | null;
  /** Custom text fields (keys: letters and spaces only), always sent. */
  textFields: readonly string[];
}

/** Sent on every handoff of every variant. */
export const COMMON_FIELDS = ['event type', 'external event id', 'source', 'hookrelay event id', 'received at'] as const;

const text = (...extra: string[]) => [...COMMON_FIELDS, ...extra] as const;

export const TRIGGERS: Record<TriggerVariant, TriggerDef> = {
  generic: {
    handle: 'hookrelay-generic',
    name: 'Relay event received',
    description: 'An authenticated event arrived through hookrelay.',
    reference: null,
    requires: null,
    textFields: text(),
  },
  order: {
    handle: 'hookrelay-order',
    name: 'Relay order event received',
    description: 'An authenticated event about an order arrived through hookrelay.',
    reference: { type: 'order_reference', key: 'order_id' },
    requires: 'resourceIdPath',
    textFields: text(),
  },
  customer: {
    handle: 'hookrelay-customer',
    name: 'Relay customer event received',
    description: 'An authenticated event about a customer arrived through hookrelay.',
    reference: { type: 'customer_reference', key: 'customer_id' },
    requires: 'resourceIdPath',
    textFields: text(),
  },
  product: {
    handle: 'hookrelay-product',
    name: 'Relay product event received',
    description: 'An authenticated event about a product arrived through hookrelay.',
    reference: { type: 'product_reference', key: 'product_id' },
    requires: 'resourceIdPath',
    textFields: text(),
  },
  inventory: {
    handle: 'hookrelay-inventory',
    name: 'Relay inventory event received',
    description: 'An authenticated inventory event arrived through hookrelay.',
    reference: null,
    requires: 'relatedResourceIdPath',
    textFields: text('related resource id'),
  },
  fulfillment: {
    handle: 'hookrelay-fulfillment',
    name: 'Relay fulfillment event received',
    description: 'An authenticated fulfillment event arrived through hookrelay.',
    reference: null,
    requires: 'relatedResourceIdPath',
    textFields: text('related resource id'),
  },
  return: {
    handle: 'hookrelay-return',
    name: 'Relay return event received',
    description: 'An authenticated return event arrived through hookrelay.',
    reference: null,
    requires: 'relatedResourceIdPath',
    textFields: text('related resource id'),
  },
  company: {
    handle: 'hookrelay-company',
    name: 'Relay company event received',
    description: 'An authenticated B2B company event arrived through hookrelay.',
    reference: null,
    requires: 'relatedResourceIdPath',
    textFields: text('related resource id'),
  },
};

/** The types a sender's value may be handed to Flow as (src/lib/fields.ts checks a value against each): one slot each. */
export const FIELD_TYPES = ['text', 'number', 'boolean', 'email', 'url', 'datetime'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/**
 * Sent on every handoff of every variant, after the text fields: the endpoint's typed fields (src/lib/fields.ts) as
 * a list of a custom type, declared in each trigger extension's schema file (shopify/extensions/<variant>/
 * schema.graphql, copies of shopify/_shared/sender.graphql), so a condition tests
 * `sender.fields any? |fields_item| ((fields_item.name == 'score') && (fields_item.number < 3))`; then the
 * event's JSON (empty unless the endpoint sets includeBody) and what was cut of it to keep Flow's limit.
 */
export const SENDER_FIELD = {
  key: 'sender',
  type: 'schema.Sender',
  schema: './schema.graphql',
  /** Each item: the field's name and one slot per type; only the slot of its type is set. */
  item: { type: 'SenderField', list: 'fields', slots: FIELD_TYPES },
} as const;
export const BODY_FIELDS = { json: 'body json', cut: 'body cut' } as const;

/** Flow rejects larger trigger payloads. */
export const FLOW_PAYLOAD_MAX_BYTES = 50_000;

/** Inbound events whose external_event_id carries this prefix are test receipts (createEndpointTestIntent): authenticated, never handed off. */
export const TEST_EVENT_PREFIX = 'hookrelay_test_';

/**
 * The alert trigger (shopify/extensions/alert): hookrelay's own alerts handed to Flow, raised and recovered, so a
 * merchant routes them with Flow's Slack, email or task actions. Not an endpoint trigger variant: no endpoint can
 * select it, and no sender's event is ever handed off with it.
 */
export const ALERT_TRIGGER = {
  handle: 'hookrelay-alert',
  name: 'Relay alert',
  description:
    'hookrelay raised or recovered an alert: an endpoint fell silent, handoff paused for credentials, the app was uninstalled, or authentication failed repeatedly.',
  /** Every one is sent on every alert handoff, as text (empty when it does not apply). */
  textFields: ['alert id', 'kind', 'phase', 'endpoint id', 'endpoint name', 'since', 'summary', 'recommended action'],
} as const;
