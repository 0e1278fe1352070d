/** event_stats: three bucket widths, summed as 5-minute + hourly + daily ranges, equal to the 5-minute sum. */
import { Database } from 'bun:sqlite';
import { describe, expect, it } from 'bun:test';
import { STATS_WIDTHS_MS, type AttemptResult } from '../../db/types.ts';
import { eventRow } from '../helpers.ts';
import { migrations } from '../../db/migrations/sqlite/index.ts';
import { migrateSqlite, sqliteRepo } from '../../db/sqlite/repo.ts';

const FIVE = STATS_WIDTHS_MS[0];
const DAY = 86400_000;

describe('event_stats', () => {
  it('migration 0004 rolls existing 5-minute rows up into hourly and daily ones; window sums match the 5-minute sum', async () => {
    const db = new Database(':memory:', { strict: true });
    await migrateSqlite(db, migrations.slice(0, 4)); // as a database made before the widths existed
    const insert = db.prepare('INSERT INTO event_stats (store_id, bucket, metric, n) VALUES (?, ?, ?, ?)');
    const end = Date.UTC(2026, 10, 20, 13, 7);
    let i = 0;
    for (let t = end - 10 * DAY; t <= end; t += FIVE) insert.run('st_1', t - (t % FIVE), i % 3 ? 'received:accepted' : 'handoff:delivered', 1 + (i++ % 5));
    await migrateSqlite(db, migrations);
    const repo = sqliteRepo(db);

    const totals = db.query('SELECT width, sum(n) AS n FROM event_stats GROUP BY width ORDER BY width').all() as { width: number; n: number }[];
    expect(totals.map((r) => r.width)).toEqual([...STATS_WIDTHS_MS]);
    expect(new Set(totals.map((r) => r.n)).size).toBe(1);

    const bruteForce = (from: number) =>
      Object.fromEntries(
        (
          db.query('SELECT metric, sum(n) AS n FROM event_stats WHERE width = ? AND bucket >= ? GROUP BY metric').all(FIVE, from - (from % FIVE)) as {
            metric: string;
            n: number;
          }[]
        ).map((r) => [r.metric, r.n]),
      );
    // Windows that start on and off hour and day boundaries.
    for (const from of [end - 3600_000, end - DAY, end - 7 * DAY, end - 7 * DAY - 17 * 60_000, Date.UTC(2026, 10, 15), Date.UTC(2026, 10, 15, 9)]) {
      expect(await repo.sumStats('st_1', from)).toEqual(bruteForce(from));
    }
  });

  it('a commit and a round interleaving stores, buckets and metrics count each row where it belongs', async () => {
    const db = new Database(':memory:', { strict: true });
    await migrateSqlite(db);
    const repo = sqliteRepo(db);
    const t0 = 10 * DAY; // a bucket start at every width
    // Store a, b, a in the next bucket, then a in the first bucket again: a cache that ignored the store or the
    // bucket would count some of these under another row.
    const at: [string, number][] = [
      ['st_a', t0],
      ['st_b', t0 + 1],
      ['st_a', t0 + FIVE],
      ['st_a', t0 + 2],
      ['st_b', t0 + FIVE + 1],
      ['st_a', t0 + 3],
    ];
    await repo.commitIngest(
      at.map(([storeId, receivedAt], i) => ({
        event: eventRow({ id: `evt_${i}`, storeId, receivedAt, outcome: 'accepted', nextAttemptAt: 1, leaseUntil: null }),
        body: null,
        bodyExpiresAt: 0,
        dedupeSince: null,
      })),
      [],
    );
    const five = (metric: string) =>
      db.query('SELECT store_id AS s, bucket - ? AS b, n FROM event_stats WHERE width = ? AND metric = ? ORDER BY store_id, bucket').all(t0, FIVE, metric);
    expect(five('received:accepted')).toEqual([
      { s: 'st_a', b: 0, n: 3 },
      { s: 'st_a', b: FIVE, n: 1 },
      { s: 'st_b', b: 0, n: 1 },
      { s: 'st_b', b: FIVE, n: 1 },
    ]);
    expect(db.query("SELECT n FROM event_stats WHERE store_id = 'st_a' AND width = ? AND metric = 'received:accepted'").all(DAY)).toEqual([{ n: 4 }]);

    // Leased first: an attempt is journaled only under its event's lease. (No endpoint or store rows here, so the
    // claim hands back nothing; the leases are what counts.)
    await repo.claimDue(t0, 100, t0 + DAY);
    expect(await repo.journalAttempts(at.map((_, i) => ({ eventId: `evt_${i}`, number: 1, destination: 'log', startedAt: t0 })))).toHaveLength(at.length);
    const result = (i: number, outcome: 'delivered' | 'failed', metrics: string[]): AttemptResult => ({
      attempt: {
        eventId: `evt_${i}`,
        number: 1,
        destination: 'log',
        startedAt: t0,
        finishedAt: at[i]![1],
        outcome,
        httpStatus: null,
        code: null,
        message: null,
        retryAt: null,
      },
      storeId: at[i]![0],
      metrics,
      event: { outcome, code: null, nextAttemptAt: null, deliveredAt: outcome === 'delivered' ? at[i]![1] : null, leaseUntil: null },
    });
    await repo.recordAttempts([
      result(0, 'delivered', ['attempt:delivered', 'handoff:delivered']),
      result(1, 'delivered', ['attempt:delivered', 'handoff:delivered']),
      result(2, 'failed', ['attempt:failed', 'handoff:failed']),
      result(3, 'delivered', ['attempt:delivered', 'handoff:delivered']),
      result(4, 'delivered', ['attempt:delivered', 'handoff:delivered']),
      result(5, 'failed', ['attempt:failed', 'handoff:failed']),
    ]);
    expect(five('handoff:delivered')).toEqual([
      { s: 'st_a', b: 0, n: 2 },
      { s: 'st_b', b: 0, n: 1 },
      { s: 'st_b', b: FIVE, n: 1 },
    ]);
    expect(five('attempt:failed')).toEqual([
      { s: 'st_a', b: 0, n: 1 },
      { s: 'st_a', b: FIVE, n: 1 },
    ]);
  });
});
