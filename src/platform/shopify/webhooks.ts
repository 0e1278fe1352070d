/**
 * Shopify's webhooks as Shopify sends them (POST, JSON, X-Shopify-* headers, the body signed with the app's client
 * secret): the topics the app subscribes to (shopify/shopify.app.toml), and the reading of one delivery — its size,
 * its signature, its headers, its payload — into what hookrelay acts on. What each topic does to hookrelay's data is
 * src/ops/shopify-webhooks.ts. Of a payload only what processing needs is kept: never a customer's email or phone.
 */
import { malformedFields, readSignedBody, shopDomainOf, signedJson, type SignedRefusal } from './app.ts';

/** Where Shopify delivers every topic the app subscribes to. */
export const WEBHOOK_PATH = '/shopify/webhooks';

/** Topics of the app's own subscriptions. */
export const APP_TOPICS = ['app/uninstalled', 'app_subscriptions/update'] as const;
/** Shopify's mandatory privacy topics (`compliance_topics` in the app config). */
export const COMPLIANCE_TOPICS = ['customers/data_request', 'customers/redact', 'shop/redact'] as const;
export type WebhookTopic = (typeof APP_TOPICS)[number] | (typeof COMPLIANCE_TOPICS)[number];
const KNOWN: ReadonlySet<string> = new Set<string>([...APP_TOPICS, ...COMPLIANCE_TOPICS]);

/** A Shopify resource id as sent: a number, a digit string or a GID (normalised by whoever matches it). */
export type ShopifyId = number | string;

/** What processing needs of each topic's payload. */
export interface WebhookPayloads {
  /** The shop resource; of it only its id (the shop is the header's). */
  'app/uninstalled': { shopId: ShopifyId | null };
  'shop/redact': { shopId: ShopifyId | null };
  /** `customerId` null: a redaction of orders only. */
  'customers/redact': { customerId: ShopifyId | null; ordersToRedact: ShopifyId[] };
  'customers/data_request': { customerId: ShopifyId | null; ordersRequested: ShopifyId[]; dataRequestId: ShopifyId | null };
  /** The `app_subscription` object as Shopify sent it (billing reads it). */
  'app_subscriptions/update': { appSubscription: Record<string, unknown> };
}

interface Delivery {
  /** Lowercased `your-store.myshopify.com`. */
  shopDomain: string;
  webhookId: string;
  eventId: string | null;
  apiVersion: string | null;
  /** Epoch ms, or null when absent or unreadable. */
  triggeredAt: number | null;
}

/** A verified delivery: a topic this app handles with its payload, or any other topic (answered, recorded, not acted on). */
export type ShopifyWebhook =
  | { [T in WebhookTopic]: Delivery & { topic: T; known: true; payload: WebhookPayloads[T] } }[WebhookTopic]
  | (Delivery & { topic: string; known: false; payload: null });

export type WebhookRead = { ok: true; webhook: ShopifyWebhook } | SignedRefusal;

const TOPIC = /^[a-z0-9_]{1,64}\/[a-z0-9_/]{1,64}$/;
/** Webhook and event ids are UUIDs today; anything printable and short is taken, nothing that could break a log line. */
const DELIVERY_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const API_VERSION = /^(\d{4}-\d{2}|unstable)$/;

/** Built with the first delivery: a serve that never gets one does not load zod for it. */
const payloadSchemas = async () => {
  const { z } = await import('zod');
  const id = z.union([z.number().int(), z.string().min(1).max(255)]);
  const shop = { shop_id: id.optional(), shop_domain: z.string().min(1).max(255).optional() };
  const customer = z.object({ id: id.nullish() }).nullish();
  const ids = z.array(id).max(10_000).nullish();
  return {
    'app/uninstalled': z.object({ id: id.optional(), myshopify_domain: z.string().max(255).nullish() }),
    'shop/redact': z.object(shop),
    'customers/redact': z.object({ ...shop, customer, orders_to_redact: ids }),
    'customers/data_request': z.object({ ...shop, customer, orders_requested: ids, data_request: z.object({ id: id.nullish() }).nullish() }),
    'app_subscriptions/update': z.object({
      app_subscription: z.looseObject({ admin_graphql_api_id: z.string().min(1).max(255), status: z.string().min(1).max(64) }),
    }),
  } as const;
};
let schemas: ReturnType<typeof payloadSchemas> | undefined;

