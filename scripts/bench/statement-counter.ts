/**
 * Counts every database statement this process executes, from the drivers themselves rather than from the
 * repository's own idea of its queries: each call into `bun:sqlite` that runs SQL (a prepared statement's
 * run/all/get/values/iterate, `Database.run` and `exec`; the BEGIN/COMMIT its `transaction()` helper issues natively
 * are not seen) or into `pg` (`Client.query`, BEGIN and COMMIT included). The stores bench's serve reports it per
 * minute; tests use it to hold that a handoff round's statements do not grow with its stores. Installed once per
 * process, before the databases it should see are opened (SQLite statements prepared earlier are not counted).
 * It counts the transactions that may write too: each commit a call costs.
 */
import { Database } from 'bun:sqlite';
import pg from 'pg';

export interface StatementCounter {
  /** Statements executed since the counter was installed. */
  readonly total: number;
  /**
   * Transactions begun that may write: on SQLite each outermost `transaction()` of bun:sqlite (every write of this
   * codebase runs in one; a read runs outside any), on PostgreSQL each BEGIN and each statement outside one that is
   * not a SELECT (it commits on its own).
   */
  readonly transactions: number;
  /** Executions by statement text (its first 120 characters, never a parameter), most executed first. */
  top(n: number): [sql: string, count: number][];
}

let installed: StatementCounter | null = null;

/** Installs the counter (once; later calls return the same one). */
export function countStatements(): StatementCounter {
  if (installed) return installed;
  let total = 0;
  let transactions = 0;
  const bySql = new Map<string, number>();
  const note = (sql: unknown) => {
    total++;
    const key = textOf(sql).replace(/\s+/g, ' ').slice(0, 120);
    bySql.set(key, (bySql.get(key) ?? 0) + 1);
  };
  const counted = new WeakSet<object>();
  /** bun:sqlite gives each statement its own methods (fast paths), so they are wrapped per statement, once. */
  const countStatement = <T extends object>(st: T, sql: unknown): T => {
    if (counted.has(st)) return st;
    counted.add(st);
    const s = st as Record<string, (...args: unknown[]) => unknown>;
    for (const m of ['run', 'all', 'get', 'values', 'iterate'] as const) {
      const original = s[m]!;
      s[m] = function (this: unknown, ...args: unknown[]) {
        note(sql);
        return original.apply(this, args);
      };
    }
    return st;
  };
  const dbProto = Database.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const m of ['prepare', 'query']) {
    const original = dbProto[m]!;
    dbProto[m] = function (this: unknown, ...args: unknown[]) {
      return countStatement(original.apply(this, args) as object, args[0]);
    };
  }
  for (const m of ['run', 'exec']) {
    const original = dbProto[m]!;
    dbProto[m] = function (this: unknown, ...args: unknown[]) {
      note(args[0]);
      return original.apply(this, args);
    };
  }
  // A transaction's body, counted when it is the outermost of its database (a nested one is a savepoint).
  const depth = new WeakMap<object, number>();
  const transaction = dbProto.transaction!;
  dbProto.transaction = function (this: object, fn: unknown, ...rest: unknown[]) {
    const db = this;
    const body = function (this: unknown, ...args: unknown[]) {
      const d = depth.get(db) ?? 0;
      if (d === 0) transactions++;
      depth.set(db, d + 1);
      try {
        return (fn as (...a: unknown[]) => unknown).apply(this, args);
      } finally {
        depth.set(db, d);
      }
    };
    return transaction.call(this, body, ...rest);
  };
  const inTransaction = new WeakSet<object>();
  const pgQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  (pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: object, ...args: unknown[]) {
    note(args[0]);
    const head = /^\s*(\w+)/.exec(textOf(args[0]))?.[1]?.toUpperCase();
    if (head === 'BEGIN') {
      inTransaction.add(this);
      transactions++;
    } else if (head === 'COMMIT' || head === 'ROLLBACK') inTransaction.delete(this);
    else if (!inTransaction.has(this) && head !== 'SELECT') transactions++;
    return pgQuery.apply(this, args);
  };
  installed = {
    get total() {
      return total;
    },
    get transactions() {
      return transactions;
    },
    top: (n) => [...bySql].sort((x, y) => y[1] - x[1]).slice(0, n),
  };
  return installed;
}

/** A statement's text: pg takes a query config object too. */
function textOf(sql: unknown): string {
  return String(typeof sql === 'object' && sql !== null && 'text' in sql ? sql.text : sql);
}
