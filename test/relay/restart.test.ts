import { afterAll, describe, expect, it } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SqliteRepo, openSqliteRepo } from '../../db/sqlite/repo.ts';
import { openCore } from '../../src/boot.ts';
import { createCore, defaultConfig, type Config, type Core } from '../../src/core.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { defaultDestinations, HandoffWorker } from '../../src/relay/worker.ts';
import { createApp } from '../../src/server/app.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { handedOffTwice, receivedCounts, until } from '../fixtures/handoff.ts';
import { addGrant, addStore, BASE, call, createEndpoint, orderEvent, sendHook, testHandoff, type TestEnv } from '../helpers.ts';

const TOKEN = 'shpat_canary_token';

const fake = fakeShopifyForFile({ token: TOKEN });
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'hookrelay-restart-'));
  dirs.push(d);
  return d;
}

function config(): Partial<Config> {
  return {
    publicUrl: BASE,
    shopifyAdminUrl: fake.url,
    env: (n) => (n === 'SHOP_TOKEN' ? TOKEN : undefined),
    handoff: testHandoff({ timeoutMs: 2000, baseDelayMs: 10, maxDelayMs: 1000, maxAttempts: 3, concurrency: 4, batchSize: 16 }),
  };
}

/** The test helpers take a TestEnv; this wraps a core on a file database (its clock is the system clock under openCore). */
function envFor(core: Core, log: ReturnType<typeof memoryLog>): TestEnv {
  return { core, app: createApp(core), clock: core.clock as ManualClock, log, repo: core.repo as SqliteRepo };
}

/** Opens environments on one database file, as successive lives of one box would (same key, same clock). */
function fileEnvs(clock: ManualClock): () => Promise<TestEnv> {
  const path = join(tempDir(), 'hookrelay.db');
  const key = newSecretKey();
  return async () => {
    const log = memoryLog();
    const repo = await openSqliteRepo({ path });
    return envFor(createCore({ repo, box: new SecretBox(key), clock, log, config: defaultConfig(config()) }), log);
  };
}

async function allEvents(env: TestEnv, grant: string) {
  const r = await call(env, 'GET', '/agent/v1/events?limit=100', { token: grant });
  expect(r.status).toBe(200);
  return r.json.data.events as { id: string; outcome: string; externalEventId: string; attempts: number }[];
}

