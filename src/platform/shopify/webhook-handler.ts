/**
 * POST /shopify/webhooks: what each Shopify webhook topic does to hookrelay's data. A verified delivery is recorded
 * by its webhook id first (a repeat is answered 200 and not processed again), answered 200 at once (Shopify retries
 * what is not answered 2xx within 5 s), then processed; a delivery recorded but not processed (a crash between, or
 * an error) is processed again by processPendingShopifyWebhooks until it is. Every topic's processing is idempotent.
 * The signature covers the body only, so a delivery is bound to what it claims before it acts: its body is its
 * topic's own (src/platform/shopify/webhooks.ts), the shop it names is the header's store (bind), and what changes a
 * store is confirmed with Shopify (an uninstall, a shop's erasure, a plan) or happens once whatever the webhook id
 * (a customer's erasure, a data request, a shop's erasure per uninstall): replays change nothing beyond the first.
 * Log lines carry the topic, the shop, the webhook id and counts: never a payload value or a secret.
 */
import type { RedactionStore } from '../../../db/areas/redaction.ts';
import type { ShopifyWebhookRow, ShopifyWebhookStore } from '../../../db/areas/shopify-webhooks.ts';
import type { StoreRow } from '../../../db/types.ts';
import type { Core } from '../../core.ts';
import { endBilledPlan, reconcileSubscription } from './billing-pages.ts';
import { iso } from '../../lib/clock.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { appSecret, notConfigured, shopDomainOf } from './app.ts';
import { shopifyPlatform } from './platform.ts';
import { readWebhook, type NamedShop, type ShopifyId, type WebhookPayloads, type WebhookTopic } from './webhooks.ts';
import { normalizeResourceId } from './ids.ts';
import { markUninstalled } from './app-install.ts';

/** A run of a delivery's processing holds it this long; one that dies is taken up again after. */
const RUN_LEASE_MS = 5 * 60_000;
/** After a failed run the next waits 30 s, doubling, at most an hour (compliance requests have 30 days). */
const RETRY_BASE_MS = 30_000;
const RETRY_MAX_MS = 3600_000;
/** Events erased per statement pair: a store's bodies go a chunk at a time, never in one long write. */
const ERASE_CHUNK = 500;
/** Processed deliveries are forgotten after this (Shopify retries a delivery for hours, not weeks). */
const KEEP_PROCESSED_MS = 30 * 86400_000;
/** A data request lists at most this many event ids (the count is always whole). */
const DATA_REQUEST_MAX_EVENTS = 1000;

/** The record kind an operator reads a customer's data request from. */
export const CUSTOMER_DATA_REQUEST = 'customer_data_request';
/**
 * What shop/redact deletes besides event bodies: the records and intents where people write free text (support
 * summaries, diagnostics notes, replay reasons, feature and expansion requests) and the data requests naming customers.
 */
const FREE_TEXT_RECORDS = ['support_request', 'diagnostics_share', 'expansion_request', 'feature_request', CUSTOMER_DATA_REQUEST] as const;
const FREE_TEXT_INTENTS = ['support_request', 'diagnostics_share', 'replay', 'bulk_replay'] as const;

/** A delivery as processing sees it: the recorded row, its opened payload, and the store it was bound to. */
interface Delivery<T extends WebhookTopic> {
  row: ShopifyWebhookRow;
  payload: WebhookPayloads[T];
  /** The header's store, which the payload's shop was checked against (bound). */
  store: StoreRow;
  /** When it happened on Shopify's side (X-Shopify-Triggered-At), never later than its receipt here. */
  at: number;
}

type Handler<T extends WebhookTopic> = (core: Core, d: Delivery<T>) => Promise<string>;

/**
 * What each topic does, in one table: a handler returns a summary of what it did (kept in the delivery's row and
 * logged; counts and ids of hookrelay's own, never a payload value). Each must be safe to run twice.
 */
