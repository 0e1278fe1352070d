/**
 * Shopify's webhooks as Shopify sends them (POST, JSON, X-Shopify-* headers, the body signed with the app's client
 * secret): the topics the app subscribes to (shopify/shopify.app.toml), and the reading of one delivery — its size,
 * its signature, its headers, its payload — into what hookrelay acts on. What each topic does to hookrelay's data is
 * src/platform/shopify/webhook-handler.ts. Of a payload only what processing needs is kept: never a customer's email or phone.
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

/**
 * The shop a payload names, checked before anything is acted on (src/platform/shopify/webhook-handler.ts): its domain must be
 * X-Shopify-Shop-Domain's and its id the store's. Absent in rows recorded before this was kept.
 */
export interface NamedShop {
  domain: string | null;
  id: ShopifyId | null;
}

/** What processing needs of each topic's payload. */
export interface WebhookPayloads {
  /** The shop resource; of it only its id and domain (the shop is the header's). */
  'app/uninstalled': { shopId: ShopifyId | null; shop?: NamedShop };
  'shop/redact': { shopId: ShopifyId | null; shop?: NamedShop };
  /** `customerId` null: a redaction of orders only. `digest`: the signed body's SHA-256 (one erasure per request). */
  'customers/redact': { customerId: ShopifyId | null; ordersToRedact: ShopifyId[]; shop?: NamedShop; digest?: string };
  'customers/data_request': { customerId: ShopifyId | null; ordersRequested: ShopifyId[]; dataRequestId: ShopifyId | null; shop?: NamedShop; digest?: string };
  /** The `app_subscription` object as Shopify sent it (billing reads its id; the plan is what Shopify reports). */
  'app_subscriptions/update': { appSubscription: Record<string, unknown>; shop?: NamedShop };
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

/**
 * Each topic's own payload, as Shopify documents it, and nothing that is another topic's: the topic header is not
 * signed, so a body must fit the topic it is delivered under and no other. Every field processing reads is required
 * (an erasure never takes a missing list as empty). The compliance topics' and app_subscriptions/update's payloads are
 * small and fixed, so an unknown field there refuses the body (400: Shopify sends it again, and the refusal is seen);
 * app/uninstalled's is the whole Shop resource, which grows, so only the other topics' own fields refuse it.
 * Built with the first delivery: a serve that never gets one does not load zod for it.
 */
const payloadSchemas = async () => {
  const { z } = await import('zod');
  const id = z.union([z.number().int().positive(), z.string().min(1).max(255)]);
  const domain = z.string().min(1).max(255);
  const gid = (type: string) => z.string().regex(new RegExp(`^gid://shopify/${type}/[1-9]\\d{0,19}$`));
  /** A customer as the compliance topics carry it: its id is null for a customer known by email only. */
  const customer = z.looseObject({ id: id.nullish() });
  const ids = z.array(id).max(10_000);
  /** The fields only another topic carries: a body with one is that topic's, not this one's. */
  const foreign = ['shop_id', 'shop_domain', 'customer', 'orders_to_redact', 'orders_requested', 'data_request', 'app_subscription'];
  return {
    'app/uninstalled': z.looseObject({ id, myshopify_domain: domain }).superRefine((doc, ctx) => {
      const keys = foreign.filter((k) => k in doc);
      if (keys.length) ctx.addIssue({ code: 'unrecognized_keys', keys, input: doc, message: 'Fields of another topic.' });
    }),
    'shop/redact': z.strictObject({ shop_id: id, shop_domain: domain }),
    'customers/redact': z.strictObject({ shop_id: id, shop_domain: domain, customer, orders_to_redact: ids }),
    'customers/data_request': z.strictObject({
      shop_id: id,
      shop_domain: domain,
      customer,
      orders_requested: ids,
      data_request: z.looseObject({ id }),
    }),
    'app_subscriptions/update': z.strictObject({
      app_subscription: z.looseObject({
        admin_graphql_api_id: gid('AppSubscription'),
        name: z.string().min(1).max(255),
        status: z.string().regex(/^[A-Z_]{1,32}$/),
        admin_graphql_api_shop_id: gid('Shop').optional(),
      }),
    }),
  } as const;
};
let schemas: ReturnType<typeof payloadSchemas> | undefined;

/** A refusal's field list: the fields that are malformed or missing, and the names of fields the topic does not carry. */
function refusedFields(issues: readonly { code?: string; path: readonly PropertyKey[]; keys?: readonly string[] }[]): string {
  const unknown = issues.flatMap((i) => (i.code === 'unrecognized_keys' ? (i.keys ?? []).map((k) => [...i.path, k].map(String).join('.').slice(0, 64)) : []));
  const bad = malformedFields(issues.filter((i) => i.code !== 'unrecognized_keys'));
  return [bad && `missing or malformed: ${bad}`, unknown.length && `not fields of this topic: ${[...new Set(unknown)].slice(0, 10).join(', ')}`]
    .filter(Boolean)
    .join('; ');
}

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
 * its headers and its JSON, which must be the topic's own payload. The shop it names is kept for processing to
 * check against the header's and the store's. Never throws for what a sender sends.
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
  if (!parsed.success) return refuse(400, 'invalid_input', `The body is not a ${known} payload (${refusedFields(parsed.error.issues)}).`);
  const digest = new Bun.CryptoHasher('sha256').update(signed.body).digest('hex');
  return { ok: true, webhook: { ...delivery, topic: known, known: true, payload: reduce(known, parsed.data as ValidatedPayload, digest) } as ShopifyWebhook };
}

/** What processing keeps of a validated payload: what it acts on, the shop it names, and (erasure, data request) the body's digest. */
function reduce(topic: WebhookTopic, p: ValidatedPayload, digest: string): WebhookPayloads[WebhookTopic] {
  const named = (domain: string | null | undefined, id: ShopifyId | null | undefined): NamedShop => ({ domain: domain ?? null, id: id ?? null });
  switch (topic) {
    case 'app/uninstalled':
      return { shopId: p.id ?? null, shop: named(p.myshopify_domain, p.id) };
    case 'shop/redact':
      return { shopId: p.shop_id ?? null, shop: named(p.shop_domain, p.shop_id) };
    case 'customers/redact':
      return { customerId: p.customer?.id ?? null, ordersToRedact: p.orders_to_redact!, shop: named(p.shop_domain, p.shop_id), digest };
    case 'customers/data_request':
      return {
        customerId: p.customer?.id ?? null,
        ordersRequested: p.orders_requested!,
        dataRequestId: p.data_request?.id ?? null,
        shop: named(p.shop_domain, p.shop_id),
        digest,
      };
    case 'app_subscriptions/update': {
      const sub = p.app_subscription!;
      return { appSubscription: sub, shop: named(null, typeof sub.admin_graphql_api_shop_id === 'string' ? sub.admin_graphql_api_shop_id : null) };
    }
  }
}
