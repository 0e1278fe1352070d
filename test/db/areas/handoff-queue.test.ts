/**
 * HandoffQueue on every backend: due events claimed earliest first under a lease, attempts journaled before their
 * sends and recorded (a stale worker fenced), the worker's next wake-up, held events released into room, retention,
 * and the retained body.
 */
import { expect } from 'bun:test';
import type { Repo } from '../../../db/repo.ts';
import {
  areaSuite,
  commit,
  DAY,
  endpoint,
  EP,
  EP2,
  MIN,
  OTHER_EP,
  OTHER_STORE,
  receipt,
  result,
  store,
  STORE,
  T0,
  withEndpoints,
} from '../../fixtures/storage-rows.ts';

const sorted = (ids: string[]) => [...ids].sort();
const claimIds = async (repo: Repo, now: number, limit: number, leaseUntil: number) =>
  sorted((await repo.claimDue(now, limit, leaseUntil)).map((d) => d.event.id));
const start = (eventId: string, number: number, startedAt: number) => ({ eventId, number, destination: 'log', startedAt });

areaSuite('HandoffQueue', (test) => {
  test('claimDue leases the earliest due events, at most `limit`, with their endpoint and store; nobody else takes them', async (repo) => {
    await withEndpoints(repo);
    // Due times out of id order: e[0] at +5 s, e[1] at +1 s, … ; two never due (rejected, held).
    const offsets = [5, 1, 7, 3, 8, 2, 6, 4];
    const e = (
      await commit(
        repo,
        offsets.map((s, i) => receipt({ at: T0 + s * 1000, endpointId: i % 2 ? EP2 : EP })),
      )
    ).map((r) => r.event);
    await commit(repo, [receipt({ at: T0, outcome: 'rejected' }), receipt({ at: T0, capacity: { meter: 'accepted_events', periodStart: T0, hardLimit: 0 } })]);
    const lease = T0 + MIN;
    const first = await repo.claimDue(T0 + 6000, 3, lease);
    // Due by +6 s: +1, +2, +3 first (e[1], e[5], e[3]).
    expect(sorted(first.map((d) => d.event.id))).toEqual(sorted([e[1]!.id, e[5]!.id, e[3]!.id]));
    for (const d of first) {
      expect(d.event).toEqual({ ...e.find((x) => x.id === d.event.id)!, outcome: 'queued', leaseUntil: lease });
      expect(d.endpoint).toEqual(endpoint({ id: d.event.endpointId }));
      expect(d.store).toEqual(store());
    }
    expect(await repo.getEvent(STORE, e[1]!.id)).toMatchObject({ outcome: 'queued', leaseUntil: lease });
    // The rest due by +6 s; the leased three are not taken again, +7 and +8 are not due.
    expect(await claimIds(repo, T0 + 6000, 10, lease)).toEqual(sorted([e[0]!.id, e[6]!.id, e[7]!.id]));
    expect(await repo.claimDue(T0 + 6000, 10, lease)).toEqual([]);
    // Once the leases end (lease_until <= now) every accepted event is due again; rejected and held never are.
    expect(await claimIds(repo, lease, 100, lease + MIN)).toEqual(sorted(e.map((x) => x.id)));
    expect((await repo.getEvent(STORE, e[4]!.id))?.leaseUntil).toBe(lease + MIN);
  });

  test('journalAttempts journals `sending` attempts and leaves out a number already journaled', async (repo) => {
    await withEndpoints(repo);
    const [a, b] = (await commit(repo, [receipt(), receipt()])).map((r) => r.event);
    await repo.claimDue(T0, 10, T0 + MIN);
    expect(await repo.journalAttempts([])).toEqual([]);
    expect(await repo.journalAttempts([start(a!.id, 1, T0 + 1), start(b!.id, 1, T0 + 1)])).toEqual([start(a!.id, 1, T0 + 1), start(b!.id, 1, T0 + 1)]);
    expect(await repo.listAttempts(a!.id)).toEqual([
      {
        eventId: a!.id,
        number: 1,
        destination: 'log',
        startedAt: T0 + 1,
        finishedAt: T0 + 1,
        outcome: 'sending',
        httpStatus: null,
        code: null,
        message: null,
        retryAt: null,
        fieldCounts: null,
      },
    ]);
    // Number 1 of a again (another worker has it) is left out; number 2 of b is journaled.
    expect(await repo.journalAttempts([start(a!.id, 1, T0 + 2), start(b!.id, 2, T0 + 2)])).toEqual([start(b!.id, 2, T0 + 2)]);
    expect((await repo.listAttempts(a!.id)).map((x) => x.startedAt)).toEqual([T0 + 1]);
  });

  test('recordAttempts closes attempts and updates their events: delivered, retried, or unsent (removed, event waits)', async (repo) => {
    await withEndpoints(repo);
    const [d, r, u] = (await commit(repo, [receipt(), receipt(), receipt()])).map((x) => x.event);
    await repo.claimDue(T0, 10, T0 + MIN);
    await repo.journalAttempts([d, r, u].map((e) => start(e!.id, 1, T0 + 1)));
    const delivered = result(d!.id, 1, 'delivered', T0 + 1, { httpStatus: 200 });
    const retried = result(r!.id, 1, 'retry', T0 + 1, { httpStatus: 503, retryAt: T0 + 30_000 });
    const unsent = { ...result(u!.id, 1, 'retry', T0 + 1, { retryAt: T0 + 90_000, metrics: ['handoff:paused'] }), unsent: true };
    await repo.recordAttempts([delivered, retried, unsent]);
    expect(await repo.getEvent(STORE, d!.id)).toEqual({
      ...d!,
      outcome: 'delivered',
      attempts: 1,
      lastAttemptAt: T0 + 6,
      nextAttemptAt: null,
      leaseUntil: null,
      deliveredAt: T0 + 6,
    });
    expect(await repo.getEvent(STORE, r!.id)).toEqual({
      ...r!,
      outcome: 'queued',
      code: 'server_error',
      attempts: 1,
      lastAttemptAt: T0 + 6,
      nextAttemptAt: T0 + 30_000,
      leaseUntil: null,
    });
    // Nothing was sent: the journaled attempt is gone, the count unchanged, the event queued until its next time.
    expect(await repo.getEvent(STORE, u!.id)).toEqual({ ...u!, outcome: 'queued', attempts: 0, nextAttemptAt: T0 + 90_000, leaseUntil: null });
    expect(await repo.listAttempts(u!.id)).toEqual([]);
    expect(await repo.listAttempts(d!.id)).toEqual([delivered.attempt]);
    expect(await repo.listAttempts(r!.id)).toEqual([retried.attempt]);
    // Each recorded attempt's metrics counted once, in the bucket of its finish.
    const stats = await repo.sumStats(STORE, T0);
    expect({ delivered: stats['handoff:delivered'], retry: stats['handoff:retry'], paused: stats['handoff:paused'] }).toEqual({
      delivered: 1,
      retry: 1,
      paused: 1,
    });
    // The retried event is due again at its time, not before.
    expect(await repo.claimDue(T0 + 29_999, 10, T0 + 2 * MIN)).toEqual([]);
    expect(await claimIds(repo, T0 + 30_000, 10, T0 + 2 * MIN)).toEqual([r!.id]);
  });

  test('a claim after a lease ran out ends a `sending` attempt `unknown` and counts it; the stale worker’s record writes nothing', async (repo) => {
    await withEndpoints(repo);
    const [a, b] = (await commit(repo, [receipt(), receipt()])).map((x) => x.event);
    await repo.claimDue(T0, 10, T0 + MIN);
    await repo.journalAttempts([start(a!.id, 1, T0 + 1), start(b!.id, 1, T0 + 1)]);
    await repo.recordAttempts([result(a!.id, 1, 'delivered', T0 + 2)]);
    // b's worker went silent mid-send; once its lease ends a claim takes b and marks the attempt unknown.
    const again = await repo.claimDue(T0 + MIN, 10, T0 + 2 * MIN);
    expect(again.map((x) => [x.event.id, x.event.attempts, x.event.lastAttemptAt])).toEqual([[b!.id, 1, T0 + MIN]]);
    expect((await repo.listAttempts(b!.id)).map((x) => [x.number, x.outcome, x.code, x.finishedAt])).toEqual([[1, 'unknown', 'unknown', T0 + MIN]]);
    expect(await repo.getEvent(STORE, b!.id)).toMatchObject({ attempts: 1, lastAttemptAt: T0 + MIN, outcome: 'queued', leaseUntil: T0 + 2 * MIN });
    // The stale worker's late record: fenced.
    await repo.recordAttempts([result(b!.id, 1, 'delivered', T0 + MIN + 5)]);
    expect(await repo.getEvent(STORE, b!.id)).toMatchObject({ outcome: 'queued', deliveredAt: null, leaseUntil: T0 + 2 * MIN });
    expect((await repo.listAttempts(b!.id)).map((x) => x.outcome)).toEqual(['unknown']);
    // The new holder sends attempt 2 once.
    expect(await repo.journalAttempts([start(b!.id, 2, T0 + MIN + 1)])).toHaveLength(1);
    expect(await repo.journalAttempts([start(b!.id, 2, T0 + MIN + 2)])).toEqual([]);
    await repo.recordAttempts([result(b!.id, 2, 'delivered', T0 + MIN + 3)]);
    expect(await repo.getEvent(STORE, b!.id)).toMatchObject({ outcome: 'delivered', attempts: 2, deliveredAt: T0 + MIN + 8 });
    expect((await repo.listAttempts(b!.id)).map((x) => [x.number, x.outcome])).toEqual([
      [1, 'unknown'],
      [2, 'delivered'],
    ]);
    expect((await repo.sumStats(STORE, T0))['handoff:delivered']).toBe(2);
  });

  test('a local send’s record (unjournaled) writes its attempt once while the lease it was sent under holds, and nothing once another claim has the event', async (repo) => {
    await withEndpoints(repo);
    const [a, b, u] = (await commit(repo, [receipt(), receipt(), receipt()])).map((x) => x.event);
    const lease = { leaseUntil: T0 + MIN };
    await repo.claimDue(T0, 10, lease.leaseUntil);
    // No journal entry before these sends: delivered and unsent are recorded whole.
    const delivered = { ...result(a!.id, 1, 'delivered', T0 + 1), unjournaled: lease };
    const unsent = { ...result(u!.id, 1, 'retry', T0 + 1, { retryAt: T0 + 90_000, metrics: ['handoff:paused'] }), unsent: true, unjournaled: lease };
    await repo.recordAttempts([delivered, unsent]);
    expect(await repo.getEvent(STORE, a!.id)).toMatchObject({ outcome: 'delivered', attempts: 1, deliveredAt: T0 + 6, leaseUntil: null, nextAttemptAt: null });
    expect(await repo.listAttempts(a!.id)).toEqual([delivered.attempt]);
    expect(await repo.getEvent(STORE, u!.id)).toMatchObject({ outcome: 'queued', attempts: 0, nextAttemptAt: T0 + 90_000, leaseUntil: null });
    expect(await repo.listAttempts(u!.id)).toEqual([]);
    // A record arriving again (a repeated round) finds the lease gone: nothing more is written.
    await repo.recordAttempts([delivered]);
    expect(await repo.listAttempts(a!.id)).toHaveLength(1);
    // b's lease ran out and a claim took it under another lease: the first worker's late record is fenced.
    await repo.claimDue(T0 + MIN, 10, T0 + 2 * MIN);
    await repo.recordAttempts([{ ...result(b!.id, 1, 'delivered', T0 + MIN + 1), unjournaled: lease }]);
    expect(await repo.getEvent(STORE, b!.id)).toMatchObject({ outcome: 'queued', attempts: 0, deliveredAt: null, leaseUntil: T0 + 2 * MIN });
    expect(await repo.listAttempts(b!.id)).toEqual([]);
    // The new holder's record goes through, once.
    await repo.recordAttempts([{ ...result(b!.id, 1, 'delivered', T0 + MIN + 2), unjournaled: { leaseUntil: T0 + 2 * MIN } }]);
    expect(await repo.getEvent(STORE, b!.id)).toMatchObject({ outcome: 'delivered', attempts: 1 });
    expect((await repo.listAttempts(b!.id)).map((x) => x.outcome)).toEqual(['delivered']);
    const stats = await repo.sumStats(STORE, T0);
    expect({ delivered: stats['handoff:delivered'], paused: stats['handoff:paused'] }).toEqual({ delivered: 2, paused: 1 });
  });

  test('nextDueAt: null without a pending event, else the earliest next attempt; done, rejected and held events do not count', async (repo) => {
    await withEndpoints(repo);
    expect(await repo.nextDueAt()).toBeNull();
    await commit(repo, [receipt({ outcome: 'rejected' }), receipt({ at: T0, capacity: { meter: 'accepted_events', periodStart: T0, hardLimit: 0 } })]);
    expect(await repo.nextDueAt()).toBeNull();
    await commit(repo, [receipt({ at: T0 + 7000 }), receipt({ at: T0 + 3000, storeId: OTHER_STORE, endpointId: OTHER_EP }), receipt({ at: T0 + 5000 })]);
    const next = await repo.nextDueAt();
    expect(next).toBe(T0 + 3000);
    expect(typeof next).toBe('number');
  });

  test('nextDueAt leaves out events under a lease; a retried one counts again at its next attempt', async (repo) => {
    await withEndpoints(repo);
    const [a, b] = (await commit(repo, [receipt({ at: T0 }), receipt({ at: T0 + 1000 })])).map((x) => x.event);
    expect(await repo.nextDueAt()).toBe(T0);
    // Both claimed: none is counted while leased.
    await repo.claimDue(T0 + 1000, 10, T0 + MIN);
    expect(await repo.nextDueAt()).toBeNull();
    const c = (await commit(repo, [receipt({ at: T0 + 9000 })]))[0]!.event;
    expect(await repo.nextDueAt()).toBe(c.nextAttemptAt);
    await repo.journalAttempts([start(a!.id, 1, T0 + 2000), start(b!.id, 1, T0 + 2000)]);
    await repo.recordAttempts([result(a!.id, 1, 'retry', T0 + 2000, { retryAt: T0 + 4000 }), result(b!.id, 1, 'delivered', T0 + 2000)]);
    expect(await repo.nextDueAt()).toBe(T0 + 4000);
  });

  test('releaseHeld queues the store’s oldest held events into the meter’s room and counts them; none without room', async (repo) => {
    await withEndpoints(repo);
    const capacity = { meter: 'accepted_events', periodStart: T0, hardLimit: 2 };
    const events = (
      await commit(
        repo,
        Array.from({ length: 8 }, (_, i) => receipt({ at: T0 + i * 1000, capacity })),
      )
    ).map((r) => r.event);
    await commit(repo, [receipt({ storeId: OTHER_STORE, endpointId: OTHER_EP, capacity: { ...capacity, hardLimit: 0 } })]);
    const held = events.slice(2);
    const outcomes = async () => (await repo.listEvents({ storeId: STORE, limit: 100 })).reverse().map((e) => e.outcome);
    expect(await outcomes()).toEqual(['accepted', 'accepted', 'held', 'held', 'held', 'held', 'held', 'held']);
    expect(await repo.getEvent(STORE, held[0]!.id)).toMatchObject({ code: 'SVC_OVER_CAPACITY', nextAttemptAt: null });
    expect(await repo.releaseHeld(STORE, capacity, T0 + DAY)).toBe(0);
    // Room for 3 more: the three oldest held, due now, their code cleared, counted on the meter.
    const released = await repo.releaseHeld(STORE, { ...capacity, hardLimit: 5 }, T0 + DAY);
    expect(released).toBe(3);
    expect(await outcomes()).toEqual(['accepted', 'accepted', 'accepted', 'accepted', 'accepted', 'held', 'held', 'held']);
    expect(await repo.getEvent(STORE, held[0]!.id)).toEqual({ ...held[0]!, outcome: 'accepted', code: null, nextAttemptAt: T0 + DAY });
    expect((await repo.getUsage(STORE, T0)).accepted_events).toBe(5);
    // More room than held events: the rest, and only this store's.
    expect(await repo.releaseHeld(STORE, { ...capacity, hardLimit: 100 }, T0 + DAY + 1)).toBe(3);
    expect((await repo.getUsage(STORE, T0)).accepted_events).toBe(8);
    expect(await repo.hasOutcome(STORE, 'held')).toBe(false);
    expect(await repo.hasOutcome(OTHER_STORE, 'held')).toBe(true);
    expect(await repo.releaseHeld(STORE, { ...capacity, hardLimit: 100 }, T0 + DAY + 2)).toBe(0);
    // The released events are due at their release.
    expect(await claimIds(repo, T0 + DAY, 100, T0 + DAY + MIN)).toEqual(sorted(events.slice(0, 5).map((e) => e.id)));
  });

  test('sweepExpired deletes expired bodies and old idempotency keys, at most `limit` of each per call; receipts stay', async (repo) => {
    await withEndpoints(repo);
    // Bodies expire in the order they were stored (one box-wide retention): +1 … +6 days.
    const events = (
      await commit(
        repo,
        Array.from({ length: 6 }, (_, i) => receipt({ at: T0 + i, bodyExpiresAt: T0 + (i + 1) * DAY })),
      )
    ).map((r) => r.event);
    for (let i = 0; i < 5; i++) {
      await repo.putIdempotency({
        storeId: STORE,
        key: `k${i}`,
        operationId: 'op',
        requestHash: 'h',
        status: 200,
        response: '{}',
        createdAt: T0 + i * 1000,
        owner: null,
      });
    }
    // Expired at +3 days (inclusive): three bodies; keys created before +3 s: three.
    const swept = await repo.sweepExpired(T0 + 3 * DAY, T0 + 3000, 2);
    expect(swept).toEqual({ bodies: 2, idempotencyKeys: 2 });
    expect(await repo.sweepExpired(T0 + 3 * DAY, T0 + 3000, 2)).toEqual({ bodies: 1, idempotencyKeys: 1 });
    expect(await repo.sweepExpired(T0 + 3 * DAY, T0 + 3000, 2)).toEqual({ bodies: 0, idempotencyKeys: 0 });
    const bodies = await Promise.all(events.map((e) => repo.getEventBody(e.id)));
    expect(bodies.map((b) => b !== null)).toEqual([false, false, false, true, true, true]);
    expect(await Promise.all(['k0', 'k1', 'k2', 'k3', 'k4'].map(async (k) => (await repo.getIdempotency(STORE, k, 0)) !== null))).toEqual([
      false,
      false,
      false,
      true,
      true,
    ]);
    // The receipts outlive their bodies.
    expect(await repo.getEvent(STORE, events[0]!.id)).toEqual(events[0]!);
    expect(await repo.sweepExpired(T0 + 10 * DAY, T0 + DAY, 100)).toEqual({ bodies: 3, idempotencyKeys: 2 });
    expect((await repo.listEvents({ storeId: STORE, limit: 100 })).length).toBe(6);
  });

  test('getEventBody returns the exact retained bytes; null for an unknown event and for receipts that kept none', async (repo) => {
    await withEndpoints(repo);
    const bytes = new Uint8Array([0, 255, 1, 254, 0x7b, 0x7d, 0, 0x80]);
    const [binary, text, dup, rejected] = await commit(repo, [
      receipt({ body: bytes, ext: 'x-1' }),
      receipt({ body: new TextEncoder().encode('{"order":{"id":4501},"note":"é"}') }),
      receipt({ ext: 'x-1' }),
      receipt({ outcome: 'rejected' }),
    ]);
    const read = await repo.getEventBody(binary!.event.id);
    expect(read).toBeInstanceOf(Uint8Array);
    expect(Array.from(read!)).toEqual(Array.from(bytes));
    expect(new TextDecoder().decode((await repo.getEventBody(text!.event.id))!)).toBe('{"order":{"id":4501},"note":"é"}');
    expect((await repo.getEvent(STORE, dup!.event.id))?.outcome).toBe('duplicate_suppressed');
    expect(await repo.getEventBody(dup!.event.id)).toBeNull();
    expect(await repo.getEventBody(rejected!.event.id)).toBeNull();
    expect(await repo.getEventBody('evt_none')).toBeNull();
  });
});
