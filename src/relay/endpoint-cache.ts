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

export class EndpointCache {
  private readonly map = new Map<string, LiveEndpoint | null>();

  constructor(
    private readonly core: CoreWith<Pick<EndpointStore, 'getEndpointById'> & Pick<TenantStore, 'getStore'>>,
    /** Entries older than this are re-read, so changes made by another process show up. */
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  async get(id: string): Promise<LiveEndpoint | null> {
    const now = this.core.clock.now();
    const hit = this.map.get(id);
    if (hit !== undefined && (hit === null ? false : now - hit.loadedAt < this.ttlMs)) return hit;
    const row = await this.core.repo.getEndpointById(id);
    const store = row ? await this.core.repo.getStore(row.storeId) : null;
    const live = row && store ? this.compile(row, store, now) : null;
    if (this.map.size >= this.maxEntries) this.map.clear();
    if (live) this.map.set(id, live);
    return live;
  }

  /** Call after any change to an endpoint. */
  invalidate(id: string): void {
    this.map.delete(id);
  }

  private compile(row: EndpointRow, store: StoreRow, now: number): LiveEndpoint {
    const box = this.core.box;
    return {
      row,
      store,
      secret: box.open(row.secretSealed),
      previousSecret: row.previousSecretSealed ? box.open(row.previousSecretSealed) : null,
      previousSecretExpiresAt: row.previousSecretExpiresAt,
      requiredPaths: JSON.parse(row.requiredPaths) as string[],
      loadedAt: now,
    };
  }
}
