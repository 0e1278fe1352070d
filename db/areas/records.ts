/**
 * Records (diagnostics shares, support, feature and expansion requests, customer data requests), written once for
 * both dialects over the thin runner (db/runner.ts): a store's records, the operator's reads across stores (with
 * the shop that filed each), and a record written with an intent's change (insertRecord).
 */
import type { RecordStore } from '../repo.ts';
import { first, marks, tableRows, type SqlRunner, type Write } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { RecordRow } from '../types.ts';

const records = tableRows<RecordRow>(s.records);

const COLUMNS =
  'r.id AS "id", r.store_id AS "storeId", r.kind AS "kind", r.body AS "body", r.created_at AS "createdAt", r.expires_at AS "expiresAt", s.shop_domain AS "shopDomain"';
const FROM = 'FROM records r LEFT JOIN stores s ON s.id = r.store_id';

export function recordStore(sql: SqlRunner): RecordStore {
  return {
    insertRecord: async (row) => {
      const insert = records.insert(row);
      await sql.run(insert.sql, insert.params);
    },
    getRecord: (storeId, kind, id) =>
      first<RecordRow>(sql, `SELECT ${records.select} FROM records WHERE store_id = ? AND kind = ? AND id = ?`, [storeId, kind, id]),
    listRecords: (f) => {
      const where = [`r.kind IN (${marks(f.kinds.length)})`];
      const params: unknown[] = [...f.kinds];
      if (f.storeId !== undefined) {
        where.push('r.store_id = ?');
        params.push(f.storeId);
      }
      if (f.since !== undefined) {
        where.push('r.created_at >= ?');
        params.push(f.since);
      }
      params.push(f.limit);
      return sql.all(`SELECT ${COLUMNS} ${FROM} WHERE ${where.join(' AND ')} ORDER BY r.created_at DESC, r.id DESC LIMIT ?`, params);
    },
    findRecord: (id, kinds) => first(sql, `SELECT ${COLUMNS} ${FROM} WHERE r.id = ? AND r.kind IN (${marks(kinds.length)})`, [id, ...kinds]),
    countRecords: (storeId, kinds) =>
      sql.all(`SELECT kind AS "kind", COUNT(*) AS "n" FROM records WHERE store_id = ? AND kind IN (${marks(kinds.length)}) GROUP BY kind`, [storeId, ...kinds]),
  };
}

/** A diagnostics share or support request. */
export function insertRecord(r: RecordRow): Write {
  return {
    sql: 'INSERT INTO records (id, store_id, kind, body, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    params: [r.id, r.storeId, r.kind, r.body, r.createdAt, r.expiresAt],
  };
}