/** The fields reduce reads of a validated payload, each present only on the topics whose schema has it. */
interface ValidatedPayload {
  id?: ShopifyId;
  shop_id?: ShopifyId;
  shop_domain?: string;
  myshopify_domain?: string | null;
  customer?: { id?: ShopifyId | null } | null;
  orders_to_redact?: ShopifyId[] | null;
  orders_requested?: ShopifyId[] | null;
  data_request?: { id?: ShopifyId | null } | null;
  app_subscription?: Record<string, unknown>;
}

const refuse = (status: 400 | 401 | 413, code: string, message: string): SignedRefusal => ({ ok: false, status, code, message });

/**
 * Reads one delivery: the raw body (at most SIGNED_BODY_MAX), its signature (X-Shopify-Hmac-Sha256, the base64
 * HMAC-SHA256 of the exact bytes keyed with `secret`, compared in constant time), then — only once it verified —
 * its headers and its JSON. The shop a payload names must be the header's. Never throws for what a sender sends.
 */
export async function readWebhook(req: Request, secret: string): Promise<WebhookRead> {
  const signed = await readSignedBody(req, secret, 'Webhooks');
  if (!signed.ok) return signed;

  const topic = req.headers.get('x-shopify-topic')?.trim().toLowerCase() ?? '';
  const shopDomain = shopDomainOf(req.headers.get('x-shopify-shop-domain'));
  const webhookId = req.headers.get('x-shopify-webhook-id')?.trim() ?? '';
  const bad = [!TOPIC.test(topic) && 'X-Shopify-Topic', !shopDomain && 'X-Shopify-Shop-Domain', !DELIVERY_ID.test(webhookId) && 'X-Shopify-Webhook-Id'].filter(
    Boolean,
  );
  if (bad.length) return refuse(400, 'invalid_input', `Missing or malformed: ${bad.join(', ')}.`);
  const eventId = req.headers.get('x-shopify-event-id')?.trim() ?? '';
  const apiVersion = req.headers.get('x-shopify-api-version')?.trim() ?? '';
  const triggeredAt = Date.parse(req.headers.get('x-shopify-triggered-at') ?? '');
  const delivery: Delivery = {
    shopDomain: shopDomain!,
    webhookId,
    eventId: DELIVERY_ID.test(eventId) ? eventId : null,
    apiVersion: API_VERSION.test(apiVersion) ? apiVersion : null,
    triggeredAt: Number.isFinite(triggeredAt) ? triggeredAt : null,
  };

  const json = signedJson(signed.body);
  if (!json.ok) return json;
  if (!KNOWN.has(topic)) return { ok: true, webhook: { ...delivery, topic, known: false, payload: null } };

  const known = topic as WebhookTopic;
  const parsed = (await (schemas ??= payloadSchemas()))[known].safeParse(json.doc);
  if (!parsed.success) return refuse(400, 'invalid_input', `The ${known} payload is missing or has malformed fields: ${malformedFields(parsed.error.issues)}.`);
  const p: ValidatedPayload = parsed.data;
  const named = p.shop_domain ?? p.myshopify_domain;
  if (named != null && shopDomainOf(named) !== delivery.shopDomain)
    return refuse(400, 'invalid_input', 'The payload names another shop than X-Shopify-Shop-Domain.');
  return { ok: true, webhook: { ...delivery, topic: known, known: true, payload: reduce(known, p) } as ShopifyWebhook };
}

/** What processing keeps of a validated payload. */
function reduce(topic: WebhookTopic, p: ValidatedPayload): WebhookPayloads[WebhookTopic] {
  switch (topic) {
    case 'app/uninstalled':
      return { shopId: p.id ?? null };
    case 'shop/redact':
      return { shopId: p.shop_id ?? null };
    case 'customers/redact':
      return { customerId: p.customer?.id ?? null, ordersToRedact: p.orders_to_redact ?? [] };
    case 'customers/data_request':
      return { customerId: p.customer?.id ?? null, ordersRequested: p.orders_requested ?? [], dataRequestId: p.data_request?.id ?? null };
    case 'app_subscriptions/update':
      return { appSubscription: p.app_subscription! };
  }
}
