/** Stores (tenants), written once for both dialects over the thin runner (db/runner.ts). */
import type { TenantStore } from '../repo.ts';
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { StoreRow } from '../types.ts';

const stores = tableRows<StoreRow>(s.stores);

type Tenants = Pick<TenantStore, 'getStore' | 'updateStore' | 'getStoreByShop' | 'listStores' | 'insertStore'>;

export function tenants(sql: SqlRunner): Tenants {
  return {
    getStore: (id) => first<StoreRow>(sql, `SELECT ${stores.select} FROM stores WHERE id = ?`, [id]),
    getStoreByShop: (shopDomain) => first<StoreRow>(sql, `SELECT ${stores.select} FROM stores WHERE shop_domain = ?`, [shopDomain]),
    listStores: () => sql.all<StoreRow>(`SELECT ${stores.select} FROM stores ORDER BY id`, []),
    insertStore: async (row) => {
      const insert = stores.insert(row);
      await sql.run(insert.sql, insert.params);
    },
    updateStore: async (row) => {
      // The mutable fields only: id, shop domain and creation stay as they were.
      const { plan, billingStatus, destination, adminTokenEnv, credentialMode, clientId, clientSecretEnv, uninstalledAt, updatedAt } = row;
      const set = stores.set({ plan, billingStatus, destination, adminTokenEnv, credentialMode, clientId, clientSecretEnv, uninstalledAt, updatedAt });
      await sql.run(`UPDATE stores SET ${set.sql} WHERE id = ?`, [...set.params, row.id]);
    },
  };
}
