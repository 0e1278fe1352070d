/**
 * Shopify as a destination: Flow triggers handed off with Admin GraphQL `flowTriggerReceive`, the store's token
 * from its credential mode, a refused token renewed once and then the store paused (never its events failed),
 * and a cheap `shop { id }` query for probes and live checks. One instance per runtime (shopifyPlatform), so the
 * worker, setup state and doctor share one token cache and one renewal per store.
 */
import type { PlatformLinkStore } from '../../../db/areas/platform-links.ts';
import type { StoreRow } from '../../../db/types.ts';
import { PAUSE_CODES } from '../../contract/platform.ts';
import type { CoreWith } from '../../core.ts';
import type { Destination, HandoffOutcome, LinkCheck, PauseRequest, TriggerRequest } from '../types.ts';
import { adminGraphql, graphqlUrl, isThrottled, type GraphqlReply } from './admin-api.ts';
import { ACTIVE_SUBSCRIPTIONS, APP_SUBSCRIPTION_CREATE, subscriptionVariables, type ReportedSubscription } from './billing.ts';
import { CostBudget } from './budget.ts';
import { credentialModeOf, Credentials, type TokenResult } from './credentials.ts';
import { SHOPIFY_ADMIN_API_VERSION } from './version.ts';

const FLOW_TRIGGER_RECEIVE = `mutation flowTriggerReceive($handle: String, $payload: JSON) {
  flowTriggerReceive(handle: $handle, payload: $payload) {
    userErrors { field message }
  }
}`;

/** The cheapest authenticated query (cost 1): probes and live checks. */
const SHOP_QUERY = 'query hookrelayCheck { shop { id } }';

/** A live check of the destination is reused this long (setup state and doctor may be read in bursts). */
const CHECK_TTL_MS = 10_000;

