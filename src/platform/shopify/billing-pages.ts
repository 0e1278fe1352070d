/**
 * Billing through Shopify, for a deployment that charges (HOOKRELAY_BILLING=shopify or shopify-test). Only the
 * merchant starts a subscription: the app's page (GET /app, Shopify's signed launch, or the install's landing page)
 * shows the plans, each behind a choose link this app signed for that shop and plan (15 minutes); following one
 * asks Shopify for the subscription and sends the merchant to approve it in their admin. No agent grant can: the
 * agent API's billing handoff only reads and links. Shopify's app_subscriptions/update webhook then sets the
 * store's plan and billing status to what Shopify reports when asked back (never what the webhook's body says), and
 * the meters follow. With billing off nothing here is reachable.
 */
import type { StoreRow } from '../../../db/types.ts';
import { paidPlans } from '../../contract/plans.ts';
import type { Core } from '../../core.ts';
import type { PlanChoice } from '../types.ts';
import { appSecret, shopDomainOf, signedQueryProblem } from './app.ts';
import { billingMode, CHOICE_TTL_MS, choiceValid, planOfSubscription, signChoice } from './billing.ts';
import { shopifyPlatform } from './platform.ts';
import { escapeHtml as esc, htmlPage, publicLink, redirectTo } from '../../lib/web.ts';
import { installLink } from '../../contract/platform.ts';

/** The app's own pages (GET /app, where Shopify's admin opens the app, and the billing pages reached from it): Shopify's admin may frame them. */
const page = (status: number, title: string, paragraphs: string[]) => htmlPage(status, title, paragraphs, {}, 'shopify-admin');

/**
 * The plans a merchant may choose, each with its choose link this app signed for that shop and plan (15 minutes):
 * following it asks Shopify for the subscription and sends the merchant to approve it. Empty with billing off.
 */
export function planChoiceLinks(core: Core, shop: string): PlanChoice[] {
  const secret = appSecret(core.config.env);
  if (billingMode(core.config.env) === 'off' || !secret) return [];
  const expires = core.clock.now() + CHOICE_TTL_MS;
  return paidPlans().map((p) => {
    const q = new URLSearchParams({ shop, plan: p.plan, expires: String(expires), sig: signChoice(secret, shop, p.plan, expires) });
    return { ...p, href: publicLink(core.config.publicUrl, `/billing/subscribe?${q}`) };
  });
}

/** The plans as a merchant chooses them: one signed link each (HTML list items); empty with billing off. */
export function planChoices(core: Core, shop: string): string[] {
  return planChoiceLinks(core, shop).map(
    (p) =>
      `<a href="${esc(p.href)}">${esc(p.plan)}</a>: US$${p.priceUsd} every 30 days, ${p.acceptedEventsPer30Days.toLocaleString('en')} events, ${p.replayExecutions.toLocaleString('en')} replays`,
  );
}

