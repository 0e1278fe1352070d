/**
 * Bulk replay's storage, written once for both dialects (db/areas/bulk-replay.ts), run on each: what a filter counts and
 * leaves out, the sample and the split point, and one requeue within the preview's bound that clears the lease
 * (PostgreSQL's lease token too).
 */
import { describe, expect, it } from 'bun:test';
import type { BulkReplayFilter, BulkReplayStore } from '../../db/areas/bulk-replay.ts';
import type { Repo } from '../../db/repo.ts';
import type { EventRow } from '../../db/types.ts';
import { backends } from '../fixtures/storage.ts';
import { eventRow, storeRow } from '../helpers.ts';
import { runnerOf } from '../../db/runner.ts';

const STORE = 'st_01jz0000000000000000000000';
const OTHER_STORE = 'st_01jz0000000000000000000001';
const EP = 'ep_01jz0000000000000000000000';
const EP2 = 'ep_01jz0000000000000000000002';
const T0 = Date.parse('2026-11-25T12:00:00Z');
const MIN = 60_000;

const store = (id: string, shopDomain: string) =>
  storeRow({ id, shopDomain, platformAccountId: 'a', installationId: 'i', credentialMode: 'static', createdAt: T0, updatedAt: T0 });

/** Finished events, one a minute from T0: failed unless said otherwise, last attempted a second after receipt. */
const ev = (n: number, fields: Partial<EventRow> = {}) => {
  const receivedAt = T0 + n * MIN;
  const event = eventRow({
    id: `evt_0000000${n.toString().padStart(2, '0')}`,
    storeId: STORE,
    endpointId: EP,
    receivedAt,
    outcome: 'failed',
    code: 'SVC_HANDOFF_REJECTED',
    attempts: 1,
    lastAttemptAt: receivedAt + 1000,
    nextAttemptAt: null,
    ...fields,
  });
  return { event, body: new TextEncoder().encode('{}'), bodyExpiresAt: receivedAt + 30 * 86400_000, dedupeSince: null };
};

async function withRepo(open: () => Promise<Repo>, fn: (repo: Repo, bulk: BulkReplayStore) => Promise<void>) {
  const repo = await open();
  try {
    await repo.insertStore(store(STORE, 'demo.myshopify.com'));
    await repo.insertStore(store(OTHER_STORE, 'other.myshopify.com'));
    await repo.commitIngest(
      [
        ev(1),
        ev(2, { endpointId: EP2 }),
        ev(3, { code: 'SVC_HANDOFF_RETRY_EXHAUSTED' }),
        ev(4, { bodyRetention: 'expired' }),
        ev(5, { outcome: 'delivered', code: null }),
        ev(6, { outcome: 'rejected', code: 'SVC_REQUIRED_PATH_MISSING', attempts: 0, lastAttemptAt: null }),
        ev(7, { storeId: OTHER_STORE }),
        ev(8),
      ],
      [],
    );
    await fn(repo, repo.bulkReplays);
  } finally {
    await repo.close();
  }
}

const failed = (f: Partial<BulkReplayFilter> = {}): BulkReplayFilter => ({ storeId: STORE, outcome: 'failed', retainedAfter: T0 - 86400_000, ...f });

