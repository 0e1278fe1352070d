/** Held events back into the handoff queue once their store has capacity again (a new period or a bigger plan). */
import type { HandoffQueue, TenantStore } from '../../db/repo.ts';
import { acceptedCapacity } from '../contract/plans.ts';
import type { CoreWith } from '../core.ts';

/** Moves held events back into the queue, oldest first, as far as each store's capacity now allows. Returns how many. */
export async function releaseHeld(core: CoreWith<Pick<TenantStore, 'listStores'> & Pick<HandoffQueue, 'releaseHeld'>>): Promise<number> {
  const now = core.clock.now();
  let released = 0;
  for (const store of await core.repo.listStores()) {
    const n = await core.repo.releaseHeld(store.id, acceptedCapacity(store, now), now);
    if (n) core.log.info(`released ${n} held events of ${store.shopDomain} into the handoff queue`);
    released += n;
  }
  return released;
}