export function createBilling(core: Core) {
  const off = () => page(404, 'Not here', ['This hookrelay does not bill through Shopify.']);

  /** GET /app: where Shopify sends the merchant who opens the app (signed like an install callback); the install when it is not installed. */
  async function app(req: Request): Promise<Response> {
    const q = new URL(req.url).searchParams;
    const secret = appSecret(core.config.env);
    const shop = shopDomainOf(q.get('shop'));
    if (!secret || !shop || signedQueryProblem(q, secret, core.clock.now())) {
      return page(401, 'Open hookrelay from your Shopify admin', [
        "This page shows your plan when you open the app from your store's admin (Apps → hookrelay).",
      ]);
    }
    const store = await core.repo.getStoreByShop(shop);
    // Opened from Shopify (the App Store, an install link) on a store it is not installed on: install it, as Shopify expects.
    if (!store || store.uninstalledAt != null) {
      return redirectTo(installLink({ publicUrl: core.config.publicUrl, shopDomain: shop }));
    }
    const choices = planChoices(core, shop);
    return page(200, `hookrelay on ${shop}`, [
      `Plan: <b>${esc(store.plan)}</b> (billing ${esc(store.billingStatus)}).`,
      ...(choices.length ? ['Choose a plan; you approve the charge in your Shopify admin:', `<ul>${choices.map((c) => `<li>${c}</li>`).join('')}</ul>`] : []),
    ]);
  }

  /** GET /billing/subscribe: a choose link followed; asks Shopify for the subscription and sends the merchant there. */
  async function subscribe(req: Request): Promise<Response> {
    const mode = billingMode(core.config.env);
    const secret = appSecret(core.config.env);
    if (mode === 'off' || !secret) return off();
    const q = new URL(req.url).searchParams;
    const shop = shopDomainOf(q.get('shop'));
    const plan = q.get('plan') ?? '';
    const price = paidPlans().find((p) => p.plan === plan)?.priceUsd;
    if (!shop || price == null || !choiceValid(secret, shop, plan, Number(q.get('expires')), q.get('sig') ?? '', core.clock.now())) {
      return page(401, 'This link is not valid', ['Open hookrelay from your Shopify admin again and choose the plan there.']);
    }
    const store = await core.repo.getStoreByShop(shop);
    if (!store || store.uninstalledAt != null)
      return page(404, 'hookrelay is not installed on this store', [`Install it: <code>/auth/install?shop=${esc(shop)}</code>.`]);
    const returnUrl = publicLink(core.config.publicUrl, `/billing/return?shop=${encodeURIComponent(shop)}`);
    const made = await shopifyPlatform(core).subscribe(store, plan, price, returnUrl, mode === 'shopify-test');
    if (!made.ok) {
      core.log.warn(`billing: no subscription for ${shop} (${plan}): ${made.message}`);
      return page(502, 'Shopify did not start the subscription', [esc(made.message)]);
    }
    // Recorded before the merchant can approve it: only subscriptions listed here ever move this store's plan. Not
    // recorded, the merchant is not sent on (the subscription stays pending at Shopify and expires unapproved).
    try {
      await core.repo.installs.recordSubscription(made.id, store.id, plan, core.clock.now());
    } catch {
      core.log.error(`billing: Shopify subscription ${made.id} for ${shop} could not be recorded; the merchant was asked to try again`);
      return page(503, 'Please try again', [
        'hookrelay could not record the subscription just now. Open hookrelay from your Shopify admin again and choose the plan.',
      ]);
    }
    core.log.info(`billing: ${shop} chose ${plan}; Shopify subscription ${made.id} awaits the merchant's approval`);
    return redirectTo(made.confirmationUrl);
  }

  /** GET /billing/return: Shopify sends the merchant back here after approving (or not). */
  async function returned(req: Request): Promise<Response> {
    if (billingMode(core.config.env) === 'off') return off();
    const shop = shopDomainOf(new URL(req.url).searchParams.get('shop')) ?? 'your store';
    return page(200, 'Thank you', [`Your plan on ${esc(shop)} changes as soon as Shopify confirms the subscription (usually within a minute).`]);
  }

  return { app, subscribe, returned };
}

/**
 * Shopify's app_subscriptions/update for `subscriptionId` on the (bound) store: the store's plan becomes what Shopify
 * bills it for now, read back with the store's own token (currentAppInstallation.activeSubscriptions), counting only
 * the subscriptions hookrelay created for this store (app_subscriptions) under the name it gave them. The body's
 * status and name are never used: a signed ACTIVE body sent again after a cancellation finds the subscription no
 * longer active, and the same bytes under another store's header name a subscription that store never had.
 *
 * ACTIVE (the newest, if several): its plan, billing active. FROZEN: its plan, billing frozen. None: a store on a
 * paid plan goes back to `free` (billing cancelled; its meters capped again, nothing held dropped); a free store stays.
 * Shopify not answering throws (code shopify_unconfirmed): the delivery is tried again later, nothing guessed. A
 * token Shopify refuses changes nothing (the app was uninstalled: app/uninstalled ends the plan). Returns the result
 * recorded with the delivery.
 */