const HANDLERS: { [T in WebhookTopic]: Handler<T> } = {
  'app/uninstalled': appUninstalled,
  'shop/redact': shopRedact,
  'customers/redact': customersRedact,
  'customers/data_request': customersDataRequest,
  'app_subscriptions/update': subscriptionUpdated,
};

const reply = (status: number, code: string, message: string) => Response.json({ code, message }, { status });

export interface ShopifyWebhookHandler {
  handle(req: Request): Promise<Response>;
  /** Resolves once every processing run this instance began has ended (tests, shutdown). */
  idle(): Promise<void>;
}

const instances = new WeakMap<object, ShopifyWebhookHandler>();

/** The runtime's one webhook handler (keyed by its storage handle): the route and the tests share its runs. */
export function shopifyWebhooks(core: Core): ShopifyWebhookHandler {
  let h = instances.get(core.repo);
  if (!h) instances.set(core.repo, (h = createShopifyWebhooks(core)));
  return h;
}

function createShopifyWebhooks(core: Core): ShopifyWebhookHandler {
  const store = core.repo.shopifyWebhooks;
  const running = new Set<Promise<unknown>>();
  const background = (work: Promise<unknown>) => {
    const p = work.catch(() => {}).finally(() => running.delete(p));
    running.add(p);
  };

  async function handle(req: Request): Promise<Response> {
    if (req.method !== 'POST') return Response.json({ code: 'method_not_allowed', message: 'Use POST.' }, { status: 405, headers: { Allow: 'POST' } });
    const secret = appSecret(core.config.env);
    if (!secret) {
      // Logged by the route's refusal log, once a minute with the variable to set: not once per request.
      return notConfigured('webhooks_not_configured', 'This server has no Shopify app secret configured, so it cannot verify webhooks.');
    }
    const read = await readWebhook(req, secret).catch(() => null);
    if (!read) return reply(400, 'invalid_input', 'The body could not be read.');
    if (!read.ok) {
      return reply(read.status, read.code, read.message);
    }
    const w = read.webhook;
    const now = core.clock.now();
    let fresh: boolean;
    try {
      fresh = await store.record({
        webhookId: w.webhookId,
        topic: w.topic,
        shopDomain: w.shopDomain,
        apiVersion: w.apiVersion,
        eventId: w.eventId,
        triggeredAt: w.triggeredAt,
        receivedAt: now,
        processedAt: w.known ? null : now,
        result: w.known ? null : 'topic not handled by hookrelay',
        leaseUntil: now + RUN_LEASE_MS,
        payloadSealed: w.known ? core.box.seal(JSON.stringify(w.payload)) : null,
      });
    } catch {
      // Not recorded: Shopify retries a delivery that is not answered 2xx.
      core.log.error(`shopify webhook ${w.topic} ${w.webhookId} for ${w.shopDomain} could not be recorded; Shopify will retry it`);
      return reply(503, 'storage_unavailable', 'The webhook could not be recorded; retry later.');
    }
    // Each delivery also takes up what earlier ones left unprocessed (a crash, a failed run whose time has come).
    if (!fresh) {
      core.log.info(`shopify webhook ${w.topic} ${w.webhookId} for ${w.shopDomain}: a repeat, recorded already`);
      background(sweep(core, store));
      return Response.json({ status: 'duplicate' });
    }
    if (!w.known) {
      core.log.warn(`shopify webhook ${w.topic} ${w.webhookId} for ${w.shopDomain}: not a topic hookrelay handles; recorded, not acted on`);
      background(sweep(core, store));
      return Response.json({ status: 'ignored' });
    }
    // Answered now; processed after, with the payload still in hand (the recording took the first run).
    background(run(core, store, w.webhookId, rowOf(w, now), w.payload).then(() => sweep(core, store)));
    return Response.json({ status: 'received' });
  }

  return {
    handle,
    async idle() {
      while (running.size) await Promise.all(running);
    },
  };
}

