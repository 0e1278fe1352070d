/**
 * The thin runner of the storage areas written once for both dialects (platform links, app installs, Shopify
 * webhooks, erasure, bulk replay): plain SQL that SQLite and PostgreSQL both run as written, with `?` placeholders
 * (which the PostgreSQL runner numbers, so no `?` inside a literal). Integers, bigint included, come back as
 * numbers on both (the PostgreSQL pool parses int8); sums over PostgreSQL's numeric do not.
 */
import { getTableColumns, type Table } from 'drizzle-orm';

/** What a dialect gives an area: rows of a query, the rows a statement changed, and writes in one transaction. */
export interface SqlRunner {
  all<T>(sql: string, params: unknown[]): Promise<T[]>;
  run(sql: string, params: unknown[]): Promise<number>;
  /**
   * Runs `writes` in order in one transaction. When a write marked `mustChange` changes no row, everything rolls
   * back and its index is returned; else the rows each changed. On SQLite it runs synchronously under the write
   * lock, so no other statement of this process can slip into the transaction.
   */
  batch(writes: Write[]): Promise<BatchOutcome>;
}

/** One statement of a batch. */
export interface Write {
  sql: string;
  /** Its parameters, or a function of the rows each earlier write changed (a result that counts them). */
  params: unknown[] | ((changes: number[]) => unknown[]);
  /** A compare-and-set: changing no row means the state it expected is gone, and the batch rolls back. */
  mustChange?: boolean;
}

export type BatchOutcome = { ok: true; changes: number[] } | { ok: false; failed: number };

/** A batch's rule once for both dialects: yields each statement with its parameters and is sent the rows it changed. */
export function* batchSteps(writes: Write[]): Generator<[sql: string, params: unknown[]], BatchOutcome, number> {
  const changes: number[] = [];
  for (const [i, w] of writes.entries()) {
    const n = yield [w.sql, typeof w.params === 'function' ? w.params(changes) : w.params];
    changes.push(n);
    if (w.mustChange && n === 0) return { ok: false, failed: i };
  }
  return { ok: true, changes };
}

/** A table's columns as a select list, each under its property name (`token_sealed AS "tokenSealed"`). */
export function selectList(table: Table): string {
  return Object.entries(getTableColumns(table))
    .map(([key, col]) => `${col.name} AS "${key}"`)
    .join(', ');
}
