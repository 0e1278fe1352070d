/**
 * Intents (preview → confirm → execute), written once for both dialects over the thin runner (db/runner.ts): the
 * rows, and the journal's compare-and-set moves. An execute's change and the intent's completion commit as one
 * batch (one transaction), so an intent still `executing` has changed nothing; a dead executor's intents are
 * reopened. Which change an intent makes and when it is stale is decided above (src/ops/intents.ts and each kind);
 * this only writes, by compare-and-set.
 */
import type { Instance, IntentStore } from '../repo.ts';
import { first, tableRows, type SqlRunner, type Write } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { IntentRow } from '../types.ts';

const intents = tableRows<IntentRow>(s.intents);

/**
 * Completes an intent with its result, put last in the batch so the result can count the rows the change wrote (a
 * bulk replay's queued events). It is the batch's fence: only the executor holding the claim changes the row, so an
 * executor whose claim was taken over (it was thought dead) rolls its change back with it.
 */
function finishIntent(id: string, executor: string, result: (changes: number[]) => string, at: number): Write {
  return {
    sql: "UPDATE intents SET state = 'executed', result = ?, updated_at = ?, confirmation_hash = NULL WHERE id = ? AND state = 'executing' AND executor = ?",
    params: (changes) => [result(changes), at, id, executor],
    mustChange: true,
  };
}

export function intentStore(sql: SqlRunner, instance: Instance): IntentStore {
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
    claimIntent: async (id, from, to) => {
      const fence = from.state === 'executing' ? ' AND executor = ?' : '';
      return (
        (await sql.run(`UPDATE intents SET state = 'executing', executor = ?, execute_key = ?, updated_at = ? WHERE id = ? AND state = ?${fence}`, [
          to.executor,
          to.key,
          to.at,
          id,
          from.state,
          ...(from.state === 'executing' ? [from.executor] : []),
        ])) > 0
      );
    },
    executeIntent: (id, executor, writes, result, at) => sql.batch([...writes, finishIntent(id, executor, result, at)]),
    endIntent: async (id, executor, state, refusal, at) =>
      (await sql.run(
        "UPDATE intents SET state = ?, refusal = ?, updated_at = ?, confirmation_hash = NULL WHERE id = ? AND state = 'executing' AND executor = ?",
        [state, refusal, at, id, executor],
      )) > 0,
    reopenIntent: async (id, executor, at) =>
      (await sql.run(
        "UPDATE intents SET state = 'previewed', executor = NULL, execute_key = NULL, updated_at = ? WHERE id = ? AND state = 'executing' AND executor = ?",
        [at, id, executor],
      )) > 0,
    reopenDeadExecutions: async (at) => {
      const executors = await sql.all<{ executor: string | null }>("SELECT DISTINCT executor FROM intents WHERE state = 'executing'", []);
      let n = 0;
      for (const { executor } of executors) {
        if (executor !== null && (await instance.alive(executor))) continue;
        n += await sql.run(
          "UPDATE intents SET state = 'previewed', executor = NULL, execute_key = NULL, updated_at = ? WHERE state = 'executing' AND COALESCE(executor, '') = ?",
          [at, executor ?? ''],
        );
      }
      return n;
    },
  };
}
