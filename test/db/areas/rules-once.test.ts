/**
 * Two rules the backends once followed apart (found by this suite, now one rule on both): a meter that counted nothing
 * reads as absent, and an attempt is journaled only under its event's live lease.
 */
import { expect } from 'bun:test';
import { areaSuite, commit, MIN, receipt, T0, STORE, withEndpoints } from '../../fixtures/storage-rows.ts';

areaSuite('rules once on both backends', (test) => {
  test('a meter nothing was counted on stays absent from getUsage (releaseHeld without room, a commit whose receipts are all held)', async (repo) => {
    await withEndpoints(repo);
    const capacity = { meter: 'accepted_events', periodStart: T0, hardLimit: 0 };
    // Nothing to release, no room: nothing counted.
    expect(await repo.releaseHeld(STORE, capacity, T0)).toBe(0);
    expect(await repo.getUsage(STORE, T0)).toEqual({});
    // Every receipt held: nothing counted either.
    await commit(repo, [receipt({ capacity }), receipt({ capacity })]);
    expect(await repo.hasOutcome(STORE, 'held')).toBe(true);
    expect(await repo.getUsage(STORE, T0)).toEqual({});
  });

  test('journalAttempts leaves out an attempt of an event this handle holds no live lease on', async (repo) => {
    await withEndpoints(repo);
    const [unclaimed, claimed] = (await commit(repo, [receipt({ at: T0 + MIN }), receipt({ at: T0 })])).map((r) => r.event);
    // Only the second is due at T0: the first is never claimed.
    expect((await repo.claimDue(T0, 10, T0 + MIN)).map((d) => d.event.id)).toEqual([claimed!.id]);
    expect(await repo.journalAttempts([{ eventId: unclaimed!.id, number: 1, destination: 'log', startedAt: T0 + 1 }])).toEqual([]);
    // Started at or after its lease's end: the lease no longer holds.
    expect(await repo.journalAttempts([{ eventId: claimed!.id, number: 1, destination: 'log', startedAt: T0 + MIN }])).toEqual([]);
    expect(await repo.listAttempts(unclaimed!.id)).toEqual([]);
  });
});