const clip = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…` : s);

type PlatformCore = CoreWith<{ links: PlatformLinkStore }>;

/** Whether hookrelay obtains the store's tokens itself (and so can renew one the platform refused). */
const renewable = (store: StoreRow) => credentialModeOf(store) === 'client-credentials' || credentialModeOf(store) === 'oauth';

const refusedPause = (store: StoreRow, status: number): PauseRequest => ({
  reason: 'credentials',
  code: 'SVC_CREDENTIALS_REFUSED',
  message: `Shopify refused the Admin API token of ${store.shopDomain} (HTTP ${status}${credentialModeOf(store) === 'static' ? `; the token comes from ${store.adminTokenEnv}` : ', even a freshly obtained one'}).`,
});

export class ShopifyPlatform implements Destination {
  readonly name = 'shopify' as const;
  readonly credentials: Credentials;
  readonly budget: CostBudget;
  /** The version each store's replies last came with, as noted in platform_links. */
  private readonly answered = new Map<string, string>();
  private readonly checks = new Map<string, { at: number; check: Promise<LinkCheck> }>();

  constructor(private readonly core: PlatformCore) {
    this.credentials = new Credentials(core);
    this.budget = new CostBudget(core);
  }

  /**
   * The round's budgets, read and spent for all its stores at once. The links read for it also hold what a first
   * send of a store in this process would read one by one: its stored token, its answered API version, its
   * budget's shape; taken here, those sends read and write nothing of their own.
   */
  pace(wants: readonly { store: StoreRow; wanted: number }[]) {
    const stores = new Map(wants.map((w) => [w.store.id, w.store]));
    return this.budget.pace(
      wants.map((w) => ({ storeId: w.store.id, wanted: w.wanted })),
      true,
      (links) => {
        this.budget.know(links);
        for (const link of links) {
          this.credentials.prime(stores.get(link.storeId)!, link);
          // Only the version asked for: another one is warned of once per process, by its first reply.
          if (link.answeredApiVersion === SHOPIFY_ADMIN_API_VERSION && !this.answered.has(link.storeId))
            this.answered.set(link.storeId, link.answeredApiVersion);
        }
      },
    );
  }

  /** Starts a trigger: an event's handoff, or any other trigger of the app (an alert); only the store, handle and fields are read. */
  async send(req: TriggerRequest, timeoutMs: number): Promise<HandoffOutcome> {
    const { store } = req;
    const variables = { handle: req.handle, payload: req.payload };
    const first = await this.credentials.token(store);
    if (!first.ok) {
      await this.budget.answered(store.id, null, false); // granted, never sent
      return pausedOutcome(first, false);
    }
    let reply = await this.call(store, first.token.value, FLOW_TRIGGER_RECEIVE, variables, timeoutMs);
    if (reply.kind === 'refused' && renewable(store)) {
      // Renewed once: a token that lapsed early, or was replaced, is not the store's credentials failing. A 401
      // never ran the mutation, so sending again cannot repeat a trigger.
      const again = await this.credentials.token(store, first.token.generation);
      if (!again.ok) {
        await this.budget.answered(store.id, null, false);
        return pausedOutcome(again, true, reply.status);
      }
      reply = await this.call(store, again.token.value, FLOW_TRIGGER_RECEIVE, variables, timeoutMs);
    }
    const throttled = reply.kind === 'answered' && isThrottled(reply.errors);
    await this.budget.answered(store.id, reply.kind === 'answered' ? reply.cost : null, throttled);
    if (throttled) {
      // Nothing ran: the event waits for the budget, spending no attempt.
      return {
        kind: 'deferred',
        httpStatus: 200,
        errorClass: 'throttled',
        message: 'Throttled by the platform (GraphQL cost); waits for the budget.',
        until: await this.budget.retryAt(store.id),
      };
    }
    return handoffOutcome(store, reply);
  }

  async probe(store: StoreRow, timeoutMs: number): Promise<LinkCheck> {
    // A pause for a refused token: the token held then is not tried again.
    const link = await this.core.repo.links.get(store.id);
    const refused = link?.pauseCode === 'SVC_CREDENTIALS_REFUSED' && renewable(store) ? link.tokenGeneration : undefined;
    return this.look(store, timeoutMs, refused);
  }

  /** A live, authenticated look at the store's destination, reused for CHECK_TTL_MS (setup state, doctor). */
  check(store: StoreRow): Promise<LinkCheck> {
    const now = this.core.clock.now();
    const held = this.checks.get(store.id);
    if (held && now - held.at < CHECK_TTL_MS) return held.check;
    const check = this.look(store, this.core.config.handoff.timeoutMs);
    this.checks.set(store.id, { at: now, check });
    return check;
  }

  /**
   * Asks Shopify for a recurring app subscription on the store (a human chose the plan; see src/platform/shopify/billing-pages.ts):
   * the confirmation page the merchant approves it on, or why not. Nothing is charged until they do.
   */
  async subscribe(
    store: StoreRow,
    plan: string,
    priceUsd: number,
    returnUrl: string,
    test: boolean,
  ): Promise<{ ok: true; confirmationUrl: string; id: string } | { ok: false; message: string }> {
    const t = await this.credentials.token(store);
    if (!t.ok) return { ok: false, message: t.pause.message };
    const reply = await this.call(
      store,
      t.token.value,
      APP_SUBSCRIPTION_CREATE,
      subscriptionVariables(plan, priceUsd, returnUrl, test),
      this.core.config.handoff.timeoutMs,
    );
    if (reply.kind !== 'answered')
      return {
        ok: false,
        message: reply.kind === 'timeout' || reply.kind === 'network' ? 'Shopify could not be reached.' : `Shopify answered HTTP ${reply.status}.`,
      };
    const r = reply.data?.appSubscriptionCreate as
      | { userErrors?: { message?: string }[]; confirmationUrl?: unknown; appSubscription?: { id?: unknown } }
      | null
      | undefined;
    if (reply.errors.length || r?.userErrors?.length)
      return { ok: false, message: clip([...reply.errors, ...(r?.userErrors ?? [])].map((e) => e.message ?? 'error').join('; ')) };
    if (typeof r?.confirmationUrl !== 'string' || typeof r.appSubscription?.id !== 'string')
      return { ok: false, message: 'Shopify answered without a confirmation page.' };
    return { ok: true, confirmationUrl: r.confirmationUrl, id: r.appSubscription.id };
  }

  /**
   * What Shopify bills the store for now (currentAppInstallation.activeSubscriptions), asked with the store's own
   * token (renewed once when refused, as a handoff does). `refused`: Shopify no longer lets the app into the store;
   * `unavailable`: no answer to act on (down, throttled, unreadable), so whoever asked tries again later.
   */
  async activeSubscriptions(
    store: StoreRow,
  ): Promise<{ ok: true; subscriptions: ReportedSubscription[] } | { ok: false; kind: 'refused' | 'unavailable'; message: string }> {
    const timeoutMs = this.core.config.handoff.timeoutMs;
    let t = await this.credentials.token(store);
    if (!t.ok) return noToken(t);
    let reply = await this.call(store, t.token.value, ACTIVE_SUBSCRIPTIONS, undefined, timeoutMs);
    if (reply.kind === 'refused' && renewable(store)) {
      t = await this.credentials.token(store, t.token.generation);
      if (!t.ok) return noToken(t);
      reply = await this.call(store, t.token.value, ACTIVE_SUBSCRIPTIONS, undefined, timeoutMs);
    }
    if (reply.kind === 'refused') return { ok: false, kind: 'refused', message: refusedPause(store, reply.status).message };
    if (reply.kind !== 'answered') return { ok: false, kind: 'unavailable', message: `Shopify gave no answer (${reply.kind}).` };
    if (reply.errors.length) return { ok: false, kind: 'unavailable', message: clip(reply.errors.map((e) => e.message ?? 'error').join('; ')) };
    const list = (reply.data?.currentAppInstallation as { activeSubscriptions?: unknown } | null | undefined)?.activeSubscriptions;
    if (!Array.isArray(list)) return { ok: false, kind: 'unavailable', message: 'Shopify answered without the active subscriptions.' };
    const subscriptions = list.flatMap((s: { id?: unknown; name?: unknown; status?: unknown } | null) =>
      typeof s?.id === 'string' && typeof s.status === 'string'
        ? [{ id: s.id, name: typeof s.name === 'string' ? s.name : '', status: s.status.toUpperCase() }]
        : [],
    );
    return { ok: true, subscriptions };
  }

  /** The store's credential settings changed: its cached token and check no longer apply. */
  forget(storeId: string): void {
    this.credentials.forget(storeId);
    this.checks.delete(storeId);
  }

  private async look(store: StoreRow, timeoutMs: number, refused?: number): Promise<LinkCheck> {
    const at = () => this.core.clock.now();
    let t = await this.credentials.token(store, refused);
    if (!t.ok) return failedCheck(t, at());
    let reply = await this.call(store, t.token.value, SHOP_QUERY, undefined, timeoutMs);
    // A token obtained for this look (the one refused before was not reused) is not renewed again.
    if (reply.kind === 'refused' && refused === undefined && renewable(store)) {
      t = await this.credentials.token(store, t.token.generation);
      if (!t.ok) return failedCheck(t, at());
      reply = await this.call(store, t.token.value, SHOP_QUERY, undefined, timeoutMs);
    }
    const checkedAt = at();
    switch (reply.kind) {
      case 'answered': {
        if (isThrottled(reply.errors))
          return { result: 'throttled', httpStatus: 200, checkedAt, message: 'Shopify throttled the check (the store’s cost budget is spent for the moment).' };
        const shop = (reply.data?.shop as { id?: unknown } | undefined)?.id;
        if (typeof shop === 'string')
          return {
            result: 'ok',
            httpStatus: 200,
            checkedAt,
            message: `Shopify answered with the store’s identity (API ${reply.version ?? SHOPIFY_ADMIN_API_VERSION}).`,
          };
        return {
          result: 'unreachable',
          httpStatus: 200,
          checkedAt,
          message: `Shopify answered without the shop${reply.errors.length ? `: ${clip(reply.errors.map((e) => e.message ?? 'error').join('; '))}` : ''}.`,
        };
      }
      case 'refused': {
        const pause = refusedPause(store, reply.status);
        return { result: 'credentials_refused', httpStatus: reply.status, checkedAt, message: pause.message, pause };
      }
      case 'limited':
        return { result: 'throttled', httpStatus: reply.status, checkedAt, message: `Shopify answered HTTP ${reply.status} (rate limited).` };
      case 'timeout':
        return { result: 'unreachable', httpStatus: null, checkedAt, message: 'Shopify did not answer in time.' };
      case 'network':
        return { result: 'unreachable', httpStatus: null, checkedAt, message: 'Shopify could not be reached.' };
      default:
        return { result: 'unreachable', httpStatus: reply.status, checkedAt, message: `Shopify answered HTTP ${reply.status}.` };
    }
  }

  private async call(store: StoreRow, token: string, query: string, variables: Record<string, unknown> | undefined, timeoutMs: number): Promise<GraphqlReply> {
    const reply = await adminGraphql(graphqlUrl(store.shopDomain, this.core.config.shopifyAdminUrl), token, query, variables, timeoutMs);
    if ('version' in reply && reply.version) await this.noteVersion(store, reply.version);
    return reply;
  }

  /**
   * Shopify answers an unsupported version with the oldest one it supports: recorded when it changes (setup state
   * and doctor show it), and warned of when it is not the version hookrelay asked for.
   */
  private async noteVersion(store: StoreRow, version: string): Promise<void> {
    if (this.answered.get(store.id) === version) return;
    this.answered.set(store.id, version);
    if (version !== SHOPIFY_ADMIN_API_VERSION) {
      this.core.log.warn(
        `shopify: ${store.shopDomain} answered with Admin API ${version}, not ${SHOPIFY_ADMIN_API_VERSION}: Shopify no longer serves the version asked for ("falls forward"). Upgrade hookrelay.`,
      );
    }
    await this.core.repo.links.noteApiVersion(store.id, version, this.core.clock.now()).catch(() => undefined);
  }
}

/** No token for a read: refused when Shopify refused the app (or it was uninstalled), else unavailable for now. */
function noToken(t: Extract<TokenResult, { ok: false }>): { ok: false; kind: 'refused' | 'unavailable'; message: string } {
  const check = PAUSE_CODES[t.pause.code].check;
  return { ok: false, kind: check === 'credentials_refused' || check === 'app_uninstalled' ? 'refused' : 'unavailable', message: t.pause.message };
}

function pausedOutcome(t: Extract<TokenResult, { ok: false }>, sent: boolean, httpStatus: number | null = t.httpStatus): HandoffOutcome {
  const errorClass = t.pause.reason === 'platform_unavailable' ? 'server_error' : 'credentials';
  return { kind: 'paused', httpStatus: sent ? httpStatus : null, errorClass, message: t.pause.message, sent, pause: t.pause };
}

function failedCheck(t: Extract<TokenResult, { ok: false }>, checkedAt: number): LinkCheck {
  return { result: PAUSE_CODES[t.pause.code].check, httpStatus: t.httpStatus, checkedAt, message: t.pause.message, pause: t.pause };
}

/** What a flowTriggerReceive reply that was not THROTTLED means for the event. */
function handoffOutcome(store: StoreRow, reply: GraphqlReply): HandoffOutcome {
  switch (reply.kind) {
    case 'refused': {
      const pause = refusedPause(store, reply.status);
      return { kind: 'paused', httpStatus: reply.status, errorClass: 'credentials', message: pause.message, sent: true, pause };
    }
    case 'limited':
      return { kind: 'retry', httpStatus: reply.status, errorClass: 'throttled', message: 'Throttled by the platform.', retryAfterMs: reply.retryAfterMs };
    case 'server_error':
      return { kind: 'retry', httpStatus: reply.status, errorClass: 'server_error', message: `Platform answered HTTP ${reply.status}.` };
    case 'http_error':
      return { kind: 'failed', httpStatus: reply.status, errorClass: 'http_error', message: `Platform answered HTTP ${reply.status}.` };
    case 'unreadable':
      return { kind: 'retry', httpStatus: reply.status, errorClass: 'server_error', message: 'Platform answered with an unreadable body.' };
    case 'timeout':
      return { kind: 'retry', httpStatus: null, errorClass: 'timeout', message: 'The platform did not answer in time.' };
    case 'network':
      return { kind: 'retry', httpStatus: null, errorClass: 'network', message: 'The platform could not be reached.' };
    case 'answered': {
      // THROTTLED never reaches here: send() defers it (no attempt spent).
      if (reply.errors.length)
        return { kind: 'failed', httpStatus: 200, errorClass: 'user_errors', message: clip(reply.errors.map((e) => e.message ?? 'error').join('; ')) };
      const result = reply.data?.flowTriggerReceive as { userErrors?: { field?: string[] | null; message?: string }[] } | null | undefined;
      const userErrors = result?.userErrors;
      if (!Array.isArray(userErrors))
        return { kind: 'retry', httpStatus: 200, errorClass: 'server_error', message: 'Platform reply lacked flowTriggerReceive.' };
      if (userErrors.length) {
        const text = userErrors.map((u) => `${(u.field ?? []).join('.') || 'payload'}: ${u.message ?? ''}`).join('; ');
        return { kind: 'failed', httpStatus: 200, errorClass: 'user_errors', message: clip(text) };
      }
      return { kind: 'delivered', httpStatus: 200 };
    }
  }
}

const instances = new WeakMap<object, ShopifyPlatform>();

/** The runtime's one Shopify platform (keyed by its storage handle): the worker, setup state and doctor share it. */
export function shopifyPlatform(core: PlatformCore): ShopifyPlatform {
  let p = instances.get(core.repo);
  if (!p) instances.set(core.repo, (p = new ShopifyPlatform(core)));
  return p;
}
