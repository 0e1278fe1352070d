import { describe, expect, it } from 'bun:test';
import { SHOPIFY_ADMIN_API_VERSION } from '../../src/platform/shopify/version.ts';
import type { Config } from '../../src/core.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { b, fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

const TOKEN = 'shpat_canary_token';
const HANDOFF_PROBE_MAX_MS = 60_000;
const HANDOFF = {
  timeoutMs: 300,
  baseDelayMs: 10,
  maxDelayMs: 1000,
  maxAttempts: 3,
  concurrency: 4,
  batchSize: 16,
  probeBaseDelayMs: 5_000,
  probeMaxDelayMs: HANDOFF_PROBE_MAX_MS,
};

const fake = fakeShopifyForFile({ token: TOKEN });

interface Setup {
  env: TestEnv;
  grant: string;
  worker: HandoffWorker;
  endpoint: { id: string; auth: { headerName: string; mode: string } };
  secret: string;
}

async function setup(opts: { destination?: 'shopify' | 'log'; env?: Config['env']; endpoint?: Record<string, unknown> } = {}): Promise<Setup> {
  const env = await createTestEnv({
    shopifyAdminUrl: fake.url,
    env: opts.env ?? ((n) => (n === 'SHOP_TOKEN' ? TOKEN : undefined)),
    handoff: HANDOFF,
  });
  await addStore(env, { destination: opts.destination ?? 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
  const grant = await addGrant(env);
  const { endpoint, secret } = await createEndpoint(
    env,
    grant,
    opts.endpoint ?? { triggerVariant: 'order', resourceIdPath: 'order.id', sourceLabel: 'Zapier' },
  );
  const worker = new HandoffWorker(env.core);
  worker.random = () => 1; // jitter pinned to the top of its range: backoff = min(maxDelay, base * 2^(n-1))
  return { env, grant, worker, endpoint, secret };
}

/** Sends one order event and returns its id. */
async function send(s: Setup, ext: string, orderId: number | string = 'gid://shopify/Order/4501') {
  const r = await sendHook(s.env, s.endpoint, s.secret, orderEvent(ext, orderId));
  expect(r.status).toBe(202);
  return r.json.eventId as string;
}

async function detail(s: Setup, eventId: string) {
  const r = await call(s.env, 'GET', `/agent/v1/events/${eventId}`, { token: s.grant });
  expect(r.status).toBe(200);
  return r.json.data.event;
}

describe('HandoffWorker with the shopify destination', () => {
  it('delivers with one flowTriggerReceive call carrying the handle, numeric order_id and token', async () => {
    const s = await setup();
    const eventId = await send(s, 'ext-delivered');
    await s.worker.drain();

    expect(fake.rejected).toEqual([]);
    expect(fake.requests).toHaveLength(1);
    const req = fake.requests[0]!;
    expect(req.handle).toBe('hookrelay-order');
    expect(req.version).toBe(SHOPIFY_ADMIN_API_VERSION);
    expect(req.tokenPresent).toBe(true);
    expect(req.behaviour).toBe('ok');
    expect(req.payload.order_id).toBe(4501);
    expect(req.payload).toEqual({
      order_id: 4501,
      'event type': 'order.flagged',
      'external event id': 'ext-delivered',
      source: 'Zapier',
      'hookrelay event id': eventId,
      'received at': new Date(s.env.clock.now()).toISOString(),
      // An endpoint without typed fields or includeBody: the sender list empty, no body.
      sender: { fields: [] },
      'body json': '',
      'body cut': '',
    });

    const ev = await detail(s, eventId);
    expect(ev.outcome).toBe('delivered');
    expect(ev.code).toBeNull();
    expect(ev.attempts).toBe(1);
    expect(ev.attemptsDetail).toHaveLength(1);
    expect(ev.attemptsDetail[0]).toMatchObject({ number: 1, destination: 'shopify', outcome: 'delivered', httpStatus: 200, code: null });
    expect(ev.nextAttemptAt).toBeNull();
    expect(ev.deliveredAt).not.toBeNull();
  });

  it('fails SVC_HANDOFF_REJECTED after exactly one attempt when Flow answers userErrors', async () => {
    const s = await setup();
    fake.script(b.userErrors({ field: ['handle'], message: 'Trigger handle is not a valid trigger for this app' }));
    const eventId = await send(s, 'ext-user-errors');
    await s.worker.drain();
    s.env.clock.advance(HANDOFF.maxDelayMs * 10);
    await s.worker.drain();

    expect(fake.requests).toHaveLength(1);
    const ev = await detail(s, eventId);
    expect(ev.outcome).toBe('failed');
    expect(ev.code).toBe('SVC_HANDOFF_REJECTED');
    expect(ev.attemptsDetail).toHaveLength(1);
    expect(ev.attemptsDetail[0]).toMatchObject({ number: 1, outcome: 'failed', httpStatus: 200, code: 'user_errors', retryAt: null });
    expect(ev.attemptsDetail[0].message).toContain('Trigger handle is not a valid trigger for this app');
    expect(ev.attemptsDetail[0].message).toContain('handle');
    expect(ev.nextAttemptAt).toBeNull();
  });

  it('honours Retry-After on 429: no retry before 2 s on the clock, then delivered', async () => {
    const s = await setup();
    fake.script(b.status(429, '2'));
    const eventId = await send(s, 'ext-429');
    const sentAt = s.env.clock.now();
    await s.worker.drain();

    expect(fake.requests).toHaveLength(1);
    let ev = await detail(s, eventId);
    expect(ev.outcome).toBe('queued');
    expect(ev.attemptsDetail[0]).toMatchObject({ outcome: 'retry', httpStatus: 429, code: 'throttled' });
    expect(Date.parse(ev.nextAttemptAt)).toBeGreaterThanOrEqual(sentAt + 2000);
    expect(Date.parse(ev.attemptsDetail[0].retryAt)).toBe(Date.parse(ev.nextAttemptAt));

    s.env.clock.advance(1999);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(1);

    s.env.clock.advance(1);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(2);
    ev = await detail(s, eventId);
    expect(ev.outcome).toBe('delivered');
    expect(ev.attemptsDetail.map((a: { outcome: string }) => a.outcome)).toEqual(['retry', 'delivered']);
  });

  it('retries 5xx with backoff and delivers on attempt 3', async () => {
    const s = await setup();
    fake.script(b.status(500), b.status(502));
    const eventId = await send(s, 'ext-5xx');

    await s.worker.drain();
    expect(fake.requests).toHaveLength(1);
    // First retry after base * 2^0 = 10 ms (jitter pinned high): not due 9 ms later.
    s.env.clock.advance(9);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(1);
    s.env.clock.advance(1);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(2);
    // Second retry after base * 2^1 = 20 ms.
    s.env.clock.advance(19);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(2);
    s.env.clock.advance(1);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(3);

    const ev = await detail(s, eventId);
    expect(ev.outcome).toBe('delivered');
    expect(ev.attempts).toBe(3);
    expect(ev.attemptsDetail.map((a: { httpStatus: number }) => a.httpStatus)).toEqual([500, 502, 200]);
    expect(ev.attemptsDetail.map((a: { code: string | null }) => a.code)).toEqual(['server_error', 'server_error', null]);
  });

  it('fails SVC_HANDOFF_RETRY_EXHAUSTED after maxAttempts, every attempt visible in the event detail', async () => {
    const s = await setup();
    fake.script(b.status(500), b.status(500), b.status(500), b.status(500));
    const eventId = await send(s, 'ext-exhausted');
    for (let i = 0; i < HANDOFF.maxAttempts + 2; i++) {
      await s.worker.drain();
      s.env.clock.advance(HANDOFF.maxDelayMs);
    }

    expect(fake.requests).toHaveLength(HANDOFF.maxAttempts);
    const ev = await detail(s, eventId);
    expect(ev.outcome).toBe('failed');
    expect(ev.code).toBe('SVC_HANDOFF_RETRY_EXHAUSTED');
    expect(ev.attempts).toBe(HANDOFF.maxAttempts);
    expect(ev.nextAttemptAt).toBeNull();
    expect(ev.attemptsDetail).toHaveLength(HANDOFF.maxAttempts);
    expect(ev.attemptsDetail.map((a: { number: number }) => a.number)).toEqual([1, 2, 3]);
    expect(ev.attemptsDetail.map((a: { outcome: string }) => a.outcome)).toEqual(['retry', 'retry', 'failed']);
    for (const a of ev.attemptsDetail) expect(a).toMatchObject({ destination: 'shopify', httpStatus: 500, code: 'server_error' });
    expect(ev.attemptsDetail[2].retryAt).toBeNull();

    const list = await call(s.env, 'GET', '/agent/v1/events?outcome=failed', { token: s.grant });
    expect(list.status).toBe(200);
    expect(list.json.data.events.map((e: { id: string }) => e.id)).toEqual([eventId]);
    expect(list.json.data.events[0]).toMatchObject({ code: 'SVC_HANDOFF_RETRY_EXHAUSTED', attempts: 3 });
  });

  it('records a timeout when Flow answers slower than timeoutMs, then retries', async () => {
    const s = await setup();
    fake.script(b.slow(HANDOFF.timeoutMs + 400));
    const eventId = await send(s, 'ext-slow');
    await s.worker.drain();

    let ev = await detail(s, eventId);
    expect(ev.outcome).toBe('queued');
    expect(ev.attemptsDetail).toHaveLength(1);
    expect(ev.attemptsDetail[0]).toMatchObject({ outcome: 'retry', code: 'timeout', httpStatus: null });

    s.env.clock.advance(HANDOFF.maxDelayMs);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(2);
    ev = await detail(s, eventId);
    expect(ev.outcome).toBe('delivered');
    expect(ev.attemptsDetail.map((a: { code: string | null }) => a.code)).toEqual(['timeout', null]);
  });

  it('waits out a GraphQL THROTTLED answer without spending an attempt, then delivers', async () => {
    const s = await setup();
    fake.script(b.throttled());
    const eventId = await send(s, 'ext-throttled');
    await s.worker.drain();
    let ev = await detail(s, eventId);
    expect(ev).toMatchObject({ outcome: 'queued', attempts: 0, attemptsDetail: [] });
    expect(Date.parse(ev.nextAttemptAt)).toBeGreaterThan(s.env.clock.now());
    s.env.clock.advance(HANDOFF.maxDelayMs);
    await s.worker.drain();

    expect(fake.requests.map((r) => r.behaviour)).toEqual(['throttled', 'ok']);
    ev = await detail(s, eventId);
    expect(ev.outcome).toBe('delivered');
    expect(ev.attemptsDetail.map((a: { outcome: string }) => a.outcome)).toEqual(['delivered']);
    // Counted all the same, where reliability reads look.
    const health = (await call(s.env, 'GET', '/agent/v1/reliability/destination', { token: s.grant })).json.data;
    expect(health.destinationErrors.throttled).toBe(1);
  });

  it('pauses the store without calling Flow when the token variable is not set: the event waits, never fails', async () => {
    let token: string | undefined;
    const s = await setup({ env: (n) => (n === 'SHOP_TOKEN' ? token : undefined) });
    const eventId = await send(s, 'ext-no-token');
    await s.worker.drain();
    s.env.clock.advance(HANDOFF.maxDelayMs * 10);
    await s.worker.drain();

    expect(fake.requests).toHaveLength(0);
    expect(fake.shopQueries).toHaveLength(0);
    let ev = await detail(s, eventId);
    expect(ev.outcome).toBe('queued');
    expect(ev.code).toBeNull();
    // Nothing left the box: no attempt is recorded, and it is no platform rejection.
    expect(ev.attemptsDetail).toHaveLength(0);
    expect(ev.handoffStoppedAt).toBe('paused');
    expect(ev.handoffPause).toMatchObject({ state: 'paused', reason: 'credentials', code: 'SVC_CREDENTIALS_MISSING' });
    expect(ev.handoffPause.message).toContain('SHOP_TOKEN');

    // The variable appears (an operator exported it and restarted serve): the next probe resumes, the event goes.
    token = TOKEN;
    s.env.clock.advance(HANDOFF_PROBE_MAX_MS);
    await s.worker.drain();
    ev = await detail(s, eventId);
    expect(ev.outcome).toBe('delivered');
    expect(ev.attemptsDetail.map((a: { outcome: string }) => a.outcome)).toEqual(['delivered']);
    expect(ev.handoffPause).toBeNull();
  });
});

describe('HandoffWorker with the log destination', () => {
  it('logs the handle and field names, never the payload values, and calls no platform', async () => {
    const s = await setup({ destination: 'log', endpoint: { triggerVariant: 'order', resourceIdPath: 'order.id', sourceLabel: 'Canary Source Label' } });
    const body = JSON.stringify({ event_type: 'order.canary_flagged', external_event_id: 'ext-canary-log-77', order: { id: 987654321 } });
    const r = await sendHook(s.env, s.endpoint, s.secret, body);
    expect(r.status).toBe(202);
    await s.worker.drain();

    expect(fake.requests).toHaveLength(0);
    const ev = await detail(s, r.json.eventId);
    expect(ev.outcome).toBe('delivered');
    expect(ev.attemptsDetail[0]).toMatchObject({ destination: 'log', outcome: 'delivered' });

    const handoffLines = s.env.log.lines.filter((l) => l.includes('handoff'));
    expect(handoffLines).toHaveLength(1);
    expect(handoffLines[0]).toContain('handle=hookrelay-order');
    expect(handoffLines[0]).toContain('order_id');
    expect(handoffLines[0]).toContain('external event id');
    const all = s.env.log.lines.join('\n');
    for (const value of ['987654321', 'ext-canary-log-77', 'order.canary_flagged', 'Canary Source Label', new Date(s.env.clock.now()).toISOString()]) {
      expect(all).not.toContain(value);
    }
  });
});

describe('HandoffWorker rounds and the event loop', () => {
  it('lets the loop turn after the journal and before the record, so requests are read between them', async () => {
    const s = await setup({ destination: 'log' });
    for (let i = 0; i < 3; i++) await send(s, `ext-turns-${i}`);
    // A callback queued before the round stands for a request read from a socket: it runs at the next turn.
    let readBeforeSend = false;
    let readBeforeRecord = false;
    let queuedAtSend = false;
    const sends: boolean[] = [];
    const worker = new HandoffWorker(s.env.core, {
      shopify: { name: 'shopify', send: async () => ({ kind: 'delivered', httpStatus: 200 }) },
      log: {
        name: 'log',
        async send() {
          sends.push(readBeforeSend);
          if (!queuedAtSend) setImmediate(() => (readBeforeRecord = true));
          queuedAtSend = true;
          return { kind: 'delivered', httpStatus: null };
        },
      },
    });
    const record = s.env.repo.recordAttempts.bind(s.env.repo);
    let recordSaw = null as boolean | null;
    s.env.repo.recordAttempts = async (results) => {
      recordSaw = readBeforeRecord;
      return record(results);
    };
    setImmediate(() => (readBeforeSend = true));
    expect(await worker.runOnce()).toBe(3);
    expect(sends).toEqual([true, true, true]);
    expect(recordSaw).toBe(true);
    expect(await countDelivered(s)).toBe(3);
  });
});

async function countDelivered(s: Setup): Promise<number> {
  const r = await call(s.env, 'GET', '/agent/v1/events?outcome=delivered&limit=100', { token: s.grant });
  expect(r.status).toBe(200);
  return r.json.data.events.length;
}

describe('Admin token canary', () => {
  it('never shows the Admin token in an API response or a log line', async () => {
    const s = await setup();
    fake.script(b.ok(), b.userErrors({ field: null, message: 'Invalid payload' }), b.status(429, '1'), b.status(500), b.status(401));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await send(s, `ext-canary-${i}`));
    for (let i = 0; i < HANDOFF.maxAttempts + 2; i++) {
      await s.worker.drain();
      s.env.clock.advance(HANDOFF.maxDelayMs * 2);
    }
    expect(fake.requests.length).toBeGreaterThanOrEqual(5);
    expect(fake.requests.every((r) => r.tokenPresent)).toBe(true);

    const texts: string[] = [];
    const read = async (path: string) => {
      const r = await call(s.env, 'GET', path, { token: s.grant });
      expect(r.status).toBe(200);
      texts.push(r.text);
    };
    await read('/agent/v1/events?limit=100');
    for (const id of ids) {
      await read(`/agent/v1/events/${id}`);
      await read(`/agent/v1/event-result?eventId=${id}`);
    }
    await read(`/agent/v1/endpoints/${s.endpoint.id}`);
    await read('/agent/v1/grant');
    const outcomes = new Set(
      texts
        .slice(1)
        .map((t) => JSON.parse(t).data?.event?.outcome)
        .filter(Boolean),
    );
    expect([...outcomes].sort()).toEqual(['delivered', 'failed']);

    for (const t of texts) expect(t).not.toContain(TOKEN);
    expect(s.env.log.lines.length).toBeGreaterThan(0);
    for (const line of s.env.log.lines) expect(line).not.toContain(TOKEN);
  });
});
