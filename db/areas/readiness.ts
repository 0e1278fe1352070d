/** Flow's trigger readiness per store, written once for both dialects over the thin runner (db/runner.ts). */
import type { ReadinessStore } from '../repo.ts';
import { marks, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { TriggerReadinessRow } from '../types.ts';

const readiness = tableRows<TriggerReadinessRow>(s.triggerReadiness);

export function readinessStore(sql: SqlRunner): ReadinessStore {
  return {
    listTriggerReadiness: async (storeId) =>
      (await sql.all(`SELECT ${readiness.select} FROM trigger_readiness WHERE store_id = ?`, [storeId])).map(readiness.decode),
    readinessOfStores: async (storeIds) =>
      storeIds.length
        ? (await sql.all(`SELECT ${readiness.select} FROM trigger_readiness WHERE store_id IN (${marks(storeIds.length)})`, [...storeIds])).map(
            readiness.decode,
          )
        : [],
    setTriggerReadiness: async (row) => {
      await sql.run(
        `INSERT INTO trigger_readiness (store_id, handle, has_enabled_flow, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (store_id, handle) DO UPDATE SET has_enabled_flow = excluded.has_enabled_flow, updated_at = excluded.updated_at`,
        [row.storeId, row.handle, row.hasEnabledFlow, row.updatedAt],
      );
    },
  };
}
