/**
 * A Shopify store's link as reads show it: the credentials (mode and variable NAMES, token times; never a value),
 * the cost budget, the API version asked for and the one that answered, and a live check with the current
 * credentials. Setup state, `hookrelay store show` and the reliability reads take it through the registry.
 */
import type { PlatformLinkRow } from '../../../db/areas/platform-links.ts';
import type { StoreRow } from '../../../db/types.ts';
import type { PlatformLinkState } from '../../contract/platform-schemas.ts';
import { iso, isoOrNull } from '../../lib/clock.ts';
import type { PlatformCore } from '../types.ts';
import { projectedBudget } from './budget.ts';
import { describeCredentials } from './credentials.ts';
import { shopifyPlatform } from './platform.ts';
import { apiVersionStatus } from './version.ts';

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
 * The live link of a store handing off to Shopify: one authenticated `shop` query with the current credentials
 * (shared for 10 s), what the credentials are, and the API version's window.
 */
export async function platformLinkState(core: PlatformCore, store: StoreRow, link: PlatformLinkRow | null): Promise<PlatformLinkState> {
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
