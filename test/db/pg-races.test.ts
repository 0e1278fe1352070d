/**
 * Two storage handles on one PostgreSQL database, as two `serve` instances would hold them: the database, not
 * process memory, keeps claims single, dedupe to one winner and meters under their cap. Runs only when
 * HOOKRELAY_TEST_DATABASE_URL is set (CI sets it).
 */
import { describe, expect, it } from 'bun:test';
import { migratePg, openPgPool } from '../../db/pg/repo.ts';
import type { Repo } from '../../db/repo.ts';
import type { PendingReceipt } from '../../db/types.ts';
import { endpoint } from '../fixtures/storage-rows.ts';
import { backends, TEST_DATABASE_URL, testSchema } from '../fixtures/storage.ts';
import { eventRow, storeRow } from '../helpers.ts';

const STORE = 'st_01jz0000000000000000000000';
const EP = 'ep_01jz0000000000000000000000';
const T0 = Date.parse('2026-06-17T12:00:00Z');
const pgBackend = backends().find((b) => b.name === 'postgres');

let seq = 0;
function receipt(ext: string | null, capacity: PendingReceipt['capacity'] = null, tag = 'a'): PendingReceipt {
  const id = `evt_${tag}${String(++seq).padStart(8, '0')}`;
  return {
    event: eventRow({ id, storeId: STORE, endpointId: EP, outcome: 'accepted', externalEventId: ext, receivedAt: T0, nextAttemptAt: T0 }),
    body: new TextEncoder().encode('{}'),
    bodyExpiresAt: T0 + 86400_000,
    dedupeSince: T0 - 86400_000,
    capacity,
  };
}

async function pair(): Promise<[Repo, Repo]> {
  const a = await pgBackend!.open();
  const b = await pgBackend!.peer!();
  await a.insertStore(storeRow({ id: STORE, plan: 'free', createdAt: T0 }));
  await a.insertEndpoint(endpoint({ id: EP, storeId: STORE, createdAt: T0, updatedAt: T0 }), {});
  return [a, b];
}

