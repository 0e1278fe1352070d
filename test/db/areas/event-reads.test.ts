/**
 * EventReads on every backend: events listed by id descending under every EventFilter field, scoped reads,
 * attempts by number, failed authentications newest first, and the counts and sums the reliability reads use,
 * numbers as numbers and booleans as booleans.
 */
import { expect } from 'bun:test';
import type { PendingAuthFailure, Repo } from '../../../db/repo.ts';
import { runnerOf } from '../../../db/runner.ts';
import type { AuthFailureRow, EventRow, PendingReceipt } from '../../../db/types.ts';
import {
  areaSuite,
  commit,
  DAY,
  EP,
  EP2,
  MIN,
  OTHER_EP,
  OTHER_STORE,
  pad,
  receipt,
  result,
  shuffled,
  STORE,
  T0,
  withEndpoints,
} from '../../fixtures/storage-rows.ts';

/**
 * 30 receipts of STORE a minute apart (i = 1…30 at T0 + i min): EP2 for every third, the rest EP; every fifth
 * rejected, the seventh a test receipt, the others accepted. Then 3 of the other store. Ids follow receipt time.
 */
async function seed(repo: Repo): Promise<{ mine: EventRow[]; theirs: EventRow[] }> {
  await withEndpoints(repo);
  const mine = Array.from({ length: 30 }, (_, k) => {
    const i = k + 1;
    const outcome = i % 5 === 0 ? 'rejected' : i === 7 ? 'test' : 'accepted';
    return receipt({ at: T0 + i * MIN, endpointId: i % 3 === 0 ? EP2 : EP, outcome });
  });
  const theirs = [1, 2, 3].map((i) => receipt({ at: T0 + i * MIN, storeId: OTHER_STORE, endpointId: OTHER_EP }));
  await commit(repo, mine.slice(0, 17));
  await commit(repo, [...mine.slice(17), ...theirs]);
  return { mine: mine.map((r) => r.event), theirs: theirs.map((r) => r.event) };
}

/** Newest first, as listEvents returns them. */
const desc = (events: EventRow[]) => [...events].reverse();
const idsOf = (events: EventRow[]) => events.map((e) => e.id);
/** countAuthFailures' counts alone (its first and last are checked in alerts.test.ts). */
const byCount = (rows: { endpointId: string; n: number }[]) => rows.map(({ endpointId, n }) => ({ endpointId, n }));

