/** event_stats: three bucket widths, summed as 5-minute + hourly + daily ranges, equal to the 5-minute sum. */
import { Database } from 'bun:sqlite';
import { describe, expect, it } from 'bun:test';
import { STATS_WIDTHS_MS } from '../../db/types.ts';
import { migrations } from '../../db/migrations/sqlite/index.ts';
import { migrateSqlite, SqliteRepo } from '../../db/sqlite/repo.ts';

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
    const repo = new SqliteRepo(db);

    const totals = db.query('SELECT width, sum(n) AS n FROM event_stats GROUP BY width ORDER BY width').all() as { width: number; n: number }[];
    expect(totals.map((r) => r.width)).toEqual([...STATS_WIDTHS_MS]);
    expect(new Set(totals.map((r) => r.n)).size).toBe(1);

    const bruteForce = (from: number) =>
      Object.fromEntries(
        (db.query('SELECT metric, sum(n) AS n FROM event_stats WHERE width = ? AND bucket >= ? GROUP BY metric').all(FIVE, from - (from % FIVE)) as { metric: string; n: number }[]).map((r) => [r.metric, r.n]),
      );
    // Windows that start on and off hour and day boundaries.
    for (const from of [end - 3600_000, end - DAY, end - 7 * DAY, end - 7 * DAY - 17 * 60_000, Date.UTC(2026, 10, 15), Date.UTC(2026, 10, 15, 9)]) {
      expect(await repo.sumStats('st_1', from)).toEqual(bruteForce(from));
    }
  });
});
