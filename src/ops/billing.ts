/**
 * Billing through Shopify, for a deployment that charges (HOOKRELAY_BILLING=shopify or shopify-test). Only the
 * merchant starts a subscription: the app's page (GET /app, Shopify's signed launch, or the install's landing page)
 * shows the plans, each behind a choose link this app signed for that shop and plan (15 minutes); following one
 * asks Shopify for the subscription and sends the merchant to approve it in their admin. No agent grant can: the
 * agent API's billing handoff only reads and links. Shopify's app_subscriptions/update webhook then sets the
 * store's plan and billing status, and the meters follow. With billing off nothing here is reachable.
 */
import type { StoreRow } from '../../db/types.ts';
import { paidPlans } from '../contract/plans.ts';
import type { Core } from '../core.ts';
import { appSecret, shopDomainOf, signedQueryProblem } from '../platform/shopify/app.ts';
import { billingMode, CHOICE_TTL_MS, choiceValid, planOfSubscription, signChoice } from '../platform/shopify/billing.ts';
import { shopifyPlatform } from '../platform/shopify/platform.ts';
import { escapeHtml as esc, htmlPage as page, publicLink, redirectTo } from '../lib/web.ts';

/** The plans as a merchant chooses them: one signed link each (HTML list items); empty with billing off. */
export function planChoices(core: Core, shop: string): string[] {
  const secret = appSecret(core.config.env);
  if (billingMode(core.config.env) === 'off' || !secret) return [];
  const expires = core.clock.now() + CHOICE_TTL_MS;
  return paidPlans().map((p) => {
    const q = new URLSearchParams({ shop, plan: p.plan, expires: String(expires), sig: signChoice(secret, shop, p.plan, expires) });
    return `<a href="${esc(publicLink(core.config.publicUrl, `/billing/subscribe?${q}`))}">${esc(p.plan)}</a>: US$${p.priceUsd} every 30 days, ${p.acceptedEventsPer30Days.toLocaleString('en')} events, ${p.replayExecutions.toLocaleString('en')} replays`;
  });
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
      return redirectTo(publicLink(core.config.publicUrl, `/auth/install?shop=${encodeURIComponent(shop)}`));
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

export interface SubscriptionUpdate {
  /** The subscription's name (`hookrelay <plan>`), status (ACTIVE, CANCELLED, DECLINED, EXPIRED, FROZEN, PENDING) and id. */
  name: string | null;
  status: string;
  id: string | null;
}

/**
 * Shopify's app_subscriptions/update: ACTIVE sets the subscription's plan (billing active); CANCELLED and EXPIRED
 * bring the store back to `free` (its meters capped again; nothing held is dropped); FROZEN keeps the plan with
 * billing frozen; DECLINED and PENDING change nothing. Returns the store as changed, or null.
 */
export async function applySubscription(core: Core, shopDomain: string, sub: SubscriptionUpdate): Promise<StoreRow | null> {
  // A box that does not bill made no subscription: its plans stay its operator's.
  if (billingMode(core.config.env) === 'off') return null;
  const store = await core.repo.getStoreByShop(shopDomain);
  if (!store) return null;
  const status = sub.status.toUpperCase();
  const now = core.clock.now();
  let row: StoreRow | null = null;
  if (status === 'ACTIVE') {
    const plan = planOfSubscription(sub.name);
    // Only a plan this deployment sells (a name such as `hookrelay constructor` is nobody's plan).
    if (paidPlans().some((p) => p.plan === plan)) row = { ...store, plan: plan!, billingStatus: 'active', updatedAt: now };
  } else if (status === 'CANCELLED' || status === 'EXPIRED') {
    row = { ...store, plan: 'free', billingStatus: status.toLowerCase(), updatedAt: now };
  } else if (status === 'FROZEN') {
    row = { ...store, billingStatus: 'frozen', updatedAt: now };
  }
  if (!row) {
    core.log.info(`billing: ${shopDomain} subscription ${sub.id ?? ''} is ${status}; nothing to change`);
    return null;
  }
  await core.repo.updateStore(row);
  core.log.info(`billing: ${shopDomain} subscription ${sub.id ?? ''} ${status}: plan ${store.plan} -> ${row.plan}, billing ${row.billingStatus}`);
  return row;
}
