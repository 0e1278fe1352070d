/**
 * Migration 0005: attempts (keyed by event and number), usage_counters and event_stats are WITHOUT ROWID tables.
 * An upgraded database keeps every row, and recording an attempt number twice keeps the first.
 */
import { Database } from 'bun:sqlite';
import { describe, expect, it } from 'bun:test';
import { migrations } from '../../db/migrations/sqlite/index.ts';
import { migrateSqlite, sqliteRepo } from '../../db/sqlite/repo.ts';
import type { AttemptResult } from '../../db/types.ts';
import { eventRow } from '../helpers.ts';

const CLUSTERED = ['attempts', 'event_stats', 'usage_counters'];
const before = migrations.findIndex((m) => m.tag === '0005_attempts_clustered');

function tableSql(db: Database, name: string): string {
  return (db.query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) as { sql: string }).sql;
}

describe('clustered tables (migration 0005)', () => {
  it('an upgraded database keeps its attempts, counters and stats, now in WITHOUT ROWID tables', async () => {
    const db = new Database(':memory:', { strict: true });
    await migrateSqlite(db, migrations.slice(0, before)); // as a database made before 0005
    for (const t of CLUSTERED) expect(tableSql(db, t)).not.toContain('WITHOUT ROWID');
    const attempt = db.prepare(
      `INSERT INTO attempts (id, event_id, number, destination, started_at, finished_at, outcome, http_status, code, message, retry_at)
       VALUES (?, ?, ?, 'shopify', ?, ?, ?, ?, NULL, NULL, NULL)`,
    );
    attempt.run('att_2', 'evt_a', 2, 3_000, 3_100, 'delivered', 200);
    attempt.run('att_1', 'evt_a', 1, 1_000, 1_100, 'retry', 503);
    attempt.run('att_3', 'evt_b', 1, 2_000, 2_100, 'delivered', 200);
    // The same number twice (a handoff repeated after its lease ran out): the earlier one stays.
    attempt.run('att_4', 'evt_b', 1, 2_500, 2_600, 'failed', 400);
    db.prepare("INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES ('st_1', 'accepted_events', 0, 42)").run();
    db.prepare("INSERT INTO event_stats (store_id, width, bucket, metric, n) VALUES ('st_1', 300000, 0, 'received:accepted', 7)").run();

    expect(await migrateSqlite(db, migrations)).toEqual(migrations.slice(before).map((m) => m.tag));
    for (const t of CLUSTERED) expect(tableSql(db, t)).toContain('WITHOUT ROWID');
    expect(db.query("SELECT name FROM sqlite_master WHERE name = 'attempts_event_idx'").all()).toEqual([]);

    const repo = sqliteRepo(db);
    expect((await repo.listAttempts('evt_a')).map((a) => [a.number, a.outcome, a.httpStatus])).toEqual([
      [1, 'retry', 503],
      [2, 'delivered', 200],
    ]);
    expect((await repo.listAttempts('evt_b')).map((a) => [a.number, a.startedAt, a.outcome])).toEqual([[1, 2_000, 'delivered']]);
    expect(db.query('SELECT used FROM usage_counters').all()).toEqual([{ used: 42 }]);
    expect(db.query('SELECT width, metric, n FROM event_stats').all()).toEqual([{ width: 300000, metric: 'received:accepted', n: 7 }]);
    // The event's attempts are read through the primary key, in number order, with no sort.
    const plan = (db.query('EXPLAIN QUERY PLAN SELECT * FROM attempts WHERE event_id = ? ORDER BY number').all('evt_a') as { detail: string }[]).map(
      (r) => r.detail,
    );
    expect(plan).toEqual(['SEARCH attempts USING PRIMARY KEY (event_id=?)']);
  });

  it('closing an attempt already closed keeps the first attempt, its event update and its counts; an unjournaled one writes nothing', async () => {
    const db = new Database(':memory:', { strict: true });
    await migrateSqlite(db);
    const repo = sqliteRepo(db);
    const queued = eventRow({ id: 'evt_1', storeId: 'st_1', receivedAt: 1_000, nextAttemptAt: 9_000, leaseUntil: 9_000 });
    await repo.commitIngest([{ event: queued, body: null, bodyExpiresAt: 0, dedupeSince: null }], []);
    const result = (outcome: 'delivered' | 'failed', startedAt: number): AttemptResult => ({
      attempt: {
        eventId: 'evt_1',
        number: 1,
        destination: 'log',
        startedAt,
        finishedAt: startedAt + 5,
        outcome,
        httpStatus: null,
        code: null,
        message: null,
        retryAt: null,
      },
      storeId: 'st_1',
      metrics: [`handoff:${outcome}`],
      event: { outcome, code: null, nextAttemptAt: null, deliveredAt: outcome === 'delivered' ? startedAt + 5 : null, leaseUntil: null },
    });
    expect(await repo.journalAttempts([{ eventId: 'evt_1', number: 1, destination: 'log', startedAt: 1_900 }])).toHaveLength(1);
    // The same number journaled again (another worker has it): left out, so its caller does not send.
    expect(await repo.journalAttempts([{ eventId: 'evt_1', number: 1, destination: 'log', startedAt: 1_950 }])).toEqual([]);
    await repo.recordAttempts([result('delivered', 2_000)]);
    await repo.recordAttempts([result('failed', 3_000)]); // no constraint error: the batch is not lost
    expect((await repo.listAttempts('evt_1')).map((a) => [a.number, a.outcome, a.startedAt])).toEqual([[1, 'delivered', 2_000]]);
    const event = await repo.getEvent('st_1', 'evt_1');
    expect([event?.outcome, event?.attempts, event?.lastAttemptAt, event?.deliveredAt]).toEqual(['delivered', 1, 2_005, 2_005]);
    expect(db.query("SELECT metric, n FROM event_stats WHERE width = 300000 AND metric LIKE 'handoff:%'").all()).toEqual([
      { metric: 'handoff:delivered', n: 1 },
    ]);
  });
});