for (const backend of backends()) {
  describe(`bulk replay storage (${backend.name})`, () => {
    it("counts the store's matching events, the ones without a body apart, with their window and the newest id", async () => {
      await withRepo(backend.open, async (_repo, bulk) => {
        expect(await bulk.counts(failed())).toEqual({
          count: 4,
          bodyNotRetained: 1,
          oldestReceivedAt: T0 + MIN,
          newestReceivedAt: T0 + 8 * MIN,
          throughId: 'evt_000000008',
        });
        expect((await bulk.counts(failed({ code: 'SVC_HANDOFF_RETRY_EXHAUSTED' }))).count).toBe(1);
        expect((await bulk.counts(failed({ endpointId: EP2 }))).throughId).toBe('evt_000000002');
        const window = await bulk.counts(failed({ since: T0 + 2 * MIN, until: T0 + 8 * MIN }));
        expect(window).toMatchObject({ count: 2, bodyNotRetained: 1, oldestReceivedAt: T0 + 2 * MIN, newestReceivedAt: T0 + 3 * MIN });
        // Received before the retention cut-off: the body is gone although the row says retained.
        expect(await bulk.counts(failed({ retainedAfter: T0 + 2 * MIN }))).toMatchObject({ count: 2, bodyNotRetained: 3, oldestReceivedAt: T0 + 3 * MIN });
        expect(await bulk.counts(failed({ outcome: 'no_workflow' }))).toEqual({
          count: 0,
          bodyNotRetained: 0,
          oldestReceivedAt: null,
          newestReceivedAt: null,
          throughId: null,
        });
      });
    });

    it('samples the oldest, lists their endpoints, and finds where to split a window', async () => {
      await withRepo(backend.open, async (_repo, bulk) => {
        const sample = await bulk.sample(failed(), 2);
        expect(sample).toEqual([
          { id: 'evt_000000001', endpointId: EP, outcome: 'failed', code: 'SVC_HANDOFF_REJECTED', receivedAt: T0 + MIN },
          { id: 'evt_000000002', endpointId: EP2, outcome: 'failed', code: 'SVC_HANDOFF_REJECTED', receivedAt: T0 + 2 * MIN },
        ]);
        expect(await bulk.endpointIds(failed())).toEqual([EP, EP2].sort());
        expect(await bulk.receivedAtAfter(failed(), 2)).toBe(T0 + 3 * MIN);
        expect(await bulk.receivedAtAfter(failed(), 4)).toBeNull();
      });
    });

    it('requeues in one statement only what the bound covers: not newer ids, not events attempted since', async () => {
      await withRepo(backend.open, async (repo, bulk) => {
        if (backend.name === 'postgres')
          await runnerOf(repo).run("UPDATE events SET lease_token = 'stale', lease_until = ? WHERE id = ?", [T0, 'evt_000000001']);
        // evt 3 was attempted again after the preview (a single replay that failed again): skipped.
        await runnerOf(repo).run('UPDATE events SET last_attempt_at = ? WHERE id = ?', [T0 + 20 * MIN, 'evt_000000003']);
        const now = T0 + 30 * MIN;
        const queued = await bulk.requeue(failed(), { throughId: 'evt_000000002', lastAttemptAtMost: T0 + 10 * MIN }, now);
        expect(queued).toBe(2);
        for (const id of ['evt_000000001', 'evt_000000002']) {
          expect(await repo.getEvent(STORE, id)).toMatchObject({ outcome: 'queued', code: null, nextAttemptAt: now, leaseUntil: null, attempts: 1 });
        }
        if (backend.name === 'postgres') {
          expect(await runnerOf(repo).all('SELECT lease_token AS "t" FROM events WHERE id = ?', ['evt_000000001'])).toEqual([{ t: null }]);
        }
        expect((await repo.getEvent(STORE, 'evt_000000008'))!.outcome).toBe('failed'); // newer than the bound
        expect((await repo.getEvent(STORE, 'evt_000000003'))!.outcome).toBe('failed'); // attempted since
        expect((await repo.getEvent(STORE, 'evt_000000004'))!.outcome).toBe('failed'); // no body
        expect((await repo.getEvent(OTHER_STORE, 'evt_000000007'))!.outcome).toBe('failed'); // another store
        // Already queued: a second requeue of the same bound changes nothing.
        expect(await bulk.requeue(failed(), { throughId: 'evt_000000002', lastAttemptAtMost: T0 + 10 * MIN }, now)).toBe(0);
        expect(await repo.nextDueAt()).toBe(now);
      });
    });
  });
}
