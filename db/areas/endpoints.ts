/**
 * Inbound endpoints and their config versions, written once for both dialects over the thin runner (db/runner.ts):
 * the rows, and an intent's compare-and-set writes of them (edit, rotate, archive, delete), each from the state its
 * preview showed, committed with the intent's completion (IntentStore.executeIntent).
 */
import type { EndpointStore } from '../repo.ts';
import { first, tableRows, type SqlRunner, type Write } from '../runner.ts';
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

/** A new config version of an endpoint (an edit): only the fields an edit may change, from the version it showed. */
export function editEndpoint(row: EndpointRow, fromVersion: number, snapshot: unknown): Write[] {
  return [
    {
      sql: `UPDATE endpoints SET name = ?, trigger_variant = ?, resource_id_path = ?, related_resource_id_path = ?, required_paths = ?,
              fields = ?, include_body = ?, source_label = ?, event_type = ?, header_name = ?, expected_every_ms = ?, config_version = ?, updated_at = ?
            WHERE id = ? AND store_id = ? AND config_version = ? AND status = 'active'`,
      params: [
        row.name,
        row.triggerVariant,
        row.resourceIdPath,
        row.relatedResourceIdPath,
        row.requiredPaths,
        row.fields,
        row.includeBody,
        row.sourceLabel,
        row.eventType,
        row.headerName,
        row.expectedEveryMs,
        row.configVersion,
        row.updatedAt,
        row.id,
        row.storeId,
        fromVersion,
      ],
      mustChange: true,
    },
    {
      sql: 'INSERT INTO endpoint_versions (endpoint_id, version, config, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
      params: [row.id, row.configVersion, JSON.stringify(snapshot), row.updatedAt],
    },
  ];
}

/** A new secret, from the secret the rotation showed (the sealed value it read: each sealing is unique). */
export function rotateSecret(
  e: Pick<EndpointRow, 'id' | 'storeId' | 'secretSealed' | 'secretLast4' | 'previousSecretSealed' | 'previousSecretExpiresAt' | 'updatedAt'>,
  fromSealed: string,
): Write {
  return {
    sql: `UPDATE endpoints SET secret_sealed = ?, secret_last4 = ?, previous_secret_sealed = ?, previous_secret_expires_at = ?, updated_at = ?
          WHERE id = ? AND store_id = ? AND secret_sealed = ? AND status = 'active'`,
    params: [e.secretSealed, e.secretLast4, e.previousSecretSealed, e.previousSecretExpiresAt, e.updatedAt, e.id, e.storeId, fromSealed],
    mustChange: true,
  };
}

/** Archives an active endpoint. */
export function archiveEndpoint(storeId: string, id: string, at: number): Write {
  return {
    sql: "UPDATE endpoints SET status = 'archived', updated_at = ? WHERE id = ? AND store_id = ? AND status = 'active'",
    params: [at, id, storeId],
    mustChange: true,
  };
}

/** Deletes an archived endpoint and its versions; its receipts stay. */
export function deleteArchivedEndpoint(storeId: string, id: string): Write[] {
  return [
    { sql: 'DELETE FROM endpoint_versions WHERE endpoint_id = ? AND endpoint_id IN (SELECT id FROM endpoints WHERE store_id = ?)', params: [id, storeId] },
    { sql: "DELETE FROM endpoints WHERE id = ? AND store_id = ? AND status = 'archived'", params: [id, storeId], mustChange: true },
  ];
}