/** The row as recorded, for the run the recording began (no need to read back what was just written). */
function rowOf(
  w: { webhookId: string; topic: string; shopDomain: string; apiVersion: string | null; eventId: string | null; triggeredAt: number | null },
  now: number,
): ShopifyWebhookRow {
  return { ...w, receivedAt: now, processedAt: null, attempts: 1, leaseUntil: now + RUN_LEASE_MS, lastError: null, result: null, payloadSealed: null };
}

/**
 * Processes every delivery recorded and not yet processed whose run is free: one recorded just before a crash, one
 * whose run failed and whose retry time has come. Safe to call from any instance at any time (each delivery is
 * taken by one run); serve's handoff worker calls it beside its retention sweep. Also forgets deliveries processed
 * more than 30 days ago. Returns how many it processed.
 */
export async function processPendingShopifyWebhooks(core: Core, limit = 50): Promise<number> {
  return sweep(core, core.repo.shopifyWebhooks, limit);
}

async function sweep(core: Core, store: ShopifyWebhookStore, limit = 50): Promise<number> {
  const now = core.clock.now();
  let processed = 0;
  for (const id of await store.due(now, limit)) {
    const row = await store.claim(id, now, now + RUN_LEASE_MS);
    if (!row) continue; // another run took it
    if (await run(core, store, id, row, null)) processed++;
  }
  await store.prune(now - KEEP_PROCESSED_MS);
  return processed;
}

/** One run of a delivery's processing; true when it ended processed. Never throws. */
async function run(core: Core, store: ShopifyWebhookStore, id: string, row: ShopifyWebhookRow, inHand: unknown): Promise<boolean> {
  const topic = row.topic as WebhookTopic;
  const what = `shopify webhook ${row.topic} ${id} for ${row.shopDomain}`;
  try {
    const handler = HANDLERS[topic] as Handler<WebhookTopic> | undefined;
    let result = 'topic not handled by hookrelay';
    if (handler) {
      const payload = (inHand ?? (row.payloadSealed ? JSON.parse(core.box.open(row.payloadSealed)) : null)) as WebhookPayloads[WebhookTopic] | null;
      if (!payload) throw Object.assign(new Error('no payload'), { code: 'payload_missing' });
      const at = Math.min(row.triggeredAt ?? row.receivedAt, row.receivedAt);
      const bound = await bind(core, row, payload);
      result = typeof bound === 'string' ? bound : await handler(core, { row, payload, at, store: bound } as Delivery<WebhookTopic>);
    }
    if (await store.done(id, result, core.clock.now())) {
      // A delivery not bound to what it claims, or a replay of an effect that happens once: a warning, with why.
      if (result.startsWith(NOT_ACTED_ON)) core.log.warn(`${what} recorded, ${result}`);
      else core.log.info(`${what} processed: ${result}`);
    }
    return true;
  } catch (err) {
    const code = errorCode(err);
    const retryAt = core.clock.now() + Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.max(0, row.attempts - 1));
    await store.failed(id, code, retryAt).catch(() => {});
    core.log.warn(`${what}: processing failed (${code}), attempt ${row.attempts}; tried again from ${iso(retryAt)}`);
    return false;
  }
}

/** A stable code for a failed run: the error's own short code, or a class. Never its message (it may quote data). */
function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Za-z0-9_]{1,40}$/.test(code)) return code;
  return err instanceof SyntaxError ? 'payload_unreadable' : 'processing_failed';
}

const NOT_ACTED_ON = 'not acted on: ';

/**
 * Binds a delivery to what it claims before anything is acted on. The signature covers the body only: the topic, the
 * shop and the webhook id are headers anyone holding a signed body can change. So the shop the body names (its domain,
 * its id; a subscription's shop) must be X-Shopify-Shop-Domain's, and its id the one Shopify reported for that store
 * at install (stores that did not install through the app have none to compare); otherwise the delivery is recorded
 * and not acted on. Returns the store, or the result to record.
 */
