/**
 * The thin runner of the storage areas written once for both dialects (db/areas/): plain SQL that SQLite and PostgreSQL both run as written, with `?`
 * placeholders, or `?1`, `?2`… to use one parameter twice (the PostgreSQL runner turns both into `$n`, so no `?`
 * inside a literal). Integers, bigint included, come back as numbers on both (the PostgreSQL pool parses int8);
 * sums do not on PostgreSQL (numeric): CAST them AS BIGINT. Booleans bind as they are and read back as SQLite's
 * 0 / 1 or PostgreSQL's booleans: a table's codec (tableRows) makes them booleans.
 */
import { getTableColumns, getTableName, type Table } from 'drizzle-orm';
import type { Dialect } from './dialect.ts';

/**
 * What a dialect gives an area: rows of a query, the rows a statement changed, and writes in one transaction. Only
 * db/ holds a runner: the areas take it when a handle is made (db/areas/index.ts), and no handle exposes it.
 */
export interface SqlRunner {
  /** Where the schemas differ (db/dialect.ts), for the areas that clear a lease or find a raw body. */
  readonly dialect: Dialect;
  /** Rows of a query, or of a write's RETURNING (`relaxed` as for run). */
  all<T>(sql: string, params: unknown[], opts?: { relaxed?: boolean }): Promise<T[]>;
  /**
   * The rows a statement changed. `relaxed`: bookkeeping whose loss to a power cut loses nothing acknowledged
   * (an audit row, a meter): SQLite commits it without its own fsync (the next receipt's commit syncs it).
   */
  run(sql: string, params: unknown[], opts?: { relaxed?: boolean }): Promise<number>;
  /**
   * Runs `writes` in order in one transaction. When a write marked `mustChange` changes no row, everything rolls
   * back and its index is returned; else the rows each changed. On SQLite it runs synchronously under the write
   * lock, so no other statement of this process can slip into the transaction. `relaxed` as for run.
   */
  batch(writes: Write[], opts?: { relaxed?: boolean }): Promise<BatchOutcome>;
}

/**
 * One statement of a batch, built by an area (db/areas/) and committed by one (the intent journal's
 * IntentStore.executeIntent): a description of a write, never run above db/. Its SQL may depend on the dialect.
 */
export interface Write {
  sql: string | ((dialect: Dialect) => string);
  /** Its parameters, or a function of the rows each earlier write changed (a result that counts them). */
  params: unknown[] | ((changes: number[]) => unknown[]);
  /** A compare-and-set: changing no row means the state it expected is gone, and the batch rolls back. */
  mustChange?: boolean;
}

export type BatchOutcome = { ok: true; changes: number[] } | { ok: false; failed: number };

/** A batch's rule once for both dialects: yields each statement with its parameters and is sent the rows it changed. */
export function* batchSteps(writes: Write[], dialect: Dialect): Generator<[sql: string, params: unknown[]], BatchOutcome, number> {
  const changes: number[] = [];
  for (const [i, w] of writes.entries()) {
    const n = yield [sqlOf(w, dialect), typeof w.params === 'function' ? w.params(changes) : w.params];
    changes.push(n);
    if (w.mustChange && n === 0) return { ok: false, failed: i };
  }
  return { ok: true, changes };
}

/** A write's statement on a dialect. */
export function sqlOf(w: Write, dialect: Dialect): string {
  return typeof w.sql === 'function' ? w.sql(dialect) : w.sql;
}

/** The first row of a query, or null. */
export async function first<T>(runner: SqlRunner, sql: string, params: unknown[]): Promise<T | null> {
  return (await runner.all<T>(sql, params))[0] ?? null;
}

/** `?, ?, …`: n placeholders, for an `IN (…)` list. */
export const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** Turns `?` and `?n` placeholders into PostgreSQL's `$n`. */
export function numberPlaceholders(sql: string): string {
  let i = 0;
  return sql.replace(/\?(\d+)?/g, (_, n: string | undefined) => `$${n ?? ++i}`);
}

/**
 * A table's rows as plain SQL, from its drizzle columns (the SQLite schema's: both dialects name them alike;
 * `omit` leaves out a dialect's own): the select list under the property names, a decoder of the driver's values,
 * and an INSERT and a SET of a row's present fields (an absent one keeps its column's default).
 */
export interface TableRows<T> {
  readonly name: string;
  /** `col AS "key", …` */
  readonly select: string;
  /** A raw row read with `select` as the typed row: booleans as booleans. */
  decode(raw: unknown): T;
  insert(row: Partial<T>): { sql: string; params: unknown[] };
  /** `col = ?, …` for the fields present, with their parameters. */
  set(patch: Partial<T>): { sql: string; params: unknown[] };
}

export function tableRows<T>(table: Table, opts: { omit?: string[] } = {}): TableRows<T> {
  const name = getTableName(table);
  const columns = Object.fromEntries(Object.entries(getTableColumns(table)).filter(([key]) => !opts.omit?.includes(key)));
  const nameOf = new Map(Object.entries(columns).map(([key, col]) => [key, col.name]));
  const booleans = Object.entries(columns)
    .filter(([, col]) => col.dataType === 'boolean')
    .map(([key]) => key);
  const fields = (row: object) => Object.entries(row).filter(([key, v]) => v !== undefined && nameOf.has(key)) as [string, unknown][];
  return {
    name,
    select: Object.entries(columns)
      .map(([key, col]) => `${col.name} AS "${key}"`)
      .join(', '),
    decode: booleans.length
      ? (raw) => {
          const row = raw as Record<string, unknown>;
          for (const key of booleans) if (row[key] != null) row[key] = row[key] === true || row[key] === 1;
          return row as T;
        }
      : (raw) => raw as T,
    insert: (row) => {
      const present = fields(row);
      return {
        sql: `INSERT INTO ${name} (${present.map(([key]) => nameOf.get(key)).join(', ')}) VALUES (${present.map(() => '?').join(', ')})`,
        params: present.map(([, v]) => v),
      };
    },
    set: (patch) => {
      const present = fields(patch);
      return { sql: present.map(([key]) => `${nameOf.get(key)} = ?`).join(', '), params: present.map(([, v]) => v) };
    },
  };
}

/** Each handle's runner, kept out of the handle (see runnerOf). */
const runners = new WeakMap<object, SqlRunner>();

/** Records `sql` as the runner behind `handle` (each dialect's factory), and returns the handle. */
export function withRunner<T extends object>(handle: T, sql: SqlRunner): T {
  runners.set(handle, sql);
  return handle;
}

/**
 * Tests only: the runner behind a handle, for a test that reads a table no area serves or holds a statement
 * mid-batch. No handle exposes its runner, and nothing above db/ may import this file (test/contract/layers.test.ts).
 */
export function runnerOf(handle: object): SqlRunner {
  const sql = runners.get(handle);
  if (!sql) throw new Error('not a storage handle');
  return sql;
}
