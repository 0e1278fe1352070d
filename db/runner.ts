/**
 * The thin runner of the storage areas written once for both dialects (platform links, app installs, Shopify
 * webhooks, erasure, bulk replay): plain SQL that SQLite and PostgreSQL both run as written, with `?` placeholders
 * (which the PostgreSQL runner numbers, so no `?` inside a literal). Integers, bigint included, come back as
 * numbers on both (the PostgreSQL pool parses int8); sums over PostgreSQL's numeric do not.
 */
import { getTableColumns, type Table } from 'drizzle-orm';

/** What a dialect gives an area: rows of a query, and the rows a statement changed. */
export interface SqlRunner {
  all<T>(sql: string, params: unknown[]): Promise<T[]>;
  run(sql: string, params: unknown[]): Promise<number>;
}

/** A table's columns as a select list, each under its property name (`token_sealed AS "tokenSealed"`). */
export function selectList(table: Table): string {
  return Object.entries(getTableColumns(table))
    .map(([key, col]) => `${col.name} AS "${key}"`)
    .join(', ');
}
