/**
 * The store's link to its platform as reads show it: the handoff (active, or paused with why and what to do),
 * the credentials (mode and variable NAMES, token times; never a value), the API version asked for and the one
 * that answered, and a live check with the current credentials. Setup state, event detail, the reliability
 * reads and `hookrelay store show` all take it from here.
 */
import type { PlatformLinkRow, PlatformLinkStore } from '../../db/platform-links.ts';
import type { StoreRow } from '../../db/types.ts';
import { PAUSE_CODES, type PauseCode, type PauseReason, pauseAction } from '../contract/platform.ts';
import type { HandoffState } from '../contract/platform-schemas.ts';
import type { CoreWith } from '../core.ts';
import { iso, isoOrNull } from '../lib/clock.ts';
import { describeCredentials } from '../platform/shopify/credentials.ts';
import { projectedBudget } from '../platform/shopify/budget.ts';
import { shopifyPlatform } from '../platform/shopify/platform.ts';
import { apiVersionStatus } from '../platform/shopify/version.ts';

/**
 * The store's handoff: `active`, or `paused` with its stable code, since when, the next probe and the action that
 * clears it (an install link names the box's public URL and the store's shop).
 */
export function handoffState(link: PlatformLinkRow | null, where: { publicUrl: string; shopDomain: string }): HandoffState {
  if (!link?.pauseReason)
    return { state: 'active', reason: null, code: null, message: null, since: null, nextProbeAt: null, probes: 0, recommendedAction: null };
  const code = (Object.hasOwn(PAUSE_CODES, link.pauseCode ?? '') ? link.pauseCode : null) as PauseCode | null;
  return {
    state: 'paused',
    reason: link.pauseReason as PauseReason,
    code,
    message: link.pauseMessage,
    since: isoOrNull(link.pausedSince),
    nextProbeAt: isoOrNull(link.nextProbeAt),
    probes: link.probes,
    recommendedAction: code ? pauseAction(code, where) : null,
  };
}

/** The credentials as shown: mode, variable NAMES and whether they are set here, token times. */
export function credentialsState(store: StoreRow, link: PlatformLinkRow | null, env: (name: string) => string | undefined) {
  const c = describeCredentials(store, link, env);
  return {
    ...c,
    token: c.token && {
      obtainedAt: isoOrNull(c.token.obtainedAt),
      expiresAt: isoOrNull(c.token.expiresAt),
      lastRenewalAt: isoOrNull(c.token.lastRenewalAt),
      lastRenewalError: c.token.lastRenewalError,
    },
  };
}

/**
 * The live link of a store handing off to Shopify (null for the log destination): one authenticated `shop` query
 * with the current credentials (shared for 10 s), what the credentials are, and the API version's window.
 */
export async function platformLinkState(core: CoreWith<{ links: PlatformLinkStore }>, store: StoreRow, link: PlatformLinkRow | null) {
  if (store.destination !== 'shopify') return null;
  const check = await shopifyPlatform(core).check(store);
  // The check may have obtained a token or seen a new answered version: read the link after it.
  const after = (await core.repo.links.get(store.id)) ?? link;
  return {
    apiVersion: apiVersionStatus(core.clock.now()),
    answeredApiVersion: after?.answeredApiVersion ?? null,
    answeredApiVersionAt: isoOrNull(after?.answeredApiVersionAt),
    credentials: credentialsState(store, after, core.config.env),
    budget: budgetState(after, core.clock.now()),
    check: { result: check.result, message: check.message, httpStatus: check.httpStatus, checkedAt: iso(check.checkedAt) },
  };
}

/** The store's cost budget as modelled (projected to `now`), and until when events wait for it; null until reported. */
export function budgetState(link: PlatformLinkRow | null, now: number) {
  const budget = projectedBudget(link, now);
  if (!link || !budget) return null;
  return {
    maximum: budget.max,
    available: Math.floor(budget.available),
    restoreRate: budget.rate,
    costPerHandoff: budget.cost,
    pacedUntil: link.budgetHorizon != null && link.budgetHorizon > now ? iso(link.budgetHorizon) : null,
  };
}
