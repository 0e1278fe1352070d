/**
 * Receipts taken by the running worker straight from their group commit (IngestLease): stored `queued` under
 * the worker's lease in the commit itself, handed off once, and never lost when the worker dies first.
 */
import { describe, expect, it } from 'bun:test';
import type { EventRow } from '../../db/types.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { receivedCounts, spyClaims, startDirectWorker, until } from '../fixtures/handoff.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, gatherReceipts, orderEvent, row, sendHook, sqliteOnly, type TestEnv } from '../helpers.ts';

const TOKEN = 'shpat_direct_token';
const HANDOFF = { timeoutMs: 1000, baseDelayMs: 10, maxDelayMs: 1000, maxAttempts: 3, concurrency: 4, batchSize: 8 };

const fake = fakeShopifyForFile({ token: TOKEN });

async function setup() {
  const env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => (n === 'SHOP_TOKEN' ? TOKEN : undefined), handoff: HANDOFF });
  await addStore(env, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
  const grant = await addGrant(env);
  const { endpoint, secret } = await createEndpoint(env, grant);
  return { env, grant, endpoint, secret };
}

async function storedRow(env: TestEnv, id: string) {
  return (await row<{ outcome: string; lease_until: number | null; next_attempt_at: number | null; attempts: number }>(
    env,
    'SELECT outcome, lease_until, next_attempt_at, attempts FROM events WHERE id = ?',
    id,
  ))!;
}

describe('the ingest commit leasing receipts to the running worker', () => {
  it('stores the leased receipts queued with lease_until = next_attempt_at, answers accepted, and counts them as received accepted', async () => {
    const { env, grant, endpoint, secret } = await setup();
    const until = env.clock.now() + 60_000;
    const taken: EventRow[] = [];
    const leftToClaim: boolean[] = [];
    env.app.writer.handOffTo({
      lease: () => ({ until, max: 2 }),
      take: (events, due) => {
        taken.push(...events);
        leftToClaim.push(due);
      },
    });

    const order = gatherReceipts(env, 3); // one commit
    const replies = await Promise.all([0, 1, 2].map((i) => sendHook(env, endpoint, secret, orderEvent(`ext-lease-${i}`, 8100 + i))));
    expect(replies.map((r) => [r.status, r.json.status])).toEqual([
      [202, 'accepted'],
      [202, 'accepted'],
      [202, 'accepted'],
    ]);
    // Only `max` of them: the worker said how many it had room for, and learns the third is left to the claim.
    expect(taken.map((e) => e.id)).toEqual(order.slice(0, 2));
    const left = order[2]!;
    expect(leftToClaim).toEqual([true]);
    for (const e of taken) {
      expect(e.outcome).toBe('queued');
      expect(e.leaseUntil).toBe(until);
      expect(await storedRow(env, e.id)).toEqual({ outcome: 'queued', lease_until: until, next_attempt_at: until, attempts: 0 });
    }
    expect(await storedRow(env, left)).toEqual({ outcome: 'accepted', lease_until: null, next_attempt_at: env.clock.now(), attempts: 0 });
    // Read back, a leased receipt has no next-attempt time (the stored one is its lease end); the other is due now.
    const leasedView = await call(env, 'GET', `/agent/v1/events/${taken[0]!.id}`, { token: grant });
    const dueView = await call(env, 'GET', `/agent/v1/events/${left}`, { token: grant });
    expect([leasedView.json.data.event.outcome, leasedView.json.data.event.nextAttemptAt]).toEqual(['queued', null]);
    expect([dueView.json.data.event.outcome, dueView.json.data.event.nextAttemptAt]).toEqual(['accepted', new Date(env.clock.now()).toISOString()]);

    // Summed: PostgreSQL keeps each instance's counts in a shard row of its own.
    const stats = await row<{ n: number }>(env, `SELECT sum(n) AS n FROM event_stats WHERE width = 300000 AND metric = 'received:accepted'`);
    expect(stats?.n).toBe(3);
    // A claim at this time takes only the receipt the commit did not lease.
    const claimed = await env.repo.claimDue(env.clock.now(), 10, env.clock.now() + 1000);
    expect(claimed.map((d) => d.event.id)).toEqual([left]);
  });

  it('leases no duplicate, rejected or held receipt', async () => {
    const { env, endpoint, secret } = await setup();
    const taken: EventRow[] = [];
    env.app.writer.handOffTo({ lease: () => ({ until: env.clock.now() + 60_000, max: 100 }), take: (events) => taken.push(...events) });
    const first = await sendHook(env, endpoint, secret, orderEvent('ext-once', 8200));
    const dup = await sendHook(env, endpoint, secret, orderEvent('ext-once', 8200));
    const bad = await sendHook(env, endpoint, secret, '{"event_type":"order.flagged","order":{}}');
    expect([first.json.status, dup.json.status, bad.status]).toEqual(['accepted', 'duplicate_suppressed', 422]);
    expect(taken.map((e) => e.id)).toEqual([first.json.eventId]);
  });
});

