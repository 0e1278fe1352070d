/** Agent grants, written once for both dialects over the thin runner (db/runner.ts). */
import type { TenantStore } from '../repo.ts';
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { GrantRow } from '../types.ts';

const grants = tableRows<GrantRow>(s.grants);

type Grants = Pick<TenantStore, 'insertGrant' | 'getGrant' | 'getGrantByTokenHash' | 'listGrants' | 'revokeGrant'>;

export function grantStore(sql: SqlRunner): Grants {
  const byId = (id: string) => first<GrantRow>(sql, `SELECT ${grants.select} FROM grants WHERE id = ?`, [id]);
  return {
    insertGrant: async (row) => {
      const insert = grants.insert(row);
      await sql.run(insert.sql, insert.params);
    },
    getGrant: byId,
    getGrantByTokenHash: (tokenHash) => first<GrantRow>(sql, `SELECT ${grants.select} FROM grants WHERE token_hash = ?`, [tokenHash]),
    listGrants: (storeId) =>
      storeId
        ? sql.all<GrantRow>(`SELECT ${grants.select} FROM grants WHERE store_id = ? ORDER BY id`, [storeId])
        : sql.all<GrantRow>(`SELECT ${grants.select} FROM grants ORDER BY id`, []),
    /** Revoked once: a second revocation keeps the first time. Null for an unknown grant. */
    revokeGrant: async (id, at) => {
      await sql.run('UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [at, id]);
      return byId(id);
    },
  };
}
