/**
 * Edge cases of the direct handoff (IngestLease): receipts leased to the running worker by their own group
 * commit and handed off from memory. Each test states the invariant it holds the change to: an acknowledged
 * event is handed off once by one process, ends in the right state, and is never lost.
 */
import { describe, expect, it } from 'bun:test';
import net from 'node:net';
import { hmacHex } from '../../src/lib/crypto.ts';
import type { Destination } from '../../src/platform/types.ts';
import { defaultDestinations, HandoffWorker } from '../../src/relay/worker.ts';
import { b, fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { handedOffTwice, receivedCounts, startDirectWorker, until } from '../fixtures/handoff.ts';
import {
  addGrant,
  addStore,
  backend,
  call,
  count,
  createEndpoint,
  createTestEnv,
  execSql,
  type TestHandoff,
  executeIntent,
  orderEvent,
  row,
  rows,
  sendHook,
  type TestEnv,
} from '../helpers.ts';

const TOKEN = 'shpat_direct_edges_token';
const HANDOFF = { timeoutMs: 1000, baseDelayMs: 10, maxDelayMs: 1000, maxAttempts: 3, concurrency: 4, batchSize: 8 } as const satisfies TestHandoff;

const fake = fakeShopifyForFile({ token: TOKEN });

async function setup(handoff: TestHandoff = HANDOFF) {
  const env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => (n === 'SHOP_TOKEN' ? TOKEN : undefined), handoff });
  await addStore(env, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
  const store = (await env.repo.getStoreByShop('demo.myshopify.com'))!;
  const grant = await addGrant(env);
  const { endpoint, secret } = await createEndpoint(env, grant);
  return { env, store, grant, endpoint, secret };
}
type Setup = Awaited<ReturnType<typeof setup>>;

/** A worker wired to the app's writer as serve wires it, jitter pinned. */
function directWorker(env: TestEnv, worker = new HandoffWorker(env.core)) {
  worker.random = () => 1;
  return startDirectWorker(env, worker);
}

/**
 * Holds the worker's loop before its first round (in its first held-events check), so commits fill the direct
 * queue while it runs. Returns the function that lets the loop go on.
 */
function holdLoop(worker: HandoffWorker): () => void {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const original = worker.releaseHeld.bind(worker);
  worker.releaseHeld = async () => {
    await gate;
    return original();
  };
  return open;
}

/** A store set up and a worker taking receipts from commits, its loop held until `open()`. */
async function heldWorker() {
  const s = await setup();
  const worker = new HandoffWorker(s.env.core);
  const open = holdLoop(worker);
  directWorker(s.env, worker);
  return { ...s, worker, open };
}

async function storedRow(env: TestEnv, id: string) {
  return (await row<{ outcome: string; code: string | null; lease_until: number | null; next_attempt_at: number | null; attempts: number }>(
    env,
    'SELECT outcome, code, lease_until, next_attempt_at, attempts FROM events WHERE id = ?',
    id,
  ))!;
}

function attemptNumbers(env: TestEnv, id: string) {
  return rows<{ number: number; outcome: string }>(env, 'SELECT number, outcome FROM attempts WHERE event_id = ? ORDER BY number, started_at', id);
}

/** Attempt rows recorded more than once under the same number (one handoff recorded twice). */
function doubledAttempts(env: TestEnv) {
  return rows<{ event_id: string; number: number; n: number }>(
    env,
    'SELECT event_id, number, count(*) AS n FROM attempts GROUP BY event_id, number HAVING count(*) > 1',
  );
}

async function sendMany(s: Setup, prefix: string, n: number, base: number) {
  const replies = await Promise.all(Array.from({ length: n }, (_, i) => sendHook(s.env, s.endpoint, s.secret, orderEvent(`${prefix}-${i}`, base + i))));
  for (const r of replies) expect([r.status, r.json.status]).toEqual([202, 'accepted']);
  return replies.map((r) => r.json.eventId as string);
}

async function execIntent(s: Setup, path: string, input: Record<string, unknown>, key: string) {
  const p = await call(s.env, 'POST', path, { token: s.grant, body: { mode: 'preview', input } });
  expect(p.status).toBe(201);
  const x = await executeIntent(s.env, s.grant, path, p.json.data.intent, key);
  expect(x.status).toBe(200);
  return x;
}

