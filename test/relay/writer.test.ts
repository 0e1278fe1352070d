import { describe, expect, it } from 'bun:test';
import type { CommittedReceipt, PendingReceipt } from '../../db/types.ts';
import { ReceiptWriter } from '../../src/relay/writer.ts';
import { addGrant, addStore, count, createEndpoint, createTestEnv, eventRow, holdCommits, orderEvent, sendHook, sqliteOnly } from '../helpers.ts';
import { bigOrderEvent, fillDisk } from '../fixtures/disk-full.ts';

/**
 * One event-loop turn in which `arrive` runs before the writer's check of that turn, as a request read from a
 * socket does: the turn is queued first, so it runs ahead of the check the writer queues meanwhile.
 */
async function oneTurn(arrive: () => void): Promise<void> {
  const turn = new Promise<void>((r) => setImmediate(r));
  arrive();
  await turn;
}

/** A receipt the commit stores as rejected: no endpoint, body or meter needed. */
function rejectedReceipt(key: string): PendingReceipt {
  const event = eventRow({
    id: `evt_${key}`,
    receivedAt: Date.now(),
    outcome: 'rejected',
    code: 'SVC_INVALID_JSON',
    bodyRetention: 'none',
    nextAttemptAt: null,
  });
  return { event, body: null, bodyExpiresAt: event.receivedAt, dedupeSince: null };
}

/** The receipt count of each ingest commit. */
function spyCommits(env: Awaited<ReturnType<typeof createTestEnv>>): number[] {
  const calls: number[] = [];
  const original = env.repo.commitIngest.bind(env.repo);
  env.repo.commitIngest = async (receipts, failures, lease) => {
    calls.push(receipts.length);
    return original(receipts, failures, lease);
  };
  return calls;
}

