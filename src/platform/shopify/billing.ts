/**
 * Billing through Shopify, for deployments that charge (HOOKRELAY_BILLING): the recurring app subscription a
 * merchant approves in their admin (`appSubscriptionCreate` returns the confirmation page; the app never approves),
 * and the signed links by which only the merchant — who opened the app from Shopify — can start one.
 */
import type { BillingMode } from '../../contract/platform.ts';
import { hmacHex, verifyHmacHex } from '../../lib/crypto.ts';

/** HOOKRELAY_BILLING: `off` (default, a self-hosted box), `shopify`, or `shopify-test` (Shopify's test charges). */
export function billingMode(env: (name: string) => string | undefined): BillingMode {
  const v = env('HOOKRELAY_BILLING')?.trim().toLowerCase();
  return v === 'shopify' || v === 'shopify-test' ? v : 'off';
}

export const APP_SUBSCRIPTION_CREATE = `mutation appSubscriptionCreate($name: String!, $lineItems: [AppSubscriptionLineItemInput!]!, $returnUrl: URL!, $test: Boolean) {
  appSubscriptionCreate(name: $name, returnUrl: $returnUrl, lineItems: $lineItems, test: $test) {
    userErrors { field message }
    confirmationUrl
    appSubscription { id status }
  }
}`;

/**
 * What Shopify bills the store for now: the app installation's active recurring subscriptions (the token says
 * which app and which shop). app_subscriptions/update is acted on by reading this back, never by its body alone.
 */
export const ACTIVE_SUBSCRIPTIONS = 'query hookrelayBilling { currentAppInstallation { activeSubscriptions { id name status } } }';

/** One subscription as activeSubscriptions reports it. */
export interface ReportedSubscription {
  id: string;
  name: string;
  status: string;
}

const PREFIX = 'hookrelay ';

/** The subscription's name says its plan: `hookrelay growth`. */
const subscriptionName = (plan: string) => `${PREFIX}${plan}`;

export function planOfSubscription(name: string | null | undefined): string | null {
  return name?.startsWith(PREFIX) ? name.slice(PREFIX.length) : null;
}

/** The variables of an appSubscriptionCreate for a plan at `priceUsd` every 30 days. */
export function subscriptionVariables(plan: string, priceUsd: number, returnUrl: string, test: boolean) {
  return {
    name: subscriptionName(plan),
    returnUrl,
    test,
    lineItems: [{ plan: { appRecurringPricingDetails: { price: { amount: priceUsd, currencyCode: 'USD' }, interval: 'EVERY_30_DAYS' } } }],
  };
}

/** How long a plan's choose link, shown to the merchant, stays good. */
export const CHOICE_TTL_MS = 15 * 60_000;

const choiceText = (shop: string, plan: string, expires: number) => `hookrelay-subscribe\n${shop}\n${plan}\n${expires}`;

/** The signature of a choose link: HMAC-SHA256 (hex) of the shop, plan and expiry with the app's client secret. */
export function signChoice(secret: string, shop: string, plan: string, expires: number): string {
  return hmacHex(secret, choiceText(shop, plan, expires));
}

/** Whether a choose link is one this app made, for this shop and plan, and still good at `now`. Constant time. */
export function choiceValid(secret: string, shop: string, plan: string, expires: number, sig: string, now: number): boolean {
  return Number.isFinite(expires) && expires >= now && verifyHmacHex(secret, choiceText(shop, plan, expires), sig);
}
