/** Keeps endpoint configuration and decrypted secrets in memory so ingest does not touch the disk for them. */
import type { EndpointStore, TenantStore } from '../../db/repo.ts';
import type { EndpointRow, StoreRow } from '../../db/types.ts';
import type { CoreWith } from '../core.ts';

export interface LiveEndpoint {
  row: EndpointRow;
  /** The owning store as of `loadedAt` (plan and period for the accepted-events meter). */
  store: StoreRow;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
  requiredPaths: string[];
  loadedAt: number;
}

type Lookups = CoreWith<Pick<EndpointStore, 'getEndpointById'> & Pick<TenantStore, 'getStore'>>;

/**
 * An endpoint and its store, read from storage at most once per `ttlMs` each; `make` shapes what is kept (the
 * inbound path's compiled endpoint, or just the rows for the relay thread's handoff).
 */
export class EndpointRowsCache<T extends { loadedAt: number }> {
  private readonly map = new Map<string, T>();

  constructor(
    private readonly core: Lookups,
    private readonly make: (row: EndpointRow, store: StoreRow, now: number) => T,
    /** Entries older than this are re-read, so changes made by another process show up. */
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  /**
   * The entry when it is held and fresh, without a promise: the inbound path asks this first, and awaits get only on
   * a miss (an async call answers even a hit with a promise and a turn of the microtask queue).
   */
  cached(id: string): T | undefined {
    const hit = this.map.get(id);
    return hit !== undefined && this.core.clock.now() - hit.loadedAt < this.ttlMs ? hit : undefined;
  }

  async get(id: string): Promise<T | null> {
    const now = this.core.clock.now();
    const hit = this.map.get(id);
    if (hit !== undefined && now - hit.loadedAt < this.ttlMs) return hit;
    const row = await this.core.repo.getEndpointById(id);
    const store = row ? await this.core.repo.getStore(row.storeId) : null;
    const live = row && store ? this.make(row, store, now) : null;
    // Kept in load order: full, the entry loaded longest ago goes (the likeliest to be stale anyway), never the
    // whole map (with as many endpoints as entries, every reload would empty it, and every receipt read storage).
    this.map.delete(id);
    if (live) {
      if (this.map.size >= this.maxEntries) this.map.delete(this.map.keys().next().value!);
      this.map.set(id, live);
    }
    return live;
  }

  /** Call after any change to an endpoint. */
  invalidate(id: string): void {
    this.map.delete(id);
  }
}

/** The inbound path's cache: the endpoint with its secrets opened and its required paths parsed. */
export class EndpointCache extends EndpointRowsCache<LiveEndpoint> {
  constructor(core: Lookups, ttlMs?: number, maxEntries?: number) {
    const box = core.box;
    super(
      core,
      (row, store, now) => ({
        row,
        store,
        secret: box.open(row.secretSealed),
        previousSecret: row.previousSecretSealed ? box.open(row.previousSecretSealed) : null,
        previousSecretExpiresAt: row.previousSecretExpiresAt,
        requiredPaths: JSON.parse(row.requiredPaths) as string[],
        loadedAt: now,
      }),
      ttlMs,
      maxEntries,
    );
  }
}