describe('the ingest lease against the time a receipt waits in the direct queue', () => {
  it('hands no receipt off twice when every attempt takes the full timeout (batchSize = concurrency, timeout > 30 s)', async () => {
    // Each attempt takes the whole timeout (a platform answering just before it). A round is at most
    // batchSize direct receipts + ceil(batchSize/4) claimed ones, i.e. 5 here = 2 waves of 4 lanes = 120 s.
    // A receipt that enters the direct queue at its back while a round runs waits for that round and the next
    // (240 s) before its own round's claim, but its lease is timeout * ceil(3 * 4 / 4) + 30 s = 210 s.
    const T = 60_000;
    const s = await setup({ ...HANDOFF, timeoutMs: T, batchSize: 4 });
    const { env } = s;
    const real = defaultDestinations(env.core);
    let late: Promise<string[]> | null = null;
    const slowPlatform: Destination = {
      name: 'shopify',
      async send(req, timeoutMs) {
        const start = env.clock.now();
        // During the first round, a commit leases four more receipts to the back of the direct queue.
        late ??= sendMany(s, 'ext-late', 4, 7300);
        await late;
        await Bun.sleep(1); // every lane of the wave has started at `start`
        const out = await real.shopify.send(req, timeoutMs);
        env.clock.set(Math.max(env.clock.now(), start + T));
        return out;
      },
    };
    const worker = new HandoffWorker(env.core, { ...real, shopify: slowPlatform });
    worker.random = () => 1;
    const open = holdLoop(worker);
    worker.start();
    try {
      // Two receipts the claim finds due (committed before the worker took receipts from commits).
      const claimed = await sendMany(s, 'ext-claimed', 2, 7100);
      env.app.writer.handOffTo(worker.directHandoff((id) => env.app.endpoints.get(id)));
      const direct = await sendMany(s, 'ext-direct', 8, 7200); // fills the direct queue (2 rounds of 4)
      for (const id of direct) expect((await storedRow(env, id)).outcome).toBe('queued');
      open();
      await until(async () => late !== null);
      const lateIds = await late!;
      const all = [...claimed, ...direct, ...lateIds];
      await until(async () => (await Promise.all(all.map((id) => storedRow(env, id)))).every((r) => r.outcome === 'delivered'));
      await Bun.sleep(50); // a second handoff of the same receipt would have been recorded by now
      expect(fake.rejected).toEqual([]);
      expect(handedOffTwice(fake)).toEqual([]);
      expect(fake.requests).toHaveLength(all.length);
      expect(await doubledAttempts(env)).toEqual([]);
      for (const id of all) expect((await storedRow(env, id)).attempts).toBe(1);
    } finally {
      await worker.stop();
    }
  });
});

describe('a send and its lease', () => {
  it('never starts a send whose lease would end before the send could time out: the claim after the lease hands it off once', async () => {
    const s = await heldWorker();
    const { env, worker, open } = s;
    const lease = worker.directHandoff((id) => env.app.endpoints.get(id)).lease()!;
    const [id] = await sendMany(s, 'ext-late', 1, 7700);
    // The receipt waited in the direct queue until less than one timeout is left of its lease.
    env.clock.set(lease.until - HANDOFF.timeoutMs + 1);
    open();
    await until(async () => (await storedRow(env, id!)).outcome === 'queued' && fake.requests.length === 0);
    await worker.stop();
    expect(fake.requests).toHaveLength(0);
    expect(await storedRow(env, id!)).toMatchObject({ outcome: 'queued', attempts: 0 });
    // Due again when its lease ends: claimed, sent once, recorded as the first attempt.
    env.clock.set(lease.until);
    await new HandoffWorker(env.core).drain();
    expect(receivedCounts(fake).get('ext-late-0')).toBe(1);
    expect(await storedRow(env, id!)).toMatchObject({ outcome: 'delivered', attempts: 1 });
  });
});

