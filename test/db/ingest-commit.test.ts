/**
 * The ingest commit inserts its events and bodies several rows per statement (RowBatch in db/sqlite/repo.ts).
 * Every receipt of a commit is stored whatever the commit's size against the statement's row count, in order,
 * and a failure anywhere in the commit leaves none of its rows. New database files get 8 KiB pages.
 */
import { Database } from 'bun:sqlite';
import { describe, expect, it } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateSqlite, openSqliteDatabase, PAGE_SIZE, sqliteRepo } from '../../db/sqlite/repo.ts';
import type { PendingReceipt } from '../../db/types.ts';
import { eventRow } from '../helpers.ts';

async function freshRepo() {
  const db = new Database(':memory:', { strict: true });
  await migrateSqlite(db);
  return { db, repo: sqliteRepo(db) };
}

function receipts(n: number, from = 0): PendingReceipt[] {
  return Array.from({ length: n }, (_, i) => {
    const id = `evt_${String(from + i).padStart(6, '0')}`;
    return {
      event: eventRow({ id, outcome: 'accepted', receivedAt: 1_000 + from + i, externalEventId: `ext-${from + i}` }),
      body: new TextEncoder().encode(`{"n":${from + i}}`),
      bodyExpiresAt: 99_000,
      dedupeSince: 0,
    };
  });
}

describe('ingest commit, several rows per statement', () => {
  for (const n of [1, 15, 16, 17, 33, 64, 100]) {
    it(`a commit of ${n} stores every event and body, in order`, async () => {
      const { db, repo } = await freshRepo();
      const committed = await repo.commitIngest(receipts(n), []);
      expect(committed.map((c) => c.outcome)).toEqual(Array(n).fill('accepted'));
      const ids = db
        .query<{ id: string }, []>('SELECT id FROM events ORDER BY rowid')
        .all()
        .map((r) => r.id);
      expect(ids).toEqual(receipts(n).map((r) => r.event.id));
      const bodies = db.query<{ event_id: string; body: Uint8Array }, []>('SELECT event_id, body FROM event_bodies ORDER BY rowid').all();
      expect(bodies.map((b) => [b.event_id, new TextDecoder().decode(b.body)])).toEqual(receipts(n).map((r, i) => [r.event.id, `{"n":${i}}`]));
      // Each stored row has its own values, not a neighbour's.
      const last = await repo.getEvent(receipts(1)[0]!.event.storeId, ids.at(-1)!);
      expect([last?.externalEventId, last?.receivedAt]).toEqual([`ext-${n - 1}`, 1_000 + n - 1]);
    });
  }

  it('a duplicate inside a commit is suppressed against the earlier receipt of the same commit, before either is stored', async () => {
    const { db, repo } = await freshRepo();
    const batch = receipts(20);
    batch[18]!.event.externalEventId = 'ext-3';
    const committed = await repo.commitIngest(batch, []);
    expect([committed[18]!.outcome, committed[18]!.duplicateOf]).toEqual(['duplicate_suppressed', batch[3]!.event.id]);
    expect(db.query('SELECT count(*) AS n FROM event_bodies').get()).toEqual({ n: 19 });
  });

  it('a row that fails in the middle of a statement leaves none of the commit behind', async () => {
    const { db, repo } = await freshRepo();
    await repo.commitIngest(receipts(1, 5), []); // evt_000005 exists already
    // 40 receipts: the clash is the 6th row of the first 16-row statement, and two more statements follow.
    const batch = receipts(40).map((r) => ({ ...r, event: { ...r.event, externalEventId: null } }));
    await expect(repo.commitIngest(batch, [])).rejects.toThrow(/UNIQUE constraint failed/);
    expect(db.query('SELECT count(*) AS n FROM events').get()).toEqual({ n: 1 });
    expect(db.query('SELECT count(*) AS n FROM event_bodies').get()).toEqual({ n: 1 });
    // The connection is usable afterwards, and the next commit stores everything.
    await repo.commitIngest(receipts(30, 100), []);
    expect(db.query('SELECT count(*) AS n FROM events').get()).toEqual({ n: 31 });
  });
});

describe('page size', () => {
  it('a new database file gets 8 KiB pages; one made with 4 KiB pages keeps them and stays usable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookrelay-pages-'));
    try {
      const fresh = openSqliteDatabase({ path: join(dir, 'new.db') });
      await migrateSqlite(fresh);
      expect(fresh.query('PRAGMA page_size').get()).toEqual({ page_size: PAGE_SIZE });
      expect(PAGE_SIZE).toBe(8192);
      fresh.close();

      const old = new Database(join(dir, 'old.db'), { create: true, strict: true });
      old.exec('PRAGMA page_size = 4096');
      old.exec('PRAGMA journal_mode = WAL');
      await migrateSqlite(old);
      old.close();
      const reopened = openSqliteDatabase({ path: join(dir, 'old.db') });
      expect(reopened.query('PRAGMA page_size').get()).toEqual({ page_size: 4096 });
      const repo = sqliteRepo(reopened);
      await repo.commitIngest(receipts(20), []);
      expect(reopened.query('SELECT count(*) AS n FROM events').get()).toEqual({ n: 20 });
      reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
