/** Inbound endpoints and their config versions, written once for both dialects over the thin runner (db/runner.ts). */
import type { EndpointStore } from '../repo.ts';
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { EndpointRow } from '../types.ts';

const endpoints = tableRows<EndpointRow>(s.endpoints);

export function endpointStore(sql: SqlRunner): EndpointStore {
  /** A config version's snapshot; `keepStored`: a version already stored stays (an update written again). */
  const version = (row: EndpointRow, config: unknown, at: number, keepStored: boolean) => ({
    sql: `INSERT INTO endpoint_versions (endpoint_id, version, config, created_at) VALUES (?, ?, ?, ?)${keepStored ? ' ON CONFLICT DO NOTHING' : ''}`,
    params: [row.id, row.configVersion, JSON.stringify(config), at],
  });
  return {
    insertEndpoint: async (row, config) => {
      await sql.batch([endpoints.insert(row), version(row, config, row.createdAt, false)]);
    },
    getEndpoint: (storeId, id) => first<EndpointRow>(sql, `SELECT ${endpoints.select} FROM endpoints WHERE store_id = ? AND id = ?`, [storeId, id]),
    getEndpointById: (id) => first<EndpointRow>(sql, `SELECT ${endpoints.select} FROM endpoints WHERE id = ?`, [id]),
    listEndpoints: (storeId) => sql.all<EndpointRow>(`SELECT ${endpoints.select} FROM endpoints WHERE store_id = ? ORDER BY id`, [storeId]),
    updateEndpoint: async (row, config) => {
      const set = endpoints.set(row);
      await sql.batch([{ sql: `UPDATE endpoints SET ${set.sql} WHERE id = ?`, params: [...set.params, row.id] }, version(row, config, row.updatedAt, true)]);
    },
  };
}
