/** Idempotency-Key claims and stored responses, written once for both dialects over the thin runner (db/runner.ts). */
import type { IdempotencyStore } from '../repo.ts';
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { IdempotencyRow } from '../types.ts';

const keys = tableRows<IdempotencyRow>(s.idempotencyKeys);
const COLUMNS = ['store_id', 'key', 'operation_id', 'request_hash', 'status', 'response', 'created_at', 'owner'] as const;

export function idempotencyStore(sql: SqlRunner): IdempotencyStore {
  const get = (storeId: string, key: string, since: number) =>
    first<IdempotencyRow>(sql, `SELECT ${keys.select} FROM idempotency_keys WHERE store_id = ? AND key = ? AND created_at >= ?`, [storeId, key, since]);
  return {
    getIdempotency: get,
    putIdempotency: async (row) => {
      await sql.run(
        `INSERT INTO idempotency_keys (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})
         ON CONFLICT (store_id, key) DO UPDATE SET ${COLUMNS.slice(2)
           .map((c) => `${c} = excluded.${c}`)
           .join(', ')}`,
        [row.storeId, row.key, row.operationId, row.requestHash, row.status, row.response, row.createdAt, row.owner ?? null],
      );
    },
    claimIdempotency: async (row, since, staleBefore) => {
      const claimed = await sql.all(
        `INSERT INTO idempotency_keys (${COLUMNS.join(', ')}) VALUES (?1, ?2, ?3, ?4, 0, '', ?5, ?8)
         ON CONFLICT (store_id, key) DO UPDATE SET operation_id = ?3, request_hash = ?4, status = 0, response = '', created_at = ?5, owner = ?8
           WHERE idempotency_keys.created_at < ?6 OR (idempotency_keys.status = 0 AND idempotency_keys.created_at < ?7)
         RETURNING key`,
        [row.storeId, row.key, row.operationId, row.requestHash, row.createdAt, since, staleBefore, row.owner ?? null],
      );
      return claimed.length ? null : await get(row.storeId, row.key, 0);
    },
    /** Takes over a pending claim whose holder is gone (`from`), for `to`. */
    takeOverIdempotency: async (storeId, key, from, to, at) =>
      (await sql.run("UPDATE idempotency_keys SET owner = ?, created_at = ? WHERE store_id = ? AND key = ? AND status = 0 AND COALESCE(owner, '') = ?", [
        to,
        at,
        storeId,
        key,
        from ?? '',
      ])) > 0,
    releaseIdempotency: async (storeId, key) => {
      await sql.run('DELETE FROM idempotency_keys WHERE store_id = ? AND key = ? AND status = 0', [storeId, key]);
    },
  };
}