describe('worker.stop() with receipts still in the direct queue', () => {
  /** A running worker holding 2 rounds of receipts in its direct queue, stopped after one round. */
  async function stoppedWithLeftovers() {
    const s = await heldWorker();
    const { worker, open } = s;
    const lease = worker.directHandoff((id) => s.env.app.endpoints.get(id)).lease()!;
    const ids = await sendMany(s, 'ext-stop', 2 * HANDOFF.batchSize, 7500);
    const stopping = worker.stop();
    open(); // the iteration in progress still runs its round
    await stopping;
    return { ...s, worker, ids, leaseUntil: lease.until };
  }

  it('keeps every acknowledged receipt: the round in progress is recorded, the rest stay queued under the lease and are handed off once after a restart', async () => {
    const { env, ids, leaseUntil } = await stoppedWithLeftovers();
    const rows = await Promise.all(ids.map((id) => storedRow(env, id)));
    const delivered = ids.filter((_, i) => rows[i]!.outcome === 'delivered');
    const waiting = ids.filter((_, i) => rows[i]!.outcome === 'queued');
    expect(delivered).toHaveLength(HANDOFF.batchSize);
    expect(waiting).toHaveLength(HANDOFF.batchSize);
    for (const id of waiting) expect(await storedRow(env, id)).toMatchObject({ lease_until: leaseUntil, next_attempt_at: leaseUntil, attempts: 0 });

    // The next start, with a new worker: a SQLite serve releases every lease at once; on PostgreSQL, where live
    // peers may hold leases, the leftovers come back through the claim once their lease ends.
    if (backend === 'sqlite') expect(await env.repo.releaseAllLeases(env.clock.now())).toBe(HANDOFF.batchSize);
    else env.clock.set(leaseUntil);
    await new HandoffWorker(env.core).drain();
    expect(fake.requests).toHaveLength(ids.length);
    expect(handedOffTwice(fake)).toEqual([]);
    for (const id of ids) expect(await storedRow(env, id)).toMatchObject({ outcome: 'delivered', attempts: 1 });
  });

  it('a stopped worker drained later does not hand off again the receipts its old direct queue shares with the claim', async () => {
    const { env, worker, ids, leaseUntil } = await stoppedWithLeftovers();
    expect(fake.requests).toHaveLength(HANDOFF.batchSize);
    // The leftovers are durable and come back through the claim once their lease ends; the stopped worker still
    // holds them in memory too.
    env.clock.set(leaseUntil);
    await worker.drain();
    expect(handedOffTwice(fake)).toEqual([]);
    expect(fake.requests).toHaveLength(ids.length);
    expect(await doubledAttempts(env)).toEqual([]);
    for (const id of ids) expect(await storedRow(env, id)).toMatchObject({ outcome: 'delivered', attempts: 1 });
  });

  it('takes no receipt from commits once stopped: later receipts are stored accepted and claimed by the next worker', async () => {
    const { env, endpoint, secret } = await stoppedWithLeftovers();
    const r = await sendHook(env, endpoint, secret, orderEvent('ext-after-stop', 7600));
    expect(r.json.status).toBe('accepted');
    expect(await storedRow(env, r.json.eventId)).toMatchObject({ outcome: 'accepted', lease_until: null, next_attempt_at: env.clock.now() });
    // The next worker's claim takes it at once; the leftovers stay under their lease.
    await new HandoffWorker(env.core).drain();
    expect(await storedRow(env, r.json.eventId)).toMatchObject({ outcome: 'delivered', attempts: 1 });
    expect(receivedCounts(fake).get('ext-after-stop')).toBe(1);
    expect(fake.requests).toHaveLength(HANDOFF.batchSize + 1);
  });
});

