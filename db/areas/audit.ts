/** The audit log, written once for both dialects over the thin runner (db/runner.ts). */
import type { AuditLog, AuditReads, MeteredAudit } from '../repo.ts';
import { addUsage } from './meters.ts';
import { tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';
import type { AuditRow } from '../types.ts';

const audit = tableRows<AuditRow>(s.auditLog);

export function auditLog(sql: SqlRunner): AuditLog & AuditReads & MeteredAudit {
  return {
    insertAudit: async (row) => {
      const insert = audit.insert(row);
      await sql.run(insert.sql, insert.params, { relaxed: true });
    },
    /** One statement on PostgreSQL (the meter's upsert inside WITH), one transaction on SQLite: both or neither. */
    insertAuditMetered: async (row, usage) => {
      const insert = audit.insert(row);
      const add = addUsage(usage);
      if (sql.dialect.insertInWith) await sql.run(`WITH counted AS (${add.sql}) ${insert.sql}`, [...add.params, ...insert.params]);
      else await sql.batch([add, insert], { relaxed: true });
    },
    /** The newest `limit` rows (at or after `since`), returned oldest first so they read as a log. */
    listAudit: async (f) => {
      const where: string[] = [];
      const params: unknown[] = [];
      if (f.storeId) {
        where.push('store_id = ?');
        params.push(f.storeId);
      }
      if (f.since != null) {
        where.push('at >= ?');
        params.push(f.since);
      }
      const rows = await sql.all<AuditRow>(
        `SELECT ${audit.select} FROM audit_log${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY at DESC, id DESC LIMIT ?`,
        [...params, f.limit],
      );
      return rows.reverse();
    },
    /** Newest first over (at, id), the order audit_store_idx serves: a page starts strictly after `before`. */
    pageAudit: async (f) => {
      const where = ['store_id = ?'];
      const params: unknown[] = [f.storeId];
      const add = (clause: string, ...values: unknown[]) => {
        where.push(clause);
        params.push(...values);
      };
      if (f.actorKind) add('actor_kind = ?', f.actorKind);
      if (f.operationId) add('operation_id = ?', f.operationId);
      if (f.grantId) add('grant_id = ?', f.grantId);
      if (f.since != null) add('at >= ?', f.since);
      if (f.until != null) add('at < ?', f.until);
      if (f.before) add('(at < ? OR (at = ? AND id < ?))', f.before.at, f.before.at, f.before.id);
      return sql.all<AuditRow>(`SELECT ${audit.select} FROM audit_log WHERE ${where.join(' AND ')} ORDER BY at DESC, id DESC LIMIT ?`, [...params, f.limit]);
    },
  };
}
