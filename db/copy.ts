/**
 * Moves a SQLite box to PostgreSQL (`hookrelay migrate --from sqlite:PATH`): every table copied row for row in
 * one PostgreSQL transaction, so a failed copy leaves the target as it was. The target must be empty.
 */
import { Database } from 'bun:sqlite';
import { getTableColumns, getTableName, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import * as pgSchema from './pg/schema.ts';

const BATCH = 1000;

export interface CopyReport {
  /** Rows copied per table. */
  tables: Record<string, number>;
}

/** The PostgreSQL tables in an order that satisfies their foreign keys. */
function tables(): PgTable[] {
  const all = (Object.values(pgSchema) as unknown[]).filter((t): t is PgTable => is(t, PgTable));
  const first = ['stores', 'grants', 'endpoints'];
  return all.sort((a, b) => rank(getTableName(a)) - rank(getTableName(b)));
  function rank(name: string) {
    const i = first.indexOf(name);
    return i < 0 ? first.length : i;
  }
}

/**
 * Copies `sqlitePath` into the (migrated, empty) database behind `pool`. Columns the SQLite schema lacks (the
 * lease token, the stats shard) take their defaults; dedupe keys are rebuilt from the events that hold them.
 */
export async function copySqliteToPostgres(sqlitePath: string, pool: pg.Pool, dedupeSince: number): Promise<CopyReport> {
  const src = new Database(sqlitePath, { readonly: true, strict: true });
  const client = await pool.connect();
  const report: CopyReport = { tables: {} };
  try {
    // One read transaction on the source: every table is copied from the same snapshot.
    src.exec('BEGIN');
    await client.query('BEGIN');
    const existing = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM stores');
    if ((existing.rows[0]?.n ?? 0) > 0) throw new Error('The PostgreSQL database already holds stores; copy into an empty one.');
    for (const table of tables()) {
      const name = getTableName(table);
      if (name === 'dedupe_keys') continue;
      const srcColumns = new Set((src.query(`PRAGMA table_info(${name})`).all() as { name: string }[]).map((c) => c.name));
      if (!srcColumns.size) continue; // a table the SQLite file predates
      const cols = Object.values(getTableColumns(table)).filter((c) => srcColumns.has(c.name));
      // Each column's values travel as an array of the column's own type (double precision, bytea, boolean...).
      const casts = cols.map((c, i) => `$${i + 1}::${c.getSQLType()}[]`);
      const insert = `INSERT INTO ${name} (${cols.map((c) => c.name).join(', ')}) SELECT * FROM unnest(${casts.join(', ')})`;
      let n = 0;
      const rows = src.query(`SELECT ${cols.map((c) => c.name).join(', ')} FROM ${name}`).iterate() as IterableIterator<Record<string, unknown>>;
      let batch: Record<string, unknown>[] = [];
      const flush = async () => {
        if (!batch.length) return;
        await client.query(
          insert,
          cols.map((c) => batch.map((r) => toPg(r[c.name], c.getSQLType()))),
        );
        n += batch.length;
        batch = [];
      };
      for (const row of rows) {
        batch.push(row);
        if (batch.length === BATCH) await flush();
      }
      await flush();
      report.tables[name] = n;
    }
    // The first live receipt per (endpoint, external id) inside the window holds its key, as the SQLite dedupe query decides.
    const keys = await client.query(
      `INSERT INTO dedupe_keys (endpoint_id, external_event_id, event_id, received_at)
       SELECT DISTINCT ON (endpoint_id, external_event_id) endpoint_id, external_event_id, id, received_at FROM events
       WHERE external_event_id IS NOT NULL AND received_at >= $1 AND outcome NOT IN ('duplicate_suppressed', 'rejected', 'test')
       ORDER BY endpoint_id, external_event_id, received_at, id`,
      [dedupeSince],
    );
    report.tables.dedupe_keys = keys.rowCount ?? 0;
    await client.query('COMMIT');
    return report;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
    src.close();
  }
}

/** SQLite stores booleans as 0/1 and blobs as Uint8Array. */
function toPg(v: unknown, sqlType: string): unknown {
  if (v == null) return null;
  if (sqlType === 'boolean') return v === 1 || v === true;
  if (sqlType === 'bytea') return Buffer.from(v as Uint8Array);
  return v;
}