describe('ReceiptWriter (group commit)', () => {
  // SQLite-only: its reads are synchronous, so 50 concurrent handlers reach the writer within the turns of one batch;
  // on PostgreSQL each handler's reads are network round trips and arrivals spread over several commits.
  it.if(sqliteOnly)('commits the receipts of concurrent requests in one transaction', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const { endpoint, secret } = await createEndpoint(env, await addGrant(env));
    const calls = spyCommits(env);
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => sendHook(env, endpoint, secret, orderEvent(`gc-${i}`))));
    expect(replies.every((r) => r.status === 202)).toBe(true);
    expect(calls).toEqual([50]);
    expect(await count(env, 'events')).toBe(50);
  });

  it('a batch gathers receipts over consecutive event-loop turns and commits at the first turn without one', async () => {
    const env = await createTestEnv();
    const calls = spyCommits(env);
    // A gather bound far beyond the test's run: only a turn without a receipt may end the batch (under CPU load
    // the default 1 ms bound would end it early and make the test flaky).
    const writer = new ReceiptWriter(env.repo, undefined, 2048, 60_000);
    const committed: Promise<CommittedReceipt>[] = [];
    for (let i = 0; i < 10; i++) await oneTurn(() => committed.push(writer.submit(rejectedReceipt(`a${i}`))));
    await oneTurn(() => {}); // a turn without one: the ten commit
    await oneTurn(() => {});
    for (let i = 0; i < 3; i++) await oneTurn(() => committed.push(writer.submit(rejectedReceipt(`b${i}`))));
    expect((await Promise.all(committed)).map((c) => c.eventId)).toEqual([...Array.from({ length: 10 }, (_, i) => `evt_a${i}`), 'evt_b0', 'evt_b1', 'evt_b2']);
    expect(calls).toEqual([10, 3]);
  });

  it('a turn the loop spent elsewhere does not end the batch: the receipts it held back join the commit', async () => {
    const env = await createTestEnv();
    const calls = spyCommits(env);
    // A bound of 50 ms (serve's is 1): the OS may pause this process between turns on a loaded host, and a pause
    // past BLOCKED_TURNS_MAX bounds would end the batch for a reason this test is not about.
    const writer = new ReceiptWriter(env.repo, undefined, 2048, 50);
    const committed: Promise<CommittedReceipt>[] = [];
    await oneTurn(() => committed.push(writer.submit(rejectedReceipt('first'))));
    // A turn busy for twice the bound and bringing no receipt (a worker transaction, say): requests arriving
    // meanwhile are read only in the turn after.
    await oneTurn(() => {
      const until = performance.now() + 100;
      while (performance.now() < until);
    });
    await oneTurn(() => committed.push(writer.submit(rejectedReceipt('held-back'))));
    await oneTurn(() => {});
    await Promise.all(committed);
    expect(calls).toEqual([2]);
  });

  it('a run of busy turns still commits within its bound', async () => {
    const env = await createTestEnv();
    const calls = spyCommits(env);
    const writer = new ReceiptWriter(env.repo, undefined, 2048, 2);
    const first = writer.submit(rejectedReceipt('busy-first'));
    // Every turn busy for 3 ms: each counts as blocked, but the batch may wait at most 4 × 2 ms for them, so it
    // leaves for its commit within a few turns however slow the machine (a slower one makes fewer, longer turns).
    // Without the bound it would wait through all 60. Counted until the commit starts: its own round trips (a
    // PostgreSQL on a loaded host) are the database's time, not the gather bound's.
    let turns = 0;
    while (calls.length === 0 && turns < 60) {
      turns++;
      await oneTurn(() => {
        const until = performance.now() + 3;
        while (performance.now() < until);
      });
    }
    await first;
    expect(calls).toEqual([1]);
    expect(turns).toBeLessThan(10);
  });

  // SQLite-only: the 40 ms stream must span several commits, and a PostgreSQL commit's round trips take most of it.
  it.if(sqliteOnly)('receipts arriving on every turn still commit within the gather bound, not at the end of the stream', async () => {
    const env = await createTestEnv();
    const calls = spyCommits(env);
    const writer = new ReceiptWriter(env.repo);
    const committed: Promise<CommittedReceipt>[] = [];
    const until = performance.now() + 40;
    while (performance.now() < until) await oneTurn(() => committed.push(writer.submit(rejectedReceipt(`s${committed.length}`))));
    await Promise.all(committed);
    expect(calls.length).toBeGreaterThan(2);
    expect(Math.max(...calls)).toBeLessThan(2048); // the batch cap: without the time bound, commits waited for it
    expect(calls.reduce((a, b) => a + b, 0)).toBe(committed.length);
  });

  it('answers each request only after the commit that holds it', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const { endpoint, secret } = await createEndpoint(env, await addGrant(env));
    const release = holdCommits(env);
    let answered = false;
    const pending = sendHook(env, endpoint, secret, orderEvent('held-back')).then((r) => {
      answered = true;
      return r;
    });
    await Bun.sleep(20);
    expect(answered).toBe(false);
    release();
    expect((await pending).status).toBe(202);
  });

  // SQLite-only: the full disk is SQLite's own page limit (test/fixtures/disk-full.ts).
  it.if(sqliteOnly)('never acknowledges when the commit fails: 503 with Retry-After, nothing recorded', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const { endpoint, secret } = await createEndpoint(env, await addGrant(env));
    fillDisk(env.repo);
    const replies = await Promise.all([1, 2, 3].map((i) => sendHook(env, endpoint, secret, bigOrderEvent(`fail-${i}`))));
    for (const r of replies) {
      expect(r.status).toBe(503);
      expect(r.json.code).toBe('storage_unavailable');
      expect(r.json.receiptId).toBeUndefined();
    }
    expect(await count(env, 'events')).toBe(0);
    expect(env.log.lines.some((l) => l.includes('storage: writes are failing (full)'))).toBe(true);
    expect(env.log.lines.join('\n')).not.toContain('disk is full');
  });

  it('commits what is pending on close and refuses new receipts after', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const { endpoint, secret } = await createEndpoint(env, await addGrant(env));
    const release = holdCommits(env);
    let submitted = 0;
    const submit = env.app.writer.submit.bind(env.app.writer);
    env.app.writer.submit = (receipt) => {
      submitted++;
      return submit(receipt);
    };
    const inflight = [sendHook(env, endpoint, secret, orderEvent('a')), sendHook(env, endpoint, secret, orderEvent('b'))];
    while (submitted < 2) await Bun.sleep(1); // both handlers reached the writer before it closes
    const closing = env.app.writer.close();
    release();
    await closing;
    expect((await Promise.all(inflight)).map((r) => r.status)).toEqual([202, 202]);
    expect((await sendHook(env, endpoint, secret, orderEvent('after'))).status).toBe(503);
    expect(await count(env, 'events')).toBe(2);
  });
});
