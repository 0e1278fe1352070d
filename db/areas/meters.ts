/**
 * Plan meters per store and 30-day period, written once for both dialects over the thin runner (db/runner.ts): the
 * counts, and a unit counted with the change it pays for (countUsage) in an intent's batch.
 */
import type { UsageStore, UsageUnits } from '../repo.ts';
import type { SqlRunner, Write } from '../runner.ts';

export function meterStore(sql: SqlRunner): UsageStore {
  return {
    addUsage: async (storeId, meter, periodStart, n) => {
      const add = addUsage({ storeId, meter, periodStart, n });
      await sql.run(add.sql, add.params, { relaxed: true });
    },
    /** The period's meters that counted anything (PostgreSQL makes a row at 0 to lock it before counting). */
    getUsage: async (storeId, periodStart) => {
      const rows = await sql.all<{ meter: string; used: number }>(
        'SELECT meter, used FROM usage_counters WHERE store_id = ? AND period_start = ? AND used > 0',
        [storeId, periodStart],
      );
      return Object.fromEntries(rows.map((r) => [r.meter, r.used]));
    },
  };
}

/** `n` units on a plan meter, with no cap: the write a call's audit row carries with it (db/areas/audit.ts). */
export function addUsage(u: UsageUnits): { sql: string; params: unknown[] } {
  return {
    sql: `INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES (?, ?, ?, ?)
         ON CONFLICT (store_id, meter, period_start) DO UPDATE SET used = usage_counters.used + excluded.used`,
    params: [u.storeId, u.meter, u.periodStart, u.n],
  };
}

/**
 * One unit on a plan meter, counted with the change it pays for. With a `cap`, the count and the check are one
 * step: the row made at 0 when missing, then raised only while below the cap (a compare-and-set: at the cap it
 * changes nothing and the batch, the change with it, rolls back). PostgreSQL's UPDATE waits for a concurrent
 * count's commit and checks the cap against what it wrote, so executes on any number of instances stop at the cap.
 */
export function countUsage(storeId: string, meter: string, periodStart: number, cap: number | null = null): Write[] {
  if (cap === null) {
    return [
      {
        sql: `INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES (?, ?, ?, 1)
              ON CONFLICT (store_id, meter, period_start) DO UPDATE SET used = usage_counters.used + 1`,
        params: [storeId, meter, periodStart],
      },
    ];
  }
  return [
    {
      sql: 'INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES (?, ?, ?, 0) ON CONFLICT (store_id, meter, period_start) DO NOTHING',
      params: [storeId, meter, periodStart],
    },
    {
      sql: 'UPDATE usage_counters SET used = used + 1 WHERE store_id = ? AND meter = ? AND period_start = ? AND used < ?',
      params: [storeId, meter, periodStart, cap],
      mustChange: true,
    },
  ];
}