describe('durability across a restart (file database)', () => {
  it('hands off every event accepted before the restart exactly once', async () => {
    const dataDir = tempDir();
    const N = 20;

    // First life: receipts only, no worker running.
    const log1 = memoryLog();
    const env1 = envFor(await openCore({ dataDir, log: log1, config: config() }), log1);
    await addStore(env1, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
    const grant = await addGrant(env1);
    const { endpoint, secret } = await createEndpoint(env1, grant);
    const eventIds: string[] = [];
    for (let i = 0; i < N; i++) {
      const r = await sendHook(env1, endpoint, secret, orderEvent(`ext-restart-${i}`, 4500 + i));
      expect(r.status).toBe(202);
      expect(r.json.status).toBe('accepted');
      eventIds.push(r.json.eventId);
    }
    await env1.app.writer.close();
    await env1.core.repo.close();
    expect(fake.requests).toHaveLength(0);

    // Second life: same data directory (database and key file), worker on.
    const log2 = memoryLog();
    const env2 = envFor(await openCore({ dataDir, log: log2, config: config() }), log2);
    try {
      const before = await allEvents(env2, grant);
      expect(before).toHaveLength(N);
      expect(new Set(before.map((e) => e.outcome))).toEqual(new Set(['accepted']));

      await env2.core.repo.releaseAllLeases(Date.now());
      const worker = new HandoffWorker(env2.core);
      await worker.drain();

      expect(fake.rejected).toEqual([]);
      expect(fake.requests).toHaveLength(N);
      const counts = receivedCounts(fake);
      expect(counts.size).toBe(N);
      for (let i = 0; i < N; i++) expect(counts.get(`ext-restart-${i}`)).toBe(1);
      expect(fake.requests.map((r) => r.payload.order_id as number).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => 4500 + i));

      const after = await allEvents(env2, grant);
      expect(after.map((e) => e.id).sort()).toEqual([...eventIds].sort());
      for (const e of after) {
        expect(e.outcome).toBe('delivered');
        expect(e.attempts).toBe(1);
      }
      // A second pass finds nothing left to hand off.
      await worker.drain();
      expect(fake.requests).toHaveLength(N);
    } finally {
      await env2.app.writer.close();
      await env2.core.repo.close();
    }
  });

  it('delivers events a crashed worker had leased but never recorded', async () => {
    const clock = new ManualClock();
    const open = fileEnvs(clock);
    const M = 6;

    const env1 = await open();
    await addStore(env1, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
    const grant = await addGrant(env1);
    const { endpoint, secret } = await createEndpoint(env1, grant);
    for (let i = 0; i < M; i++) {
      expect((await sendHook(env1, endpoint, secret, orderEvent(`ext-crash-${i}`, 7000 + i))).status).toBe(202);
    }
    // The crashed worker: leases everything due, then dies before handing off or recording an attempt.
    // Its database connection is left open, as a killed process would leave it.
    const leased = await env1.repo.claimDue(clock.now(), 100, clock.now() + 60_000);
    expect(leased).toHaveLength(M);

    const env2 = await open();
    try {
      const worker = new HandoffWorker(env2.core);
      // Without releasing, the leases of the dead worker hold the events back until they expire.
      await worker.drain();
      expect(fake.requests).toHaveLength(0);
      expect((await allEvents(env2, grant)).every((e) => e.outcome === 'queued')).toBe(true);

      // What serve does at start for SQLite.
      expect(await env2.core.repo.releaseAllLeases(clock.now())).toBe(M);
      await worker.drain();

      expect(fake.requests).toHaveLength(M);
      const counts = receivedCounts(fake);
      for (let i = 0; i < M; i++) expect(counts.get(`ext-crash-${i}`)).toBe(1);
      const events = await allEvents(env2, grant);
      expect(events).toHaveLength(M);
      for (const e of events) {
        expect(e.outcome).toBe('delivered');
        expect(e.attempts).toBe(1);
      }
    } finally {
      await env2.app.writer.close();
      await env2.core.repo.close();
      await env1.core.repo.close();
    }
  });

  it('a worker that dies after its sends leaves each attempt `unknown`: the repeat is visible as attempt 2', async () => {
    const clock = new ManualClock();
    const open = fileEnvs(clock);
    const M = 6;
    const LANES = config().handoff!.concurrency; // sends in flight at the "kill"
    fake.reset();

    const env1 = await open();
    await addStore(env1, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
    const grant = await addGrant(env1);
    const { endpoint, secret } = await createEndpoint(env1, grant);
    for (let i = 0; i < M; i++) {
      expect((await sendHook(env1, endpoint, secret, orderEvent(`ext-midsend-${i}`, 7100 + i))).status).toBe(202);
    }
    // The dying worker: each send reaches Flow, then the process is gone before the round is recorded.
    const real = defaultDestinations(env1.core);
    let sent = 0;
    const dying = new HandoffWorker(env1.core, {
      ...real,
      shopify: {
        name: 'shopify',
        send: async (...args) => {
          await real.shopify.send(...args);
          sent++;
          return new Promise(() => {});
        },
      },
    });
    void dying.runOnce();
    await until(() => sent === LANES);
    expect(fake.requests).toHaveLength(LANES);

    const env2 = await open();
    try {
      expect(await env2.core.repo.releaseAllLeases(clock.now())).toBe(M);
      await new HandoffWorker(env2.core).drain();

      // Flow got the events in flight twice, never more; the whole round was journaled, so each of its events
      // shows an `unknown` attempt before the delivered one (the ones still waiting for a lane were not sent).
      expect(fake.requests).toHaveLength(M + LANES);
      expect(handedOffTwice(fake)).toHaveLength(LANES);
      for (const e of await allEvents(env2, grant)) {
        expect([e.outcome, e.attempts]).toEqual(['delivered', 2]);
        const detail = await call(env2, 'GET', `/agent/v1/events/${e.id}`, { token: grant });
        const attempts = detail.json.data.event.attemptsDetail as { number: number; outcome: string; finishedAt: string | null; message: string }[];
        expect(attempts.map((a) => [a.number, a.outcome])).toEqual([
          [1, 'unknown'],
          [2, 'delivered'],
        ]);
        expect(attempts[0]!.message).toContain('may have received');
      }

      // The dead worker's round, were it ever to finish, would be fenced: its attempts are no longer `sending`.
      const stale = (await env2.core.repo.listAttempts((await allEvents(env2, grant))[0]!.id))[0]!;
      await env2.core.repo.recordAttempts([
        {
          attempt: { ...stale, outcome: 'delivered', finishedAt: clock.now() },
          storeId: stale.eventId,
          metrics: [],
          event: { outcome: 'failed', code: null, nextAttemptAt: null, deliveredAt: null, leaseUntil: null },
        },
      ]);
      expect((await env2.core.repo.listAttempts(stale.eventId)).map((a) => a.outcome)).toEqual(['unknown', 'delivered']);
      expect((await allEvents(env2, grant)).every((e) => e.outcome === 'delivered')).toBe(true);
    } finally {
      await env2.app.writer.close();
      await env2.core.repo.close();
      await env1.core.repo.close();
    }
  });
});