async function bind(core: Core, row: ShopifyWebhookRow, payload: WebhookPayloads[WebhookTopic]): Promise<StoreRow | string> {
  const named = (payload as { shop?: NamedShop }).shop;
  if (named?.domain != null && shopDomainOf(named.domain) !== row.shopDomain) return `${NOT_ACTED_ON}the payload names another shop than X-Shopify-Shop-Domain`;
  const store = await core.repo.getStoreByShop(row.shopDomain);
  if (!store) return 'no store for this shop on this server';
  const known = /^\d+$/.test(store.platformAccountId) ? store.platformAccountId : null;
  if (named?.id != null && known !== null && normalizeResourceId(named.id) !== known)
    return `${NOT_ACTED_ON}the payload names another shop id than store ${store.id}'s (Shopify's id for ${row.shopDomain})`;
  return store;
}

/**
 * Whether Shopify still lets the app into the store. The signature covers a delivery's body, not its headers: a
 * body seen once can be sent again under a new webhook id and pass. So an uninstall or a shop's erasure is acted on
 * only once the store's own token is refused (Shopify revokes the app's tokens when it is uninstalled, before it
 * sends app/uninstalled). Shopify not answering throws: the run is tried again later, never guessed.
 */
async function stillInstalled(core: Core, store: StoreRow): Promise<boolean> {
  if (store.uninstalledAt != null) return false;
  const look = await shopifyPlatform(core).probe(store, core.config.handoff.timeoutMs);
  if (look.result === 'unreachable' || look.result === 'throttled') {
    throw Object.assign(new Error('Shopify could not confirm the app was uninstalled'), { code: 'shopify_unconfirmed' });
  }
  return look.result === 'ok';
}

/**
 * The app's access ended: tokens forgotten, handoff paused (`uninstalled`), events kept waiting. Not when the store
 * holds a token obtained after the uninstall happened: it was installed again since (a delivery processed late, after
 * a crash), and its live install is left alone; nor while Shopify still accepts its token (stillInstalled).
 */
async function appUninstalled(core: Core, d: Delivery<'app/uninstalled'>): Promise<string> {
  const store = d.store;
  // Marked already (this uninstall, or one sent again): the pause and the uninstall time it keeps stay as they are.
  if (store.uninstalledAt != null) return `no change: store ${store.id} is marked uninstalled already`;
  const link = await core.repo.links.get(store.id);
  if (link?.tokenObtainedAt != null && link.tokenObtainedAt > d.at) {
    return `not applied: store ${store.id} was installed again after this uninstall`;
  }
  if (await stillInstalled(core, store)) return `not applied: Shopify still accepts store ${store.id}'s token (a delivery sent again?)`;
  await markUninstalled(core, store.shopDomain, d.at);
  // Shopify cancels the app's subscriptions with the uninstall: the plan they paid for ends here (confirmed above).
  const billed = await endBilledPlan(core, store.id, d.at);
  return `store ${store.id} marked uninstalled; handoff paused, events kept${billed}`;
}

/**
 * 48 hours after an uninstall: the store's personal data goes. Every retained event body (the events stay, with
 * their outcomes and counts, marked `expired`), the free text people wrote about it (support requests, diagnostics
 * notes, replay reasons, feature and expansion requests, in records and intents), customers' data requests, stored
 * idempotent responses, and its tokens. Not while Shopify still accepts the store's token (stillInstalled): the app
 * is installed, and a store whose merchant came back keeps its data.
 * Audit rows, grants, endpoints and receipts hold no personal data by design and stay.
 */