areaSuite('EventReads', (test) => {
  test('listEvents: the store’s events, by id descending, at most `limit`, exactly as committed', async (repo) => {
    const { mine, theirs } = await seed(repo);
    expect(await repo.listEvents({ storeId: STORE, limit: 100 })).toEqual(desc(mine));
    expect(idsOf(await repo.listEvents({ storeId: STORE, limit: 10 }))).toEqual(idsOf(desc(mine).slice(0, 10)));
    expect(idsOf(await repo.listEvents({ storeId: OTHER_STORE, limit: 2 }))).toEqual(idsOf(desc(theirs).slice(0, 2)));
    expect(await repo.listEvents({ storeId: 'st_none', limit: 10 })).toEqual([]);
  });

  test('isTest reads back as a real boolean and every integer column as a number', async (repo) => {
    const { mine } = await seed(repo);
    const testEvent = (await repo.getEvent(STORE, mine[6]!.id))!;
    const normal = (await repo.getEvent(STORE, mine[0]!.id))!;
    expect([testEvent.isTest, normal.isTest]).toEqual([true, false]);
    const listed = await repo.listEvents({ storeId: STORE, limit: 100 });
    expect(new Set(listed.map((e) => typeof e.isTest))).toEqual(new Set(['boolean']));
    expect(listed.filter((e) => e.isTest).map((e) => e.id)).toEqual([mine[6]!.id]);
    for (const key of ['configVersion', 'bodyBytes', 'receivedAt', 'attempts', 'nextAttemptAt'] as const) {
      expect({ key, type: typeof normal[key] }).toEqual({ key, type: 'number' });
    }
    expect((await repo.latestEvent(STORE))?.isTest).toBe(false);
  });

  test('listEvents filters by endpoint, outcome, since (inclusive) and until (exclusive), each and together', async (repo) => {
    const { mine } = await seed(repo);
    const at = (i: number) => T0 + i * MIN;
    const expectList = async (filter: Omit<Parameters<Repo['listEvents']>[0], 'storeId'>, wanted: EventRow[]) =>
      expect(idsOf(await repo.listEvents({ storeId: STORE, ...filter }))).toEqual(idsOf(desc(wanted)));
    await expectList(
      { endpointId: EP2, limit: 100 },
      mine.filter((e) => e.endpointId === EP2),
    );
    await expectList({ endpointId: EP2, limit: 4 }, mine.filter((e) => e.endpointId === EP2).slice(-4));
    await expectList({ endpointId: OTHER_EP, limit: 100 }, []);
    await expectList(
      { outcome: 'rejected', limit: 100 },
      mine.filter((e) => e.outcome === 'rejected'),
    );
    await expectList({ outcome: 'test', limit: 100 }, [mine[6]!]);
    await expectList(
      { since: at(10), limit: 100 },
      mine.filter((e) => e.receivedAt >= at(10)),
    );
    await expectList(
      { until: at(10), limit: 100 },
      mine.filter((e) => e.receivedAt < at(10)),
    );
    await expectList({ since: at(10), until: at(20), limit: 100 }, mine.slice(9, 19));
    await expectList({ since: at(10), until: at(20), limit: 3 }, mine.slice(16, 19));
    await expectList(
      { endpointId: EP, outcome: 'accepted', since: at(4), until: at(25), limit: 100 },
      mine.filter((e) => e.endpointId === EP && e.outcome === 'accepted' && e.receivedAt >= at(4) && e.receivedAt < at(25)),
    );
  });

  test('listEvents pages by beforeId (exclusive) and bounds below by sinceId (inclusive)', async (repo) => {
    const { mine } = await seed(repo);
    const id = (i: number) => mine[i - 1]!.id;
    expect(idsOf(await repo.listEvents({ storeId: STORE, beforeId: id(10), limit: 100 }))).toEqual(idsOf(desc(mine.slice(0, 9))));
    expect(idsOf(await repo.listEvents({ storeId: STORE, sinceId: id(25), limit: 100 }))).toEqual(idsOf(desc(mine.slice(24))));
    expect(idsOf(await repo.listEvents({ storeId: STORE, sinceId: id(5), beforeId: id(9), limit: 100 }))).toEqual([id(8), id(7), id(6), id(5)]);
    expect(idsOf(await repo.listEvents({ storeId: STORE, endpointId: EP2, sinceId: id(5), beforeId: id(16), limit: 100 }))).toEqual([
      id(15),
      id(12),
      id(9),
      id(6),
    ]);
    expect(await repo.listEvents({ storeId: STORE, beforeId: id(1), limit: 100 })).toEqual([]);
    // Pages of 7 by the last id of each page give every event once, in order.
    const pages: string[][] = [];
    let beforeId: string | undefined;
    for (;;) {
      const page = idsOf(await repo.listEvents({ storeId: STORE, beforeId, limit: 7 }));
      if (!page.length) break;
      pages.push(page);
      beforeId = page.at(-1);
    }
    expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 7, 2]);
    expect(pages.flat()).toEqual(idsOf(desc(mine)));
  });

  test('getEvent and latestEvent are scoped to the store (and endpoint); another store’s id is null', async (repo) => {
    const { mine, theirs } = await seed(repo);
    expect(await repo.getEvent(STORE, mine[3]!.id)).toEqual(mine[3]!);
    expect(await repo.getEvent(OTHER_STORE, mine[3]!.id)).toBeNull();
    expect(await repo.getEvent(STORE, theirs[0]!.id)).toBeNull();
    expect(await repo.getEvent(STORE, 'evt_none')).toBeNull();
    expect(await repo.latestEvent(STORE)).toEqual(mine[29]!);
    expect(await repo.latestEvent(STORE, EP2)).toEqual(mine[29]!);
    expect(await repo.latestEvent(STORE, EP)).toEqual(mine[28]!);
    expect(await repo.latestEvent(OTHER_STORE)).toEqual(theirs[2]!);
    expect(await repo.latestEvent(STORE, OTHER_EP)).toBeNull();
    expect(await repo.latestEvent('st_none')).toBeNull();
  });

  test('listAttempts: the event’s attempts by number ascending (as numbers, not text), exactly as recorded', async (repo) => {
    await withEndpoints(repo);
    const [a, b] = await commit(repo, [receipt(), receipt()]);
    const lease = T0 + MIN;
    await repo.claimDue(T0, 10, lease);
    // Numbers journaled out of order (10 sorts before 2 as text); b's attempt is not a's.
    const numbers = [12, 2, 10, 1];
    expect(await repo.journalAttempts(numbers.map((number) => ({ eventId: a!.event.id, number, destination: 'log', startedAt: T0 + number })))).toHaveLength(4);
    expect(await repo.journalAttempts([{ eventId: b!.event.id, number: 1, destination: 'log', startedAt: T0 }])).toHaveLength(1);
    // What the typed fields found is recorded with the attempt, as given (names only).
    const fieldCounts = JSON.stringify({ found: 1, missing: ['score'], wrongType: [], bodyCut: null });
    const results = numbers.map((n) => result(a!.event.id, n, 'retry', T0 + n, { httpStatus: 500 + n, fieldCounts: n === 2 ? fieldCounts : null }));
    await repo.recordAttempts(results);
    const attempts = await repo.listAttempts(a!.event.id);
    expect(attempts.map((x) => x.number)).toEqual([1, 2, 10, 12]);
    expect(attempts).toEqual([...results].sort((x, y) => x.attempt.number - y.attempt.number).map((r) => r.attempt));
    expect(attempts.map((x) => typeof x.httpStatus)).toEqual(['number', 'number', 'number', 'number']);
    expect((await repo.listAttempts(b!.event.id)).map((x) => [x.number, x.outcome])).toEqual([[1, 'sending']]);
    expect(await repo.listAttempts('evt_none')).toEqual([]);
  });

  test('listAuthFailures: newest first (at, then id, descending), limit 100 by default, per store and endpoint', async (repo) => {
    // 120 of STORE, pairs sharing a time (af_002 and af_003 at T0 + 1 s …), EP2 for every fourth; 5 of the other store.
    const rows: AuthFailureRow[] = Array.from({ length: 120 }, (_, k) => ({
      id: `af_${pad(k + 1, 3)}`,
      storeId: STORE,
      endpointId: (k + 1) % 4 === 0 ? EP2 : EP,
      code: k % 2 ? 'SVC_AUTH_FAILED' : 'SVC_AUTH_MISSING',
      at: T0 + Math.floor((k + 1) / 2) * 1000,
      count: (k % 3) + 1,
      diagnosis: null,
    }));
    const theirs = Array.from({ length: 5 }, (_, k) => ({
      id: `af_x${k}`,
      storeId: OTHER_STORE,
      endpointId: OTHER_EP,
      code: 'SVC_AUTH_FAILED',
      at: T0 + 999_000,
      count: 1,
      diagnosis: null,
    }));
    for (const part of [shuffled(rows).slice(0, 60), [...shuffled(rows).slice(60), ...theirs]]) await repo.commitIngest([], part);
    const newest = [...rows].sort((x, y) => y.at - x.at || (x.id < y.id ? 1 : -1));
    const all = await repo.listAuthFailures(STORE);
    expect(all).toHaveLength(100);
    expect(all).toEqual(newest.slice(0, 100));
    expect(all.slice(0, 3).map((f) => f.id)).toEqual(['af_120', 'af_119', 'af_118']);
    expect([typeof all[0]!.at, typeof all[0]!.count]).toEqual(['number', 'number']);
    expect(await repo.listAuthFailures(STORE, undefined, 5)).toEqual(newest.slice(0, 5));
    expect(await repo.listAuthFailures(STORE, EP2, 7)).toEqual(newest.filter((f) => f.endpointId === EP2).slice(0, 7));
    expect(await repo.listAuthFailures(STORE, EP)).toEqual(newest.filter((f) => f.endpointId === EP).slice(0, 90));
    expect((await repo.listAuthFailures(OTHER_STORE)).map((f) => f.id)).toEqual(['af_x4', 'af_x3', 'af_x2', 'af_x1', 'af_x0']);
    expect(await repo.listAuthFailures(STORE, OTHER_EP)).toEqual([]);
  });

  test('countAuthFailures sums the rows’ counts per endpoint with `at` since `since` (inclusive), as numbers', async (repo) => {
    const f = (id: string, endpointId: string, at: number, count: number, storeId = STORE): PendingAuthFailure => ({
      id,
      storeId,
      endpointId,
      code: 'SVC_AUTH_FAILED',
      at,
      count,
    });
    await repo.commitIngest(
      [],
      [
        f('af_1', EP, T0, 1),
        f('af_2', EP, T0 + 10, 40),
        f('af_3', EP, T0 + 20, 2),
        f('af_4', EP2, T0 + 5, 7),
        f('af_5', EP2, T0 + 30, 1_000_000),
        f('af_6', OTHER_EP, T0 + 30, 3, OTHER_STORE),
      ],
    );
    const counts = async (since: number) => byCount(await repo.countAuthFailures(STORE, since)).sort((x, y) => x.endpointId.localeCompare(y.endpointId));
    expect(await counts(T0)).toEqual([
      { endpointId: EP, n: 43 },
      { endpointId: EP2, n: 1_000_007 },
    ]);
    expect(await counts(T0 + 10)).toEqual([
      { endpointId: EP, n: 42 },
      { endpointId: EP2, n: 1_000_000 },
    ]);
    expect(await counts(T0 + 21)).toEqual([{ endpointId: EP2, n: 1_000_000 }]);
    expect(await counts(T0 + 31)).toEqual([]);
    expect(byCount(await repo.countAuthFailures(OTHER_STORE, 0))).toEqual([{ endpointId: OTHER_EP, n: 3 }]);
  });

  test('hasOutcome: whether any event of the store has that outcome now', async (repo) => {
    await withEndpoints(repo);
    await commit(repo, [receipt({ outcome: 'rejected' }), receipt(), receipt({ storeId: OTHER_STORE, endpointId: OTHER_EP, outcome: 'test' })]);
    expect(await repo.hasOutcome(STORE, 'rejected')).toBe(true);
    expect(await repo.hasOutcome(STORE, 'accepted')).toBe(true);
    expect(await repo.hasOutcome(STORE, 'test')).toBe(false);
    expect(await repo.hasOutcome(OTHER_STORE, 'test')).toBe(true);
    expect(await repo.hasOutcome(OTHER_STORE, 'rejected')).toBe(false);
    // Claimed, the accepted event is queued: no longer accepted.
    await repo.claimDue(T0, 10, T0 + MIN);
    expect(await repo.hasOutcome(STORE, 'accepted')).toBe(false);
    expect(await repo.hasOutcome(STORE, 'queued')).toBe(true);
  });

  test('sumStats sums each metric from the 5-minute bucket holding `from` until now, across 5-minute, hourly and daily buckets', async (repo) => {
    await withEndpoints(repo);
    // 12:00, 12:10 (two), 14:00 and two days later at 12:00; one of the other store.
    await commit(repo, [
      receipt({ at: T0 }),
      receipt({ at: T0 + 10 * MIN }),
      receipt({ at: T0 + 10 * MIN + 1, outcome: 'rejected' }),
      receipt({ at: T0 + 120 * MIN, outcome: 'test' }),
      receipt({ at: T0 + 2 * DAY }),
      receipt({ at: T0, storeId: OTHER_STORE, endpointId: OTHER_EP }),
    ]);
    const all = await repo.sumStats(STORE, T0);
    expect(all).toEqual({ 'received:accepted': 3, 'received:rejected': 1, 'received:test': 1 });
    expect(Object.values(all).map((n) => typeof n)).toEqual(['number', 'number', 'number']);
    // From 12:04: its bucket (12:00) holds the first receipt.
    expect(await repo.sumStats(STORE, T0 + 4 * MIN)).toEqual(all);
    expect(await repo.sumStats(STORE, T0 + 5 * MIN)).toEqual({ 'received:accepted': 2, 'received:rejected': 1, 'received:test': 1 });
    // From 13:05: 5-minute buckets to 14:00, then hourly ones (14:00 holds the test receipt), then daily.
    expect(await repo.sumStats(STORE, T0 + 65 * MIN)).toEqual({ 'received:accepted': 1, 'received:test': 1 });
    expect(await repo.sumStats(STORE, T0 + DAY)).toEqual({ 'received:accepted': 1 });
    expect(await repo.sumStats(STORE, T0 + 3 * DAY)).toEqual({});
    expect(await repo.sumStats(OTHER_STORE, 0)).toEqual({ 'received:accepted': 1 });
  });

  test('pendingStats and handoffBacklog: accepted, queued and held events, and the oldest receipt among them', async (repo) => {
    await withEndpoints(repo);
    const empty = { backlog: 0, oldestReceivedAt: null };
    expect(await repo.pendingStats(STORE)).toEqual(empty);
    expect(await repo.handoffBacklog(STORE)).toEqual(empty);
    const capacity = { meter: 'accepted_events', periodStart: T0, hardLimit: 2 };
    const at = (m: number) => T0 + m * MIN;
    const [, r2, r3, , r5] = await commit(repo, [
      receipt({ at: at(1), outcome: 'rejected' }),
      receipt({ at: at(2), ext: 'x', capacity }),
      receipt({ at: at(3), endpointId: EP2, capacity }),
      receipt({ at: at(4), ext: 'x', capacity }),
      receipt({ at: at(5), endpointId: EP2, capacity }),
      receipt({ at: at(1), storeId: OTHER_STORE, endpointId: OTHER_EP }),
    ] as PendingReceipt[]);
    expect((await repo.getEvent(STORE, r5!.event.id))?.outcome).toBe('held');
    // r2 delivered, r3 back in the queue after a retry.
    await repo.claimDue(at(5), 10, at(6));
    await repo.journalAttempts([r2!, r3!].map((r) => ({ eventId: r.event.id, number: 1, destination: 'log', startedAt: at(5) })));
    await repo.recordAttempts([result(r2!.event.id, 1, 'delivered', at(5)), result(r3!.event.id, 1, 'retry', at(5))]);
    await commit(repo, [receipt({ at: at(6) })]);
    // Pending: r3 (queued, EP2), r5 (held, EP2) and the last one (accepted, EP).
    const stats = await repo.pendingStats(STORE);
    expect(stats).toEqual({ backlog: 3, oldestReceivedAt: at(3) });
    expect([typeof stats.backlog, typeof stats.oldestReceivedAt]).toEqual(['number', 'number']);
    expect(await repo.pendingStats(STORE, EP2)).toEqual({ backlog: 2, oldestReceivedAt: at(3) });
    expect(await repo.pendingStats(STORE, EP)).toEqual({ backlog: 1, oldestReceivedAt: at(6) });
    expect(await repo.pendingStats(STORE, OTHER_EP)).toEqual(empty);
    const backlog = await repo.handoffBacklog(STORE);
    expect(backlog).toEqual({ backlog: 3, oldestReceivedAt: at(3) });
    expect([typeof backlog.backlog, typeof backlog.oldestReceivedAt]).toEqual(['number', 'number']);
    expect(await repo.handoffBacklog(OTHER_STORE)).toEqual({ backlog: 1, oldestReceivedAt: at(1) });
    expect(await repo.pendingStats(OTHER_STORE)).toEqual({ backlog: 1, oldestReceivedAt: at(1) });
    // A delivered event is not in events_store_outcome_idx (db/types.ts, UNDELIVERED); queued again, as a replay
    // queues it, it is back in the index and in the backlog.
    expect(await repo.hasOutcome(STORE, 'delivered')).toBe(true);
    expect((await repo.listEvents({ storeId: STORE, outcome: 'delivered', limit: 10 })).map((e) => e.id)).toEqual([r2!.event.id]);
    await runnerOf(repo).run("UPDATE events SET outcome = 'queued', next_attempt_at = ? WHERE id = ?", [at(7), r2!.event.id]);
    expect(await repo.handoffBacklog(STORE)).toEqual({ backlog: 4, oldestReceivedAt: at(2) });
    expect(await repo.pendingStats(STORE, EP)).toEqual({ backlog: 2, oldestReceivedAt: at(2) });
    expect(await repo.hasOutcome(STORE, 'delivered')).toBe(false);
    expect(await repo.listEvents({ storeId: STORE, outcome: 'delivered', limit: 10 })).toEqual([]);
    expect((await repo.listEvents({ storeId: STORE, outcome: 'queued', limit: 10 })).map((e) => e.id)).toEqual([r3!.event.id, r2!.event.id]);
  });
});
