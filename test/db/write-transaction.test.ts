import { afterAll, describe, expect, it } from 'bun:test';
import type { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase, writeTransaction } from '../../db/sqlite/repo.ts';

const dir = mkdtempSync(join(tmpdir(), 'hookrelay-write-tx-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Two connections on one file, as serve's request thread and relay thread hold them. */
function twoConnections(name: string): [Database, Database] {
  const path = join(dir, name);
  const a = openSqliteDatabase({ path });
  a.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)');
  const b = openSqliteDatabase({ path });
  // The other connection gives up at once instead of waiting 5 s for a lock this same test holds.
  a.exec('PRAGMA busy_timeout = 0');
  return [a, b];
}

describe('writeTransaction (SQLite, two connections on one file)', () => {
  it('a transaction that reads before it writes is not broken by a commit of the other connection in between', () => {
    const [a, b] = twoConnections('immediate.db');
    let otherCommitted = true;
    writeTransaction(b, () => {
      b.query('SELECT count(*) AS n FROM t').get();
      try {
        a.exec('INSERT INTO t (n) VALUES (1)');
      } catch {
        otherCommitted = false; // it waits for this transaction's write lock (here: refused, busy_timeout 0)
      }
      b.exec('INSERT INTO t (n) VALUES (2)');
    })();
    expect(otherCommitted).toBe(false);
    expect(b.query('SELECT n FROM t').all()).toEqual([{ n: 2 }]);
  });

  it('(why) a deferred one fails with SQLITE_BUSY at its first write, without waiting', () => {
    const [a, b] = twoConnections('deferred.db');
    const run = b.transaction(() => {
      b.query('SELECT count(*) AS n FROM t').get();
      a.exec('INSERT INTO t (n) VALUES (1)');
      b.exec('INSERT INTO t (n) VALUES (2)');
    });
    expect(() => run.deferred()).toThrow(expect.objectContaining({ code: expect.stringMatching(/^SQLITE_BUSY/) }));
  });
});
