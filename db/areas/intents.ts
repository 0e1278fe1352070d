/** Intents (preview → confirm → execute), written once for both dialects over the thin runner (db/runner.ts). */
import type { IntentStore } from '../repo.ts';
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { IntentRow } from '../types.ts';

const intents = tableRows<IntentRow>(s.intents);

export function intentStore(sql: SqlRunner): IntentStore {
  return {
    insertIntent: async (row) => {
      const insert = intents.insert(row);
      await sql.run(insert.sql, insert.params);
    },
    getIntent: (storeId, id) => first<IntentRow>(sql, `SELECT ${intents.select} FROM intents WHERE store_id = ? AND id = ?`, [storeId, id]),
    /** Compare-and-set on the state: one of two racing transitions wins. */
    transitionIntent: async (id, fromState, patch) => {
      const set = intents.set(patch);
      return (await sql.run(`UPDATE intents SET ${set.sql} WHERE id = ? AND state = ?`, [...set.params, id, fromState])) === 1;
    },
  };
}
