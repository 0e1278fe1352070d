/** Held events back into the handoff queue once their store has capacity again (a new period or a bigger plan). */
import type { HandoffQueue, TenantStore } from '../../db/repo.ts';
import { acceptedCapacity } from '../contract/plans.ts';
import type { CoreWith } from '../core.ts';

/**
 * Moves held events back into the queue, oldest first, as far as each store's capacity now allows. Returns how
 * many. Only the stores holding events are read and written: the worker runs this every second, and a deployment
 * with thousands of stores, nearly all of them holding nothing, pays one statement for the pass, not a write
 * transaction per store.
 */
export async function releaseHeld(core: CoreWith<Pick<TenantStore, 'getStore'> & Pick<HandoffQueue, 'releaseHeld' | 'storesWithHeld'>>): Promise<number> {
  const now = core.clock.now();
  let released = 0;
  for (const id of await core.repo.storesWithHeld()) {
    const store = await core.repo.getStore(id);
    if (!store) continue;
    const n = await core.repo.releaseHeld(store.id, acceptedCapacity(store, now), now);
    if (n) core.log.info(`released ${n} held events of ${store.shopDomain} into the handoff queue`);
    released += n;
  }
  return released;
}