describe('the running worker taking receipts from their commit', () => {
  it('hands each receipt off once, without claiming it, and records it delivered', async () => {
    const { env, grant, endpoint, secret } = await setup();
    const claimed = spyClaims(env);
    const worker = startDirectWorker(env);
    try {
      // Three commits of 5, each within the worker's room (two rounds of 8).
      const ids: string[] = [];
      for (let wave = 0; wave < 3; wave++) {
        const replies = await Promise.all(
          Array.from({ length: 5 }, (_, i) => sendHook(env, endpoint, secret, orderEvent(`ext-direct-${wave}-${i}`, 9000 + wave * 10 + i))),
        );
        expect(replies.every((r) => r.status === 202 && r.json.status === 'accepted')).toBe(true);
        ids.push(...replies.map((r) => r.json.eventId as string));
      }
      await until(async () => (await Promise.all(ids.map((id) => storedRow(env, id)))).every((r) => r.outcome === 'delivered'));

      expect(fake.rejected).toEqual([]);
      expect(fake.requests).toHaveLength(ids.length);
      expect([...receivedCounts(fake).values()].every((n) => n === 1)).toBe(true);
      expect(claimed).toEqual([]);
      for (const id of ids) expect(await storedRow(env, id)).toEqual({ outcome: 'delivered', lease_until: null, next_attempt_at: null, attempts: 1 });
      const detail = await call(env, 'GET', `/agent/v1/events/${ids[0]}`, { token: grant });
      expect(detail.json.data.event.outcome).toBe('delivered');
      expect(detail.json.data.event.attemptsDetail).toMatchObject([{ number: 1, destination: 'shopify', outcome: 'delivered' }]);
    } finally {
      await worker.stop();
    }
  });

  it('leaves what does not fit in two rounds to the claim, and hands off every receipt once', async () => {
    const { env, endpoint, secret } = await setup();
    const claimed = spyClaims(env);
    const worker = startDirectWorker(env);
    try {
      const N = 30; // one commit: 16 leased to the worker, 14 stored accepted
      const order = gatherReceipts(env, N);
      const replies = await Promise.all(Array.from({ length: N }, (_, i) => sendHook(env, endpoint, secret, orderEvent(`ext-over-${i}`, 9100 + i))));
      const ids = replies.map((r) => r.json.eventId as string);
      await until(async () => (await Promise.all(ids.map((id) => storedRow(env, id)))).every((r) => r.outcome === 'delivered'));
      expect(claimed.sort()).toEqual(order.slice(2 * HANDOFF.batchSize).sort());
      expect(fake.requests).toHaveLength(N);
      expect([...receivedCounts(fake).values()].every((n) => n === 1)).toBe(true);
    } finally {
      await worker.stop();
    }
  });

  it('offers room for two rounds while running, none otherwise', async () => {
    const { env } = await setup();
    const worker = new HandoffWorker(env.core);
    const direct = worker.directHandoff((id) => env.app.endpoints.get(id));
    expect(direct.lease()).toBeNull(); // not running
    worker.start();
    try {
      const first = direct.lease();
      expect(first?.max).toBe(2 * HANDOFF.batchSize);
      expect(first!.until).toBeGreaterThan(env.clock.now() + HANDOFF.timeoutMs);
    } finally {
      await worker.stop();
    }
    expect(direct.lease()).toBeNull(); // stopped
  });
});

describe('receipts leased by a worker that died before handing them off', () => {
  async function leasedButLost() {
    const s = await setup();
    const until = s.env.clock.now() + 60_000;
    // The dying worker: it gets the receipts from their commit and never hands them off.
    s.env.app.writer.handOffTo({ lease: () => ({ until, max: 100 }), take: () => {} });
    const M = 5;
    const replies = await Promise.all(Array.from({ length: M }, (_, i) => sendHook(s.env, s.endpoint, s.secret, orderEvent(`ext-lost-${i}`, 7100 + i))));
    s.env.app.writer.handOffTo(null);
    return { ...s, until, ids: replies.map((r) => r.json.eventId as string) };
  }

  it('are handed off once after their lease runs out', async () => {
    const { env, until, ids } = await leasedButLost();
    const worker = new HandoffWorker(env.core);
    await worker.drain();
    expect(fake.requests).toHaveLength(0); // the lease still holds

    env.clock.set(until);
    await worker.drain();
    expect(fake.requests).toHaveLength(ids.length);
    expect([...receivedCounts(fake).values()].every((n) => n === 1)).toBe(true);
    for (const id of ids) expect(await storedRow(env, id)).toMatchObject({ outcome: 'delivered', attempts: 1 });
  });

  // SQLite-only: releaseAllLeases is a single-process start-up; PostgreSQL instances never release peers' leases.
  it.if(sqliteOnly)('are due at once when a single-process serve starts again (releaseAllLeases)', async () => {
    const { env, ids } = await leasedButLost();
    expect(await env.repo.releaseAllLeases(env.clock.now())).toBe(ids.length);
    for (const id of ids) expect(await storedRow(env, id)).toMatchObject({ lease_until: null, next_attempt_at: env.clock.now() });
    await new HandoffWorker(env.core).drain();
    expect(fake.requests).toHaveLength(ids.length);
    for (const id of ids) expect(await storedRow(env, id)).toMatchObject({ outcome: 'delivered', attempts: 1 });
  });
});
