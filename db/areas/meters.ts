/**
 * The operator's bookkeeping, written once for both dialects over the thin runner (db/runner.ts): plan meters per
 * store and 30-day period, Flow's trigger readiness, and records (diagnostics shares and requests).
 */
import type { ReadinessStore, RecordStore, UsageStore } from '../repo.ts';
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { RecordRow, TriggerReadinessRow } from '../types.ts';

const readiness = tableRows<TriggerReadinessRow>(s.triggerReadiness);
const records = tableRows<RecordRow>(s.records);

export function meterStore(sql: SqlRunner): UsageStore & ReadinessStore & RecordStore {
  return {
    addUsage: async (storeId, meter, periodStart, n) => {
      await sql.run(
        `INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES (?, ?, ?, ?)
         ON CONFLICT (store_id, meter, period_start) DO UPDATE SET used = usage_counters.used + excluded.used`,
        [storeId, meter, periodStart, n],
        { relaxed: true },
      );
    },
    /** The period's meters that counted anything (PostgreSQL makes a row at 0 to lock it before counting). */
    getUsage: async (storeId, periodStart) => {
      const rows = await sql.all<{ meter: string; used: number }>(
        'SELECT meter, used FROM usage_counters WHERE store_id = ? AND period_start = ? AND used > 0',
        [storeId, periodStart],
      );
      return Object.fromEntries(rows.map((r) => [r.meter, r.used]));
    },

    listTriggerReadiness: async (storeId) =>
      (await sql.all(`SELECT ${readiness.select} FROM trigger_readiness WHERE store_id = ?`, [storeId])).map(readiness.decode),
    setTriggerReadiness: async (row) => {
      await sql.run(
        `INSERT INTO trigger_readiness (store_id, handle, has_enabled_flow, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (store_id, handle) DO UPDATE SET has_enabled_flow = excluded.has_enabled_flow, updated_at = excluded.updated_at`,
        [row.storeId, row.handle, row.hasEnabledFlow, row.updatedAt],
      );
    },

    insertRecord: async (row) => {
      const insert = records.insert(row);
      await sql.run(insert.sql, insert.params);
    },
    getRecord: (storeId, kind, id) =>
      first<RecordRow>(sql, `SELECT ${records.select} FROM records WHERE store_id = ? AND kind = ? AND id = ?`, [storeId, kind, id]),
  };
}
