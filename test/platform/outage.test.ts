/**
 * Shopify down for longer than the old two-minute retry window, on the clock: the first sends fail and retry on
 * their schedule, then the store pauses (`platform_unavailable`): no event fails, one probe at a time asks again
 * with backoff, and everything is delivered once Shopify answers again — after ten minutes, and after six hours. The
 * retry schedule itself spans a day.
 */
import { describe, expect, it } from 'bun:test';
import { DEFAULT_RETRY_SCHEDULE_MS, RETRY_JITTER } from '../../src/contract/limits.ts';
import { defaultConfig } from '../../src/core.ts';
import { loadSettings } from '../../src/settings.ts';
import { OUTAGE_AFTER_FAILURES } from '../../src/relay/pauses.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { b, fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

const TOKEN = 'shpat_outage_static_token';
let env: TestEnv | null = null;
const fake = fakeShopifyForFile({ token: TOKEN, now: () => (env ? env.clock.now() : Date.now()) });

describe('the retry schedule', () => {
  it('by default retries 11 times over at least 24 hours even with the most jitter, and no delay is under 5 s', () => {
    const schedule = defaultConfig().handoff.retrySchedule;
    expect(schedule).toEqual(DEFAULT_RETRY_SCHEDULE_MS);
    expect(schedule).toHaveLength(11);
    const span = schedule.reduce((a, b) => a + b, 0);
    expect(span * (1 - RETRY_JITTER)).toBeGreaterThanOrEqual(24 * 3600_000);
    expect(Math.min(...schedule)).toBe(5_000);
  });

  it('is set by HOOKRELAY_RETRY_SCHEDULE (or retry_schedule in hookrelay.toml), refused with the rule it broke when it cannot be read', () => {
    const schedule = (env: Record<string, string>) => {
      const config = defaultConfig();
      loadSettings({ env }).apply(config);
      return config.handoff.retrySchedule;
    };
    expect(schedule({})).toBe(DEFAULT_RETRY_SCHEDULE_MS);
    expect(schedule({ HOOKRELAY_RETRY_SCHEDULE: '10s, 1m,2h,1d' })).toEqual([10_000, 60_000, 7_200_000, 86_400_000]);
    for (const bad of ['soon', '10s,,1m', '500ms', '0s', '8d', Array(31).fill('1m').join(',')]) {
      expect(() => schedule({ HOOKRELAY_RETRY_SCHEDULE: bad })).toThrow(/HOOKRELAY_RETRY_SCHEDULE: retry_schedule must be 1 to 30 delays/);
    }
  });

  it('takes each retry after its delay, shortened by jitter but never below 80%, and fails the event after the last', async () => {
    env = await createTestEnv({
      shopifyAdminUrl: fake.url,
      env: (n) => (n === 'TOKEN' ? TOKEN : undefined),
      handoff: { retrySchedule: [10_000, 60_000], timeoutMs: 500 },
    });
    await addStore(env, { destination: 'shopify', adminTokenEnv: 'TOKEN' });
    const grant = await addGrant(env);
    const { endpoint, secret } = await createEndpoint(env, grant);
    const worker = new HandoffWorker(env.core);
    worker.random = () => 0; // the most jitter: 8 s and 48 s
    fake.script(b.status(502), b.status(502), b.status(502));
    const id = (await sendHook(env, endpoint, secret, orderEvent('sched'))).json.eventId as string;
    await worker.drain();
    env.clock.advance(7_999);
    await worker.drain();
    expect(fake.requests).toHaveLength(1);
    env.clock.advance(1);
    await worker.drain();
    expect(fake.requests).toHaveLength(2);
    env.clock.advance(48_000);
    await worker.drain();
    const ev = (await call(env, 'GET', `/agent/v1/events/${id}`, { token: grant })).json.data.event;
    expect(fake.requests).toHaveLength(3);
    expect(ev).toMatchObject({ outcome: 'failed', code: 'SVC_HANDOFF_RETRY_EXHAUSTED', attempts: 3 });
  });
});

/** A store handing off to the fake with the default retry schedule and probe delays, jitter pinned to its top. */
async function outageSetup() {
  env = await createTestEnv({
    shopifyAdminUrl: fake.url,
    env: (n) => (n === 'TOKEN' ? TOKEN : undefined),
    handoff: { ...defaultConfig().handoff, timeoutMs: 500, concurrency: 4 },
  });
  const e = env;
  await addStore(e, { destination: 'shopify', adminTokenEnv: 'TOKEN' });
  const grant = await addGrant(e, 'admin_assistant', { ttlMs: 7 * 86400_000 });
  const { endpoint, secret } = await createEndpoint(e, grant);
  const worker = new HandoffWorker(e.core);
  worker.random = () => 1;
  worker.pauses.random = () => 1;
  return { e, grant, worker, endpoint, secret };
}