describe.if(!!TEST_DATABASE_URL)('two instances on one PostgreSQL', () => {
  it('migrations started at once by four instances apply once', async () => {
    const schema = testSchema();
    const pools = Array.from({ length: 4 }, () => openPgPool({ url: TEST_DATABASE_URL!, schema, max: 2 }));
    try {
      const applied = await Promise.all(pools.map((p) => migratePg(p, undefined, schema)));
      expect(applied.flat()).toHaveLength(applied.find((a) => a.length)!.length);
      expect(applied.filter((a) => a.length)).toHaveLength(1);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('concurrent claims never hand one event to both', async () => {
    const [a, b] = await pair();
    try {
      for (let i = 0; i < 4; i++)
        await a.commitIngest(
          Array.from({ length: 50 }, () => receipt(null)),
          [],
        );
      const got: string[][] = [[], []];
      await Promise.all(
        [a, b].map(async (repo, k) => {
          for (;;) {
            const due = await repo.claimDue(T0, 7, T0 + 600_000);
            if (!due.length) return;
            got[k]!.push(...due.map((d) => d.event.id));
          }
        }),
      );
      const all = [...got[0]!, ...got[1]!];
      expect(all).toHaveLength(200);
      expect(new Set(all).size).toBe(200);
      expect(got[0]!.length).toBeGreaterThan(0);
      expect(got[1]!.length).toBeGreaterThan(0);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('the same external id received by both at once is accepted exactly once', async () => {
    const [a, b] = await pair();
    try {
      const ids = Array.from({ length: 30 }, (_, i) => `ext-${i}`);
      const results = await Promise.all([
        ...ids.map((ext) => a.commitIngest([receipt(ext, null, 'a')], [])),
        ...ids.map((ext) => b.commitIngest([receipt(ext, null, 'b')], [])),
      ]);
      const outcomes = results.flat();
      expect(outcomes.filter((o) => o.outcome === 'accepted')).toHaveLength(30);
      expect(outcomes.filter((o) => o.outcome === 'duplicate_suppressed')).toHaveLength(30);
      const accepted = new Set(outcomes.filter((o) => o.outcome === 'accepted').map((o) => o.eventId));
      for (const o of outcomes.filter((x) => x.outcome === 'duplicate_suppressed')) expect(accepted.has(o.duplicateOf!)).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('the accepted-events meter never passes its cap when both commit at once', async () => {
    const [a, b] = await pair();
    try {
      const capacity = { meter: 'accepted_events', periodStart: T0, hardLimit: 50 };
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          (i % 2 ? a : b).commitIngest(
            Array.from({ length: 5 }, () => receipt(null, capacity)),
            [],
          ),
        ),
      );
      const outcomes = results.flat().map((o) => o.outcome);
      expect(outcomes.filter((o) => o === 'accepted')).toHaveLength(50);
      expect(outcomes.filter((o) => o === 'held')).toHaveLength(30);
      expect((await b.getUsage(STORE, T0)).accepted_events).toBe(50);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('commits holding receipts of the same stores in opposite orders never deadlock: meter rows are locked in one order', async () => {
    const [a, b] = await pair();
    const OTHER = 'st_01jz0000000000000000000001';
    const EP2 = 'ep_01jz0000000000000000000001';
    try {
      await a.insertStore(storeRow({ id: OTHER, shopDomain: 'other.myshopify.com', plan: 'free', createdAt: T0 }));
      await a.insertEndpoint(endpoint({ id: EP2, storeId: OTHER, createdAt: T0, updatedAt: T0 }), {});
      const capacity = { meter: 'accepted_events', periodStart: T0, hardLimit: 1000 };
      const of = (storeId: string, endpointId: string) => {
        const r = receipt(null, capacity);
        return { ...r, event: { ...r.event, storeId, endpointId } };
      };
      const results = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).commitIngest(i % 2 ? [of(STORE, EP), of(OTHER, EP2)] : [of(OTHER, EP2), of(STORE, EP)], [])),
      );
      expect(results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason).slice(0, 120)] : []))).toEqual([]);
      expect((await b.getUsage(STORE, T0)).accepted_events).toBe(40);
      expect((await b.getUsage(OTHER, T0)).accepted_events).toBe(40);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('budgets spent for the same stores at once by both, in opposite orders, never deadlock and never spend one version twice', async () => {
    const [a, b] = await pair();
    const ids = Array.from({ length: 20 }, (_, i) => `st_01jz00000000000000000001${String(i).padStart(2, '0')}`);
    try {
      for (const [i, id] of ids.entries()) {
        await a.insertStore(storeRow({ id, shopDomain: `spend-${i}.myshopify.com`, plan: 'free', createdAt: T0 }));
        await a.links.observeBudget(id, { max: 100, available: 100, rate: 10, cost: 10 }, T0);
      }
      // Each spend is worked out from the versions just read, as a round's is; half the spends list the stores backwards.
      const spend = async (repo: Repo, backwards: boolean) => {
        const read = await repo.links.getMany(backwards ? [...ids].reverse() : ids);
        return repo.links.spendBudgets(read.map((l) => ({ storeId: l.storeId, version: l.budgetVersion, available: 0, at: T0, horizon: null })));
      };
      const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => spend(i % 2 ? a : b, i % 4 < 2)));
      expect(results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason).slice(0, 120)] : []))).toEqual([]);
      // Every spend that reported a store moved its version by one, and only those did: no version was spent twice.
      const wins = new Map(ids.map((id) => [id, 0]));
      for (const r of results) if (r.status === 'fulfilled') for (const id of r.value) wins.set(id, wins.get(id)! + 1);
      const start = 1; // observeBudget's write
      for (const l of await b.links.getMany(ids)) expect(l.budgetVersion - start).toBe(wins.get(l.storeId)!);
      expect([...wins.values()].every((n) => n >= 1)).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('an expired lease is reclaimed by the other instance; the stale holder can neither journal nor record', async () => {
    const [a, b] = await pair();
    try {
      const [r] = [receipt(null)];
      await a.commitIngest([r!], []);
      const [held] = await a.claimDue(T0, 1, T0 + 1000);
      expect(await a.journalAttempts([{ eventId: held!.event.id, number: 1, destination: 'log', startedAt: T0 + 10 }])).toHaveLength(1);
      // a goes silent past its lease; b takes the event, finds the attempt `sending` and ends it `unknown`.
      const [taken] = await b.claimDue(T0 + 1000, 1, T0 + 60_000);
      expect(taken!.event.attempts).toBe(1);
      expect((await b.listAttempts(r!.event.id)).map((x) => x.outcome)).toEqual(['unknown']);
      // a's late record and a new journal entry under its old lease are both refused.
      await a.recordAttempts([
        {
          attempt: {
            eventId: r!.event.id,
            number: 1,
            destination: 'log',
            startedAt: T0 + 10,
            finishedAt: T0 + 20,
            outcome: 'delivered',
            httpStatus: 200,
            code: null,
            message: null,
            retryAt: null,
          },
          storeId: STORE,
          metrics: [],
          event: { outcome: 'delivered', code: null, nextAttemptAt: null, deliveredAt: T0 + 20, leaseUntil: null },
        },
      ]);
      expect((await b.getEvent(STORE, r!.event.id))?.outcome).toBe('queued');
      expect(await a.journalAttempts([{ eventId: r!.event.id, number: 2, destination: 'log', startedAt: T0 + 1500 }])).toEqual([]);
      expect(await b.journalAttempts([{ eventId: r!.event.id, number: 2, destination: 'log', startedAt: T0 + 1500 }])).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("a killed instance's leases are claimed by its peer at once, long before they expire; its sends in flight end `unknown`", async () => {
    const [a, b] = await pair();
    try {
      // a leases receipts at commit (direct handoff) and claims one more, journaling its send: all for 20 minutes.
      const direct = [receipt(null), receipt(null)];
      await a.commitIngest(direct, [], { until: T0 + 1_200_000, max: 10 });
      const late = receipt(null);
      await a.commitIngest([late], []);
      const [held] = await a.claimDue(T0, 1, T0 + 1_200_000);
      expect(held!.event.id).toBe(late.event.id);
      expect(await a.journalAttempts([{ eventId: late.event.id, number: 1, destination: 'log', startedAt: T0 + 10 }])).toHaveLength(1);
      // While a lives, its leases hold.
      expect(await b.claimDue(T0 + 1000, 10, T0 + 60_000)).toEqual([]);
      // a's process ends without releasing anything (its connections close, as under SIGKILL).
      await a.close();
      // The server drops a's liveness lock when its backend ends, a moment after the client closed the connection
      // (CI once claimed in between and found nothing): b claims again until then, for at most 5 s of a 20-minute lease.
      let taken = await b.claimDue(T0 + 1000, 10, T0 + 60_000);
      for (const until = Date.now() + 5_000; !taken.length && Date.now() < until; ) {
        await Bun.sleep(20);
        taken = await b.claimDue(T0 + 1000, 10, T0 + 60_000);
      }
      expect(taken.map((d) => d.event.id).sort()).toEqual([...direct.map((r) => r.event.id), late.event.id].sort());
      expect((await b.listAttempts(late.event.id)).map((x) => x.outcome)).toEqual(['unknown']);
      expect(taken.find((d) => d.event.id === late.event.id)!.event.attempts).toBe(1);
    } finally {
      await a.close().catch(() => {});
      await b.close();
    }
  });

  it("a peer's claimed round does not make the other instance's worker due at once (no busy loop)", async () => {
    const [a, b] = await pair();
    try {
      const r = receipt(null);
      await a.commitIngest([r], []);
      expect(await b.nextDueAt()).toBe(T0);
      expect(await a.claimDue(T0, 10, T0 + 600_000)).toHaveLength(1);
      // a's round is in flight: nothing is due for b until a records it (or its lease ends, found by b's claims).
      expect(await b.nextDueAt()).toBeNull();
      expect(await b.claimDue(T0 + 1, 10, T0 + 600_000)).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a signal sent by one instance reaches the other (LISTEN/NOTIFY), and only its own deployment', async () => {
    const [a, b] = await pair();
    const other = await pgBackend!.open(); // another schema: another deployment on the same database
    const heard: string[] = [];
    const stop = await a.listen!((channel, payload) => heard.push(`${channel}:${payload}`));
    try {
      await other.notify!('endpoint', 'ep_elsewhere');
      await b.notify!('endpoint', 'ep_changed');
      await b.notify!('due', '');
      const end = Date.now() + 5000;
      while (heard.length < 2 && Date.now() < end) await Bun.sleep(10);
      await Bun.sleep(50);
      expect(heard).toEqual(['endpoint:ep_changed', 'due:']);
    } finally {
      await stop();
      await Promise.all([a.close(), b.close(), other.close()]);
    }
  });

  it('one Idempotency-Key claimed at once by both: exactly one runs; rate limits count once across both', async () => {
    const [a, b] = await pair();
    try {
      const row = { storeId: STORE, key: 'same-key', operationId: 'op', requestHash: 'h', createdAt: T0, owner: null };
      const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).claimIdempotency(row, T0 - 86400_000, T0 - 60_000)));
      expect(claims.filter((c) => c === null)).toHaveLength(1);
      const keys = [
        { key: 'rich|g|gr_1', limit: 10 },
        { key: 'rich|s|st_1', limit: 50 },
      ];
      const taken = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).takeRate(keys, T0)));
      expect(taken.filter((t) => t === -1)).toHaveLength(10);
      expect(taken.filter((t) => t === 0)).toHaveLength(30);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