async function shopRedact(core: Core, d: Delivery<'shop/redact'>): Promise<string> {
  const store = d.store;
  if (await stillInstalled(core, store))
    return `not applied: Shopify still accepts store ${store.id}'s token; it sends shop/redact only after an uninstall (a delivery sent again?)`;
  // Once per uninstall: the same body sent again while the store stays uninstalled erases nothing more.
  const effect = `shop/redact ${sha256Hex(`${store.id}\n${store.uninstalledAt ?? 'unrecorded'}`)}`;
  if (!(await core.repo.shopifyWebhooks.claimEffect(effect, store.id, d.row.webhookId, core.clock.now())))
    return `${NOT_ACTED_ON}store ${store.id} was erased already for this uninstall (a delivery sent again)`;
  const redaction = core.repo.redaction;
  const bodies = await eraseAll(redaction, store);
  const records = await redaction.deleteRecords(store.id, FREE_TEXT_RECORDS);
  const intents = await redaction.deleteIntents(store.id, FREE_TEXT_INTENTS);
  await redaction.deleteIdempotencyKeys(store.id);
  const notes = await core.repo.eraseConfirmationNotes(store.id);
  await core.repo.links.clearToken(store.id, core.clock.now());
  shopifyPlatform(core).forget(store.id);
  return `store ${store.id}: ${bodies} event bodies erased (events and counts kept), ${records} records and ${intents} intents deleted, tokens cleared, ${notes} confirmation notes erased`;
}

async function eraseAll(redaction: RedactionStore, store: StoreRow): Promise<number> {
  let erased = 0;
  let after = '';
  for (;;) {
    const ids = await redaction.retainedEvents(store.id, after, ERASE_CHUNK);
    if (!ids.length) return erased;
    erased += await redaction.eraseBodies(store.id, ids);
    after = ids[ids.length - 1]!;
  }
}

/**
 * The bodies of the customer's events go: the rows stay, marked `expired`. Shopify offers no read-back of an erasure
 * request (the customer is erased on its side before it tells apps), so what makes a delivery an erasure here is that
 * it is one signed request, acted on once: its body must be customers/redact's own (a data request's body is refused
 * at reading, whatever the topic header says), name the header's store (bind), and its exact signed bytes (their
 * SHA-256, kept for good in shopify_webhook_effects) must not have erased before. A body sent again under a new
 * webhook id, now or in a year, is recorded and erases nothing. A genuine second request differs in its bytes (a
 * new customer or new orders); one identical to an earlier request asks for what was erased then.
 */
async function customersRedact(core: Core, d: Delivery<'customers/redact'>): Promise<string> {
  const store = d.store;
  const digest = d.payload.digest;
  if (!digest) return `${NOT_ACTED_ON}recorded by a version that kept no digest of its signed body, so it cannot be told from a replay; nothing erased`;
  if (!(await core.repo.shopifyWebhooks.claimEffect(`customers/redact ${digest}`, store.id, d.row.webhookId, core.clock.now())))
    return `${NOT_ACTED_ON}this erasure request (the same signed body) was acted on already (a delivery sent again)`;
  const redaction = core.repo.redaction;
  const events = await customerEvents(redaction, store, d.payload.customerId, d.payload.ordersToRedact);
  let erased = 0;
  for (let i = 0; i < events.length; i += ERASE_CHUNK)
    erased += await redaction.eraseBodies(
      store.id,
      events.slice(i, i + ERASE_CHUNK).map((e) => e.id),
    );
  return `store ${store.id}: ${events.length} events of the customer, ${erased} bodies erased (events kept)`;
}

/**
 * Recorded for the operator (records, kind customer_data_request, one per request): the customer's id, the events
 * hookrelay holds on them and whether their bodies are still retained. Never a body, an email or a phone number.
 */
