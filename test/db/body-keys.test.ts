/**
 * Migration 0007 and what it is for: event bodies keyed by an integer in the order they are stored (the event row
 * holds the key), with no index of their own; the retention sweep deletes them from the lowest key up.
 */
import { Database } from 'bun:sqlite';
import { describe, expect, it } from 'bun:test';
import { migrations } from '../../db/migrations/sqlite/index.ts';
import { migrateSqlite, sqliteRepo } from '../../db/sqlite/repo.ts';
import type { PendingReceipt } from '../../db/types.ts';
import { eventRow } from '../helpers.ts';

const before = migrations.findIndex((m) => m.tag === '0007_body_keys');
const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null) => (b ? new TextDecoder().decode(b) : null);

function receipt(id: string, receivedAt: number, body: string | null, expiresAt = receivedAt + 1_000): PendingReceipt {
  return { event: eventRow({ id, storeId: 'st_1', receivedAt }), body: body === null ? null : bytes(body), bodyExpiresAt: expiresAt, dedupeSince: null };
}

function bodies(db: Database) {
  return db.query('SELECT key, event_id AS eventId, expires_at AS expiresAt FROM event_bodies ORDER BY key').all();
}

describe('event bodies keyed in storage order (migration 0007)', () => {
  it('an upgraded database keeps every body, keyed in expiry order and linked from its event; no body index is left', async () => {
    const db = new Database(':memory:', { strict: true });
    await migrateSqlite(db, migrations.slice(0, before)); // as a database made before 0007
    const insertEvent = db.prepare(
      `INSERT INTO events (id, receipt_id, store_id, endpoint_id, config_version, outcome, is_test, body_bytes, body_retention, received_at)
       VALUES (?, ?, 'st_1', 'ep_1', 1, 'delivered', 0, 4, ?, ?)`,
    );
    const insertBody = db.prepare('INSERT INTO event_bodies (event_id, body, expires_at) VALUES (?, ?, ?)');
    // Stored out of expiry order (rowid order b, a), and one event without a body.
    insertEvent.run('evt_b', 'rcpt_b', 'retained', 2_000);
    insertBody.run('evt_b', bytes('body-b'), 9_000);
    insertEvent.run('evt_a', 'rcpt_a', 'retained', 1_000);
    insertBody.run('evt_a', bytes('body-a'), 8_000);
    insertEvent.run('evt_none', 'rcpt_none', 'none', 3_000);

    expect(await migrateSqlite(db, migrations)).toEqual(migrations.slice(before).map((m) => m.tag));
    expect(bodies(db)).toEqual([
      { key: 1, eventId: 'evt_a', expiresAt: 8_000 },
      { key: 2, eventId: 'evt_b', expiresAt: 9_000 },
    ]);
    expect(db.query('SELECT id, body_key AS bodyKey FROM events ORDER BY id').all()).toEqual([
      { id: 'evt_a', bodyKey: 1 },
      { id: 'evt_b', bodyKey: 2 },
      { id: 'evt_none', bodyKey: null },
    ]);
    expect(db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'event_bodies'").all()).toEqual([]);

    const repo = sqliteRepo(db);
    expect(text(await repo.getEventBody('evt_a'))).toBe('body-a');
    expect(text(await repo.getEventBody('evt_b'))).toBe('body-b');
    expect(await repo.getEventBody('evt_none')).toBeNull();
    // The next commit's bodies take the keys after the last one.
    await repo.commitIngest([receipt('evt_c', 4_000, 'body-c', 10_000)], []);
    expect(bodies(db).at(-1)).toEqual({ key: 3, eventId: 'evt_c', expiresAt: 10_000 });
    expect(text(await repo.getEventBody('evt_c'))).toBe('body-c');
  });

  it('a commit keys its bodies in order, skipping receipts without one, and each event finds its own', async () => {
    const db = new Database(':memory:', { strict: true });
    await migrateSqlite(db);
    const repo = sqliteRepo(db);
    await repo.commitIngest([receipt('evt_1', 1, 'one'), receipt('evt_2', 2, null), receipt('evt_3', 3, 'three')], []);
    await repo.commitIngest(
      Array.from({ length: 40 }, (_, i) => receipt(`evt_m${String(i).padStart(2, '0')}`, 10 + i, `many-${i}`)),
      [],
    );
    expect(bodies(db).map((b: any) => b.key)).toEqual(Array.from({ length: 42 }, (_, i) => i + 1));
    expect(text(await repo.getEventBody('evt_1'))).toBe('one');
    expect(await repo.getEventBody('evt_2')).toBeNull();
    expect(text(await repo.getEventBody('evt_3'))).toBe('three');
    for (let i = 0; i < 40; i++) expect(text(await repo.getEventBody(`evt_m${String(i).padStart(2, '0')}`))).toBe(`many-${i}`);
  });

  it('the sweep deletes the expired bodies from the lowest key up, stops at the first unexpired one, and reads at most its limit', async () => {
    const db = new Database(':memory:', { strict: true });
    await migrateSqlite(db);
    const repo = sqliteRepo(db);
    // Expiries 100, 200, ..., 1000 in key order.
    await repo.commitIngest(
      Array.from({ length: 10 }, (_, i) => receipt(`evt_${i}`, i, `b${i}`, (i + 1) * 100)),
      [],
    );
    expect((await repo.sweepExpired(50, 0, 100)).bodies).toBe(0);
    expect((await repo.sweepExpired(300, 0, 100)).bodies).toBe(3); // expiries 100, 200, 300
    expect(bodies(db).map((b: any) => b.eventId)[0]).toBe('evt_3');
    // A limit smaller than what has expired: that many, and the next sweep takes the rest.
    expect((await repo.sweepExpired(900, 0, 4)).bodies).toBe(4);
    expect((await repo.sweepExpired(900, 0, 4)).bodies).toBe(2);
    expect(bodies(db).map((b: any) => b.eventId)).toEqual(['evt_9']);
    expect(await repo.getEventBody('evt_8')).toBeNull();
    expect(text(await repo.getEventBody('evt_9'))).toBe('b9');
    // Every body gone: the keys start again from 1, and an old event never reads the new body that holds its key.
    expect((await repo.sweepExpired(1_000, 0, 100)).bodies).toBe(1);
    await repo.commitIngest([receipt('evt_new', 2_000, 'new')], []);
    expect(bodies(db)).toEqual([{ key: 1, eventId: 'evt_new', expiresAt: 3_000 }]);
    expect(await repo.getEventBody('evt_0')).toBeNull();
    expect(text(await repo.getEventBody('evt_new'))).toBe('new');
  });

  it('a body that expires later than the one after it (a clock set back) holds the sweep until it expires, then both go', async () => {
    const db = new Database(':memory:', { strict: true });
    await migrateSqlite(db);
    const repo = sqliteRepo(db);
    await repo.commitIngest([receipt('evt_late', 1, 'late', 500), receipt('evt_early', 2, 'early', 400)], []);
    expect((await repo.sweepExpired(450, 0, 100)).bodies).toBe(0);
    expect((await repo.sweepExpired(500, 0, 100)).bodies).toBe(2);
  });
});