describe('Shopify down for longer than two minutes', () => {
  it('pauses the store after a few failures in a row: no event fails, probes are bounded, all delivered after', async () => {
    const { e, grant, worker, endpoint, secret } = await outageSetup();
    const send = async (prefix: string, n: number) => {
      for (let i = 0; i < n; i++) expect((await sendHook(e, endpoint, secret, orderEvent(`${prefix}-${i}`, 5000 + i))).status).toBe(202);
    };

    fake.setDown(true);
    await send('down', 30);
    await worker.drain();
    // The first sends fail (each one attempt, a retry on its schedule); the OUTAGE_AFTER_FAILURES-th pauses the store.
    const failedSends = fake.requests.filter((r) => r.behaviour === 'down').length;
    expect(failedSends).toBeGreaterThanOrEqual(OUTAGE_AFTER_FAILURES);
    expect(failedSends).toBeLessThanOrEqual(OUTAGE_AFTER_FAILURES + 4);
    const state = (await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data;
    expect(state.handoff).toMatchObject({ state: 'paused', reason: 'platform_unavailable', code: 'SVC_PLATFORM_UNAVAILABLE' });
    const health = (await call(e, 'GET', '/agent/v1/reliability/destination', { token: grant })).json.data;
    expect(health.handoff.code).toBe('SVC_PLATFORM_UNAVAILABLE');
    expect(health.verdict).not.toBe('healthy');

    // Ten minutes down, on the clock, events still arriving: probes only, back off to one every 5 minutes.
    const sendsBefore = fake.requests.length;
    const probesBefore = fake.shopQueries.length;
    for (let t = 0; t < 600; t += 5) {
      e.clock.advance(5_000);
      if (t % 60 === 0) await send(`during-${t}`, 3);
      await worker.drain();
    }
    expect(fake.requests.length).toBe(sendsBefore); // no event sent while paused
    const probes = fake.shopQueries.length - probesBefore;
    // 5, 10, 20, 40, 80, 160, 300 s apart: at most 8 probes in 600 s.
    expect(probes).toBeGreaterThanOrEqual(5);
    expect(probes).toBeLessThanOrEqual(8);
    expect(await count(e, 'events', "outcome = 'failed'")).toBe(0);
    expect(await count(e, 'attempts', "outcome = 'failed'")).toBe(0);

    fake.setDown(false);
    e.clock.advance(300_000);
    await worker.drain();
    e.clock.advance(60_000); // the sends that failed first retry on their own schedule (5 s, 30 s …)
    await worker.drain();
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(60);
    expect(await count(e, 'events', "outcome <> 'delivered'")).toBe(0);
    expect((await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data.handoff.state).toBe('active');
  });
});

describe('Shopify down for hours', () => {
  it('six hours on the clock: events keep arriving and none fails or spends a retry; a probe every 5 minutes at most; all delivered after', async () => {
    const { e, grant, worker, endpoint, secret } = await outageSetup();
    let sent = 0;
    const send = async (n: number) => {
      for (let i = 0; i < n; i++) expect((await sendHook(e, endpoint, secret, orderEvent(`hours-${sent}`, 7000 + sent++))).status).toBe(202);
    };

    fake.setDown(true);
    const HOURS = 6;
    for (let minute = 0; minute < HOURS * 60; minute++) {
      if (minute % 30 === 0) await send(4);
      await worker.drain();
      e.clock.advance(60_000);
    }
    // Only the sends that showed the outage reached Shopify; after that, probes alone.
    const failedSends = fake.requests.filter((r) => r.behaviour === 'down').length;
    expect(failedSends).toBeGreaterThanOrEqual(OUTAGE_AFTER_FAILURES);
    expect(failedSends).toBeLessThanOrEqual(OUTAGE_AFTER_FAILURES + 4);
    // 5, 10, 20, 40, 80, 160 s, then every 300 s: about 72 probes in six hours, never more than one a minute.
    expect(fake.shopQueries.length).toBeGreaterThanOrEqual(60);
    expect(fake.shopQueries.length).toBeLessThanOrEqual(HOURS * 12 + 8);
    expect(await count(e, 'events', "outcome = 'failed'")).toBe(0);
    expect(await count(e, 'attempts', "outcome = 'failed'")).toBe(0);
    expect((await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data.handoff).toMatchObject({
      state: 'paused',
      code: 'SVC_PLATFORM_UNAVAILABLE',
    });
    // No event used up its retries waiting: those that met the outage before the pause spent two at most (of 12);
    // every event received during it spent none.
    const events = (await call(e, 'GET', '/agent/v1/events?limit=100', { token: grant })).json.data.events as { attempts: number }[];
    expect(events).toHaveLength(sent);
    expect(Math.max(...events.map((ev) => ev.attempts))).toBeLessThanOrEqual(2);
    expect(events.filter((ev) => ev.attempts > 0).length).toBeLessThanOrEqual(OUTAGE_AFTER_FAILURES);

    fake.setDown(false);
    for (let t = 0; t < 7; t++) {
      e.clock.advance(60_000);
      await worker.drain();
    }
    expect(await count(e, 'events', "outcome = 'delivered'")).toBe(sent);
    expect(await count(e, 'events', "outcome <> 'delivered'")).toBe(0);
    expect((await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data.handoff.state).toBe('active');
  });
});