async function customersDataRequest(core: Core, d: Delivery<'customers/data_request'>): Promise<string> {
  const store = d.store;
  // One record per request: the same signed body sent again under another webhook id finds it.
  const id = `cdr_${sha256Hex(d.payload.digest ? `${store.id}\n${d.payload.digest}` : d.row.webhookId).slice(0, 26)}`;
  if (await core.repo.getRecord(store.id, CUSTOMER_DATA_REQUEST, id)) return `recorded already as ${id}`;
  const redaction = core.repo.redaction;
  const now = core.clock.now();
  const events = await customerEvents(redaction, store, d.payload.customerId, d.payload.ordersRequested);
  const retainedAfter = now - core.config.bodyRetentionMs;
  const held = events.map((e) => ({
    id: e.id,
    endpointId: e.endpointId,
    triggerVariant: e.variant,
    resourceId: e.resourceId,
    outcome: e.outcome,
    receivedAt: iso(e.receivedAt),
    bodyRetained: e.bodyRetention === 'retained' && e.receivedAt > retainedAfter,
  }));
  const retained = held.filter((e) => e.bodyRetained).length;
  const body = {
    dataRequestId: d.payload.dataRequestId == null ? null : String(d.payload.dataRequestId),
    customerId: normalizeResourceId(d.payload.customerId),
    ordersRequested: ids(d.payload.ordersRequested),
    webhookId: d.row.webhookId,
    requestedAt: iso(d.at),
    eventCount: held.length,
    bodiesRetained: retained,
    events: held.slice(0, DATA_REQUEST_MAX_EVENTS),
    eventsTruncated: held.length > DATA_REQUEST_MAX_EVENTS,
    holds:
      "hookrelay holds, per event: its receipt (ids, times, outcome, the resource id it names) and, until its retention ends, the raw body the sender sent, which may hold the customer's personal data. It keeps no customer email or phone outside those bodies.",
  };
  await core.repo.insertRecord({ id, storeId: store.id, kind: CUSTOMER_DATA_REQUEST, body: JSON.stringify(body), createdAt: now, expiresAt: null });
  return `recorded for the operator as ${CUSTOMER_DATA_REQUEST} ${id}: ${held.length} events, ${retained} bodies retained`;
}

/** Ids as stored in `events.resource_id` (decimal strings); unmappable ones dropped. */
const ids = (values: ShopifyId[]) => [...new Set(values.map(normalizeResourceId).filter((v): v is string => v !== null))];

/**
 * The store's events about a customer: those naming the customer's id on an endpoint whose trigger is `customer`, and
 * those naming one of the orders on an `order` endpoint (the trigger as it was when the event arrived). An event
 * whose endpoint was deleted since is counted in when it names any of the ids: erasure errs on the side of erasing.
 */
async function customerEvents(redaction: RedactionStore, store: StoreRow, customerId: ShopifyId | null, orderIds: ShopifyId[]) {
  const customer = customerId == null ? null : normalizeResourceId(customerId);
  const orders = new Set(ids(orderIds));
  const wanted = [...new Set([...(customer ? [customer] : []), ...orders])];
  const found = await redaction.eventsByResource(store.id, wanted);
  return found.flatMap((e) => {
    const variant = variantOf(e.config);
    const match = variant === 'customer' ? e.resourceId === customer : variant === 'order' ? orders.has(e.resourceId) : variant === null;
    return match ? [{ ...e, variant }] : [];
  });
}

function variantOf(config: string | null): string | null {
  if (!config) return null;
  try {
    const v = (JSON.parse(config) as { triggerVariant?: unknown }).triggerVariant;
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}

/**
 * A subscription the merchant approved, declined or that ended: the plan follows what Shopify reports now, for the
 * subscriptions hookrelay created for this store (src/platform/shopify/billing-pages.ts reconcileSubscription). The body only says which
 * subscription to look at; a body naming one hookrelay did not create for the store changes nothing.
 */
async function subscriptionUpdated(core: Core, d: Delivery<'app_subscriptions/update'>): Promise<string> {
  const id = d.payload.appSubscription.admin_graphql_api_id;
  return reconcileSubscription(core, d.store, typeof id === 'string' ? id : '');
}