export async function reconcileSubscription(core: Core, bound: StoreRow, subscriptionId: string): Promise<string> {
  // A box that does not bill made no subscription: its plans stay its operator's.
  if (billingMode(core.config.env) === 'off') return 'no change';
  const installs = core.repo.installs;
  const ours = await installs.subscriptionsOf(bound.id);
  if (!ours.some((s) => s.subscriptionId === subscriptionId))
    return `not acted on: the subscription is not one hookrelay created for store ${bound.id}; plan unchanged`;
  // Another change of the store's billing may land while Shopify is asked: then it is asked again, at most thrice.
  let store: StoreRow | null = bound;
  for (let attempt = 0; attempt < 3 && store; attempt++, store = await core.repo.getStore(bound.id)) {
    if (store.uninstalledAt != null) return `not acted on: store ${store.id} is uninstalled; plan unchanged`;
    const read = await shopifyPlatform(core).activeSubscriptions(store);
    if (!read.ok) {
      if (read.kind === 'refused') return `not applied: Shopify refused store ${store.id}'s token, so nothing it reports could be read; plan unchanged`;
      throw Object.assign(new Error('Shopify could not confirm the subscription'), { code: 'shopify_unconfirmed' });
    }
    const reported = new Map(read.subscriptions.map((s) => [s.id, s]));
    const sold = new Set(paidPlans().map((p) => p.plan));
    // Newest first; a subscription counts only under the name hookrelay gave it, for a plan this deployment sells.
    const billed = ours.flatMap((o) => {
      const r = reported.get(o.subscriptionId);
      return r && sold.has(o.plan) && planOfSubscription(r.name) === o.plan ? [{ plan: o.plan, status: r.status }] : [];
    });
    const active = billed.find((b) => b.status === 'ACTIVE') ?? billed.find((b) => b.status === 'FROZEN');
    const next = active
      ? { plan: active.plan, billingStatus: active.status === 'ACTIVE' ? 'active' : 'frozen' }
      : store.plan === 'free'
        ? { plan: store.plan, billingStatus: store.billingStatus }
        : { plan: 'free', billingStatus: 'cancelled' };
    const reports = active ? `Shopify reports ${active.plan} ${active.status}` : 'Shopify reports no subscription of hookrelay active';
    if (next.plan === store.plan && next.billingStatus === store.billingStatus)
      return `no change: ${reports}; plan ${store.plan}, billing ${store.billingStatus}`;
    if (await installs.setBilling(store.id, store, next, core.clock.now())) {
      core.log.info(`billing: ${store.shopDomain}: ${reports}: plan ${store.plan} -> ${next.plan}, billing ${next.billingStatus}`);
      return `${reports}: plan ${next.plan}, billing ${next.billingStatus}`;
    }
  }
  if (!store) return `not acted on: store ${bound.id} is gone`;
  throw Object.assign(new Error('the store billing kept changing'), { code: 'billing_changed' });
}

/**
 * An uninstall Shopify confirmed: it cancels the app's subscriptions with it, so a store on a paid plan goes back to
 * `free` (billing cancelled) and an install again starts there. Returns a note for the delivery's result ('' when
 * nothing changed, or the box does not bill).
 */
export async function endBilledPlan(core: Core, storeId: string, at: number): Promise<string> {
  if (billingMode(core.config.env) === 'off') return '';
  const store = await core.repo.getStore(storeId);
  if (!store || store.plan === 'free') return '';
  if (!(await core.repo.installs.setBilling(store.id, store, { plan: 'free', billingStatus: 'cancelled' }, at, false))) return '';
  return `; plan ${store.plan} -> free (Shopify cancels subscriptions on uninstall)`;
}