describe('receipts taken from their commit, through the rest of the handoff rules', () => {
  it('a retryable failure (HTTP 500) is recorded as attempt 1 and the event is retried by the claim, then delivered as attempt 2', async () => {
    const s = await setup();
    const worker = directWorker(s.env);
    try {
      fake.script(b.status(500));
      const [id] = await sendMany(s, 'ext-retry', 1, 7700);
      await until(async () => (await storedRow(s.env, id!)).attempts === 1);
      const after1 = await storedRow(s.env, id!);
      expect(after1.outcome).toBe('queued');
      expect(after1.lease_until).toBeNull();
      expect(after1.next_attempt_at).toBeGreaterThan(s.env.clock.now());
      expect(await attemptNumbers(s.env, id!)).toEqual([{ number: 1, outcome: 'retry' }]);

      s.env.clock.set(after1.next_attempt_at!);
      await until(async () => (await storedRow(s.env, id!)).outcome === 'delivered');
      expect(await storedRow(s.env, id!)).toMatchObject({ outcome: 'delivered', attempts: 2, lease_until: null, next_attempt_at: null });
      expect(await attemptNumbers(s.env, id!)).toEqual([
        { number: 1, outcome: 'retry' },
        { number: 2, outcome: 'delivered' },
      ]);
      expect(fake.requests.map((r) => r.behaviour)).toEqual(['status', 'ok']);
    } finally {
      await worker.stop();
    }
  });

  it('a trigger Flow reports without an enabled workflow ends no_workflow without a request to Flow', async () => {
    const s = await setup();
    await s.env.repo.setTriggerReadiness({ storeId: s.store.id, handle: 'hookrelay-order', hasEnabledFlow: false, updatedAt: s.env.clock.now() });
    const worker = directWorker(s.env);
    try {
      const ids = await sendMany(s, 'ext-nowf', 3, 7800);
      await until(async () => (await Promise.all(ids.map((id) => storedRow(s.env, id)))).every((r) => r.outcome !== 'queued'));
      for (const id of ids) {
        expect(await storedRow(s.env, id)).toMatchObject({
          outcome: 'no_workflow',
          code: 'SVC_NO_WORKFLOW',
          attempts: 1,
          lease_until: null,
          next_attempt_at: null,
        });
      }
      expect(fake.requests).toHaveLength(0);
    } finally {
      await worker.stop();
    }
  });

  it('over capacity: held receipts are not leased nor counted; released later they are handed off once and counted then', async () => {
    const s = await setup();
    const { env } = s;
    const store = { ...s.store, plan: 'free' };
    await env.repo.updateStore(store);
    // The free plan's hard limit is 500: one receipt of room left this period.
    await execSql(
      env,
      'INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES (?, ?, ?, ?)',
      store.id,
      'accepted_events',
      store.createdAt,
      499,
    );
    const meter = async () =>
      (await row<{ used: number }>(env, "SELECT used FROM usage_counters WHERE store_id = ? AND meter = 'accepted_events'", store.id))!.used;
    const worker = directWorker(env);
    try {
      const replies = await Promise.all([0, 1, 2].map((i) => sendHook(env, s.endpoint, s.secret, orderEvent(`ext-cap-${i}`, 7900 + i))));
      expect(replies.map((r) => r.json.status).sort()).toEqual(['accepted', 'held', 'held']);
      const ids = replies.map((r) => r.json.eventId as string);
      const held = ids.filter((_, i) => replies[i]!.json.status === 'held');
      expect(await meter()).toBe(500);
      await until(async () => fake.requests.length === 1);
      for (const id of held) expect(await storedRow(env, id)).toMatchObject({ outcome: 'held', lease_until: null, next_attempt_at: null, attempts: 0 });

      await env.repo.updateStore({ ...store, plan: 'starter', updatedAt: env.clock.now() });
      env.clock.advance(1_000); // the loop looks for held events to release once a second
      await until(async () => (await Promise.all(ids.map((id) => storedRow(env, id)))).every((r) => r.outcome === 'delivered'));
      expect(await meter()).toBe(502);
      expect(fake.requests).toHaveLength(3);
      expect(handedOffTwice(fake)).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it('replay: refused while the receipt is queued under the ingest lease; after delivery it is attempt 2, claimed once', async () => {
    const s = await heldWorker();
    const { worker, open } = s;
    try {
      const [id] = await sendMany(s, 'ext-replay', 1, 8000);
      expect((await storedRow(s.env, id!)).outcome).toBe('queued');
      const path = `/agent/v1/events/${id}/replay-intents`;
      const refused = await call(s.env, 'POST', path, { token: s.grant, body: { mode: 'preview', input: {} } });
      expect(refused.json.refusal?.code).toBe('handoff_in_progress');

      open();
      await until(async () => (await storedRow(s.env, id!)).outcome === 'delivered');
      await execIntent(s, path, { reason: 'edge test' }, 'replay-1');
      await until(async () => (await storedRow(s.env, id!)).attempts === 2);
      await until(async () => (await storedRow(s.env, id!)).outcome === 'delivered');
      expect(await attemptNumbers(s.env, id!)).toEqual([
        { number: 1, outcome: 'delivered' },
        { number: 2, outcome: 'delivered' },
      ]);
      expect(receivedCounts(fake).get('ext-replay-0')).toBe(2);
    } finally {
      await worker.stop();
    }
  });
});

describe('the endpoint changing while its receipts wait in the direct queue', () => {
  it('archived: the receipts already acknowledged are still handed off, once each', async () => {
    const s = await heldWorker();
    const { worker, open } = s;
    try {
      const ids = await sendMany(s, 'ext-archived', 3, 8100);
      await execIntent(s, `/agent/v1/endpoints/${s.endpoint.id}/delete-intents`, {}, 'archive-1');
      expect((await sendHook(s.env, s.endpoint, s.secret, orderEvent('ext-archived-late', 8199))).status).toBe(404);
      open();
      await until(async () => (await Promise.all(ids.map((id) => storedRow(s.env, id)))).every((r) => r.outcome === 'delivered'));
      expect(fake.requests).toHaveLength(3);
      expect(handedOffTwice(fake)).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it('deleted: a permanent delete is refused while an acknowledged receipt waits, so none is stranded; allowed once it is delivered', async () => {
    const s = await heldWorker();
    const { worker, open } = s;
    const id = (await sendMany(s, 'ext-deleted', 1, 8200))[0]!;
    const path = `/agent/v1/endpoints/${s.endpoint.id}/delete-intents`;
    try {
      await execIntent(s, path, {}, 'archive-2');
      expect((await storedRow(s.env, id)).outcome).toBe('queued');
      const refused = await call(s.env, 'POST', path, { token: s.grant, body: { mode: 'preview', input: { stage: 'permanent' } } });
      expect(refused.status).toBe(403);
      expect(refused.json.error.code).toBe('action_refused');
      expect(refused.json.refusal).toMatchObject({ category: 'target_state', code: 'endpoint_has_pending_events' });
      open();
      await until(async () => (await storedRow(s.env, id)).outcome === 'delivered');
    } finally {
      open();
      await worker.stop();
    }
    expect(await attemptNumbers(s.env, id)).toEqual([{ number: 1, outcome: 'delivered' }]);
    await execIntent(s, path, { stage: 'permanent' }, 'delete-2');
    const gone = await call(s.env, 'GET', `/agent/v1/endpoints/${s.endpoint.id}`, { token: s.grant });
    expect(gone.status).toBe(404);
    // The receipt outlives its endpoint.
    expect(await storedRow(s.env, id)).toMatchObject({ outcome: 'delivered', attempts: 1 });
  });
});

describe('routing by pathOf, for request targets Bun.serve really passes through', () => {
  it('routes an absolute-form request by its real path: a signed hook POSTed to "http://host?x=/hooks/<id>" is not accepted', async () => {
    const s = await setup();
    const body = orderEvent('ext-absolute-form', 8300);
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => s.env.app.fetch(req) });
    try {
      const raw = (target: string) =>
        new Promise<string>((resolve, reject) => {
          const sock = net.connect(server.port!, '127.0.0.1', () => {
            sock.write(
              `POST ${target} HTTP/1.1\r\nHost: local\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
                `${s.endpoint.auth.headerName}: ${hmacHex(s.secret, body)}\r\nConnection: close\r\n\r\n${body}`,
            );
          });
          let out = '';
          // The status line is all this needs: answer as soon as it arrives.
          sock.on('data', (d) => {
            out += d;
            if (out.includes('\r\n')) {
              resolve(out.split('\r\n')[0]!);
              sock.destroy();
            }
          });
          sock.on('end', () => resolve(out.split('\r\n')[0]!));
          sock.on('error', reject);
        });
      // The same URL in origin form (path "/"): no such route.
      const originForm = await raw(`/?x=/hooks/${s.endpoint.id}`);
      const absoluteForm = await raw(`http://local?x=/hooks/${s.endpoint.id}`);
      expect(originForm).toContain(' 404 ');
      expect(absoluteForm).toBe(originForm);
      const stored = await count(s.env, 'events');
      expect(stored).toBe(0);
    } finally {
      server.stop(true);
    }
  });
});
