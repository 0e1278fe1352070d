/**
 * Staying live on a store whose tokens expire: client-credentials tokens renewed on the clock before they lapse,
 * once on a 401, once per store however many sends need one (and across instances on PostgreSQL); a platform that
 * refuses every token pauses the store's handoff (events wait, a bounded number of probes) and drains it after.
 */
import { describe, expect, it } from 'bun:test';
import { openPgRepo } from '../../db/pg/repo.ts';
import { createCore, defaultConfig } from '../../src/core.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { initStore } from '../../src/ops/stores.ts';
import { shopifyPlatform } from '../../src/platform/shopify/platform.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { until } from '../fixtures/handoff.ts';
import { TEST_DATABASE_URL, testSchema } from '../fixtures/storage.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

const CLIENT = { clientId: 'relay-client-0001', clientSecret: 'client-secret-canary-7f3a' };
const SECRET_VAR = 'SHOPIFY_CLIENT_SECRET';
/** The clock every deployment of this file and the fake share: expiry is driven by it, never by sleeps. */
let clock = new ManualClock();
const fake = fakeShopifyForFile({ app: { ...CLIENT, tokenTtlSeconds: 4 }, now: () => clock.now() });

const HANDOFF = {
  timeoutMs: 2000,
  baseDelayMs: 1000,
  maxDelayMs: 60_000,
  maxAttempts: 4,
  concurrency: 8,
  batchSize: 64,
  probeBaseDelayMs: 5_000,
  probeMaxDelayMs: 60_000,
};

interface Setup {
  env: TestEnv;
  grant: string;
  worker: HandoffWorker;
  endpoint: { id: string; auth: { headerName: string; mode: string } };
  secret: string;
}

async function setup(): Promise<Setup> {
  const env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => (n === SECRET_VAR ? CLIENT.clientSecret : undefined), handoff: HANDOFF });
  clock = env.clock;
  await addStore(env, { destination: 'shopify', auth: 'client-credentials', clientId: CLIENT.clientId, clientSecretEnv: SECRET_VAR });
  const grant = await addGrant(env, 'admin_assistant', { ttlMs: 30 * 86400_000 });
  const { endpoint, secret } = await createEndpoint(env, grant);
  const worker = new HandoffWorker(env.core);
  worker.pauses.random = () => 1; // probe delays at the top of their jitter: base * 2^n
  return { env, grant, worker, endpoint, secret };
}

async function sendMany(s: Setup, prefix: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await sendHook(s.env, s.endpoint, s.secret, orderEvent(`${prefix}-${i}`, 4000 + i));
    expect(r.status).toBe(202);
    ids.push(r.json.eventId);
  }
  return ids;
}

/** serve started again on the same storage: a new process's core and worker, nothing held in memory. */
const restartedWorker = (s: Setup) =>
  new HandoffWorker(createCore({ repo: s.env.repo, box: s.env.core.box, clock: s.env.clock, log: memoryLog(), config: s.env.core.config }));

const outcomes = async (s: Setup) =>
  Object.fromEntries(
    ((await call(s.env, 'GET', '/agent/v1/events?limit=100', { token: s.grant })).json.data.events as { outcome: string }[]).reduce(
      (m, e) => m.set(e.outcome, (m.get(e.outcome) ?? 0) + 1),
      new Map<string, number>(),
    ),
  );

describe('client-credentials tokens on the clock', () => {
  it('hands off hundreds of events while tokens expire every 4 s: renewed ahead of expiry, never a 401, 0 failed', async () => {
    const s = await setup();
    let sent = 0;
    // 300 events over 30 s of clock: 20 every 2 s, the worker draining between.
    for (let step = 0; step < 15; step++) {
      await sendMany(s, `tick${step}`, 20);
      sent += 20;
      await s.worker.drain();
      s.env.clock.advance(2_000);
    }
    expect(sent).toBe(300);
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(300);
    expect(await count(s.env, 'events', "outcome <> 'delivered'")).toBe(0);
    expect(await count(s.env, 'attempts', "outcome <> 'delivered'")).toBe(0);
    expect(fake.requests.filter((r) => r.behaviour === 'unauthorized')).toHaveLength(0);
    // A 4 s token is renewed at 3 s: one token for each 2 or 4 s step of the 30 s, far fewer than sends.
    const issued = fake.tokenRequests.filter((t) => t.outcome === 'issued').length;
    expect(issued).toBeGreaterThanOrEqual(7);
    expect(issued).toBeLessThanOrEqual(16);
    expect(fake.tokenRequests.every((t) => t.clientId === CLIENT.clientId)).toBe(true);
    const store = (await s.env.repo.getStoreByShop('demo.myshopify.com'))!;
    const link = (await s.env.repo.links.get(store.id))!;
    expect(link.tokenGeneration).toBe(issued);
    expect(link.pauseReason).toBeNull();
  });

  it('renews once on a 401 (a token that died early) and delivers in the same attempt', async () => {
    const s = await setup();
    await sendMany(s, 'warm', 1);
    await s.worker.drain();
    const before = fake.tokenRequests.length;
    fake.expireIssuedTokens();
    const ids = await sendMany(s, 'after-revoke', 5);
    await s.worker.drain();
    expect(fake.tokenRequests.length).toBe(before + 1);
    for (const id of ids) {
      const ev = (await call(s.env, 'GET', `/agent/v1/events/${id}`, { token: s.grant })).json.data.event;
      expect(ev.outcome).toBe('delivered');
      expect(ev.attemptsDetail).toHaveLength(1);
    }
  });

  it('keeps sending with the token it holds when a renewal fails, pausing only once that token is about to end', async () => {
    const s = await setup();
    await sendMany(s, 'first', 2);
    await s.worker.drain();
    expect(fake.tokenRequests).toHaveLength(1);
    // 3.2 s into a 4 s token, the token endpoint down: no new token, the held one still hands off.
    fake.failTokenRequests({ status: 503 });
    s.env.clock.advance(3_200);
    await sendMany(s, 'renewal-down', 4);
    await s.worker.drain();
    const store = (await s.env.repo.getStoreByShop('demo.myshopify.com'))!;
    // The one renewal tried beside the sends, and recorded as failed.
    await until(async () => (await s.env.repo.links.get(store.id))?.lastRenewalError === 'SVC_PLATFORM_UNAVAILABLE');
    expect(fake.tokenRequests).toHaveLength(2);
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(6);
    expect((await s.env.repo.links.get(store.id))!.pauseReason).toBeNull();
    expect(s.env.log.lines.some((l) => l.includes('got no Admin API token') && l.includes('HTTP 503'))).toBe(true);
    // Past its end (less the margin): no token to send with, the store pauses; the endpoint back, a probe resumes.
    s.env.clock.advance(700);
    await sendMany(s, 'expired', 2);
    await s.worker.drain();
    expect((await s.env.repo.links.get(store.id))!.pauseCode).toBe('SVC_PLATFORM_UNAVAILABLE');
    expect(await count(s.env, 'events', "outcome = 'queued'")).toBe(2);
    fake.failTokenRequests(null);
    s.env.clock.advance(5_000);
    await s.worker.drain();
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(8);
    expect(fake.requests.filter((r) => r.behaviour === 'unauthorized')).toHaveLength(0);
  });

  it('renews only for a send: a quiet store asks for no token, and a restart sends with the token stored (no burst of renewals)', async () => {
    const s = await setup();
    await sendMany(s, 'before', 2);
    await s.worker.drain();
    expect(fake.tokenRequests).toHaveLength(1);

    // serve restarted a second later: a new process on the same storage, nothing held in memory.
    clock.advance(1_000);
    const worker = restartedWorker(s);
    await sendMany(s, 'after-restart', 2);
    await worker.drain();
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(4);
    expect(fake.tokenRequests).toHaveLength(1);

    // Quiet for ten lives of the token: the worker's passes renew nothing while nothing is sent.
    for (let i = 0; i < 10; i++) {
      clock.advance(4_000);
      await worker.drain();
    }
    expect(fake.tokenRequests).toHaveLength(1);
    // The next send obtains the one token it needs.
    await sendMany(s, 'after-quiet', 1);
    await worker.drain();
    expect(fake.tokenRequests).toHaveLength(2);
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(5);
  });

  it('a restart after the stored token has expired renews before its first send: the stored token is not taken, never a 401', async () => {
    const s = await setup();
    await sendMany(s, 'before', 1);
    await s.worker.drain();
    expect(fake.tokenRequests).toHaveLength(1);

    // serve restarted once the stored token's 4 s have passed: the round's link read must not hand it to the send.
    clock.advance(5_000);
    const worker = restartedWorker(s);
    await sendMany(s, 'after-expiry', 2);
    await worker.drain();
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(3);
    expect(fake.tokenRequests).toHaveLength(2);
    expect(fake.requests.filter((r) => r.behaviour === 'unauthorized')).toHaveLength(0);
  });

  it('obtains one token for many concurrent sends', async () => {
    const s = await setup();
    const store = (await s.env.repo.getStoreByShop('demo.myshopify.com'))!;
    const platform = shopifyPlatform(s.env.core);
    const got = await Promise.all(Array.from({ length: 50 }, () => platform.credentials.token(store)));
    expect(got.every((g) => g.ok)).toBe(true);
    expect(new Set(got.map((g) => (g.ok ? g.token.generation : -2))).size).toBe(1);
    expect(fake.tokenRequests).toHaveLength(1);

    // Through the worker: 8 lanes, a batch of 64, the token lapsed on the clock: one renewal for the round.
    s.env.clock.advance(5_000);
    await sendMany(s, 'lanes', 64);
    await s.worker.drain();
    expect(fake.tokenRequests).toHaveLength(2);
    expect(fake.requests.filter((r) => r.behaviour === 'ok')).toHaveLength(64);
  });
});

it("counts a token's life from its request: an answer that arrives late never outlives the platform's clock", async () => {
  // The token endpoint answers 2 s (of the shared clock) after Shopify issued the token: its 4 s started then.
  const slow = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const res = await fetch(`${fake.url}${url.pathname}${url.search}`, {
        method: req.method,
        headers: req.headers,
        body: await req.arrayBuffer(),
        redirect: 'manual',
      });
      const body = await res.arrayBuffer();
      if (url.pathname === '/admin/oauth/access_token') clock.advance(2_000);
      return new Response(body, { status: res.status, headers: res.headers });
    },
  });
  try {
    const env = await createTestEnv({
      shopifyAdminUrl: `http://127.0.0.1:${slow.port}`,
      env: (n) => (n === SECRET_VAR ? CLIENT.clientSecret : undefined),
      handoff: HANDOFF,
    });
    clock = env.clock;
    await addStore(env, { destination: 'shopify', auth: 'client-credentials', clientId: CLIENT.clientId, clientSecretEnv: SECRET_VAR });
    const grant = await addGrant(env, 'admin_assistant', { ttlMs: 30 * 86400_000 });
    const { endpoint, secret } = await createEndpoint(env, grant);
    const worker = new HandoffWorker(env.core);
    const store = (await env.repo.getStoreByShop('demo.myshopify.com'))!;
    for (let i = 0; i < 6; i++) {
      await sendHook(env, endpoint, secret, orderEvent(`late-${i}`, 4100 + i));
      await worker.drain();
      // A renewal may still run beside the send that began it: wait until the newest token issued is the one stored.
      const issuedAt = fake.tokenRequests[fake.tokenRequests.length - 1]!.at;
      await until(async () => (await env.repo.links.get(store.id))!.tokenObtainedAt === issuedAt);
      expect((await env.repo.links.get(store.id))!.tokenExpiresAt).toBe(issuedAt + 4_000);
      clock.advance(1_500);
    }
    expect(fake.requests.filter((r) => r.behaviour === 'unauthorized')).toHaveLength(0);
    expect(await count(env, 'events', "outcome = 'delivered'")).toBe(6);
  } finally {
    await slow.stop(true);
  }
});

describe('the platform refusing every token for a while', () => {
  it('pauses the store (events wait, never fail), probes a bounded number of times over 3 minutes, then drains everything', async () => {
    const s = await setup();
    await sendMany(s, 'before', 5);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(5);

    fake.refuseAllTokens(true);
    const first = await sendMany(s, 'refused', 40);
    await s.worker.drain();
    // The round's sends in flight when the refusal came were refused (each renewed once); the rest never left.
    const refusedSends = fake.requests.filter((r) => r.behaviour === 'unauthorized').length;
    expect(refusedSends).toBeGreaterThan(0);
    expect(refusedSends).toBeLessThanOrEqual(2 * HANDOFF.concurrency);

    const store = (await s.env.repo.getStoreByShop('demo.myshopify.com'))!;
    const setupState = (await call(s.env, 'GET', '/agent/v1/setup-state', { token: s.grant })).json.data;
    expect(setupState.handoff).toMatchObject({ state: 'paused', reason: 'credentials', code: 'SVC_CREDENTIALS_REFUSED' });
    expect(setupState.handoff.recommendedAction).toContain('installed');
    expect(setupState.nextRecommendedActions[0].action).toBe('resume_handoff');
    const health = (await call(s.env, 'GET', '/agent/v1/reliability/tenant', { token: s.grant })).json.data;
    expect(health.handoff.state).toBe('paused');
    expect(health.verdict).not.toBe('healthy');
    expect(health.reasons.join(' ')).toContain('SVC_CREDENTIALS_REFUSED');
    const scrape = await (await s.env.app.fetch(new Request('http://local/metrics', { headers: { authorization: `Bearer ${s.grant}` } }))).text();
    expect(scrape).toContain('hookrelay_handoff_paused{reason="credentials",code="SVC_CREDENTIALS_REFUSED"} 1');
    expect(scrape).toMatch(/hookrelay_handoff_backlog \d+/);
    const waiting = (await call(s.env, 'GET', `/agent/v1/events/${first[39]}`, { token: s.grant })).json.data.event;
    expect(waiting).toMatchObject({ outcome: 'queued', handoffStoppedAt: 'paused', handoffPause: { code: 'SVC_CREDENTIALS_REFUSED' } });

    // Longer than the old 2-minute retry window, events still arriving: no send, a few probes, no failure.
    const sendsBefore = fake.requests.length;
    const queriesBefore = fake.shopQueries.length; // the reads above looked at the destination live
    const later: string[] = [];
    for (let t = 0; t < 180; t += 5) {
      s.env.clock.advance(5_000);
      if (t % 30 === 0) later.push(...(await sendMany(s, `during-${t}`, 2)));
      await s.worker.drain();
    }
    expect(fake.requests.length).toBe(sendsBefore);
    // 5, 10, 20, 40, 60, 60 s apart: at most six probes in 180 s, each one cheap `shop` query with a freshly
    // requested token (the refused one is not tried again).
    const probes = fake.shopQueries.length - queriesBefore;
    expect(probes).toBeGreaterThanOrEqual(4);
    expect(probes).toBeLessThanOrEqual(6);
    expect(fake.shopQueries.slice(queriesBefore).every((q) => q.behaviour === 'unauthorized')).toBe(true);
    expect(await count(s.env, 'events', "outcome = 'failed'")).toBe(0);
    const paused = (await s.env.repo.links.get(store.id))!;
    expect(paused.probes).toBe(probes);

    fake.refuseAllTokens(false);
    s.env.clock.advance(60_000);
    await s.worker.drain();
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(5 + 40 + later.length);
    expect(await count(s.env, 'events', "outcome <> 'delivered'")).toBe(0);
    expect(await outcomes(s)).toEqual({ delivered: 5 + 40 + later.length });
    expect((await s.env.repo.links.get(store.id))!.pauseReason).toBeNull();
    expect((await call(s.env, 'GET', '/agent/v1/setup-state', { token: s.grant })).json.data.handoff.state).toBe('active');
    const after = await (await s.env.app.fetch(new Request('http://local/metrics', { headers: { authorization: `Bearer ${s.grant}` } }))).text();
    expect(after).toContain('hookrelay_handoff_paused{reason="none",code="none"} 0');
    expect(s.env.log.lines.some((l) => l.includes('handoff resumed for demo.myshopify.com'))).toBe(true);
  });

  it('pauses on a client secret the platform will not take (invalid_client) and resumes once it does', async () => {
    const s = await setup();
    fake.failTokenRequests('invalid_client');
    const ids = await sendMany(s, 'bad-client', 3);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(0); // no token, no send
    const ev = (await call(s.env, 'GET', `/agent/v1/events/${ids[0]}`, { token: s.grant })).json.data.event;
    expect(ev).toMatchObject({ outcome: 'queued', attempts: 0, handoffPause: { code: 'SVC_TOKEN_REQUEST_FAILED' } });
    expect(ev.handoffPause.message).toContain('invalid_client');
    fake.failTokenRequests(null);
    s.env.clock.advance(10_000);
    await s.worker.drain();
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(3);
  });

  it('pauses on a token endpoint that answers 429 as an outage, not as refused credentials', async () => {
    const s = await setup();
    fake.failTokenRequests({ status: 429 });
    const ids = await sendMany(s, 'token-429', 1);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(0);
    const ev = (await call(s.env, 'GET', `/agent/v1/events/${ids[0]}`, { token: s.grant })).json.data.event;
    expect(ev).toMatchObject({ outcome: 'queued', attempts: 0, handoffPause: { reason: 'platform_unavailable', code: 'SVC_PLATFORM_UNAVAILABLE' } });
    expect(ev.handoffPause.message).toContain('HTTP 429');
    fake.failTokenRequests(null);
  });

  it("pauses on a token endpoint that answers 503 as an outage (Shopify's, not the credentials'), and resumes once it answers", async () => {
    const s = await setup();
    fake.failTokenRequests({ status: 503 });
    const ids = await sendMany(s, 'token-503', 3);
    await s.worker.drain();
    expect(fake.requests).toHaveLength(0);
    const ev = (await call(s.env, 'GET', `/agent/v1/events/${ids[0]}`, { token: s.grant })).json.data.event;
    expect(ev).toMatchObject({ outcome: 'queued', attempts: 0, handoffPause: { reason: 'platform_unavailable', code: 'SVC_PLATFORM_UNAVAILABLE' } });
    expect(ev.handoffPause.message).toContain('HTTP 503');
    const state = (await call(s.env, 'GET', '/agent/v1/setup-state', { token: s.grant })).json.data;
    expect(state.handoff).toMatchObject({ reason: 'platform_unavailable', code: 'SVC_PLATFORM_UNAVAILABLE' });
    expect(state.handoff.recommendedAction).toContain('Shopify is not answering');
    // A probe while it still answers 503: still an outage.
    s.env.clock.advance(10_000);
    await s.worker.drain();
    expect((await s.env.repo.links.get((await s.env.repo.getStoreByShop('demo.myshopify.com'))!.id))!.pauseCode).toBe('SVC_PLATFORM_UNAVAILABLE');
    fake.failTokenRequests(null);
    s.env.clock.advance(60_000);
    await s.worker.drain();
    expect(await count(s.env, 'events', "outcome = 'delivered'")).toBe(3);

    // A token that died early (401) and a renewal the endpoint answers 503: the attempt sent is Shopify's outage too.
    fake.expireIssuedTokens();
    fake.failTokenRequests({ status: 503 });
    const [late] = await sendMany(s, 'token-503-after-401', 1);
    await s.worker.drain();
    const detail = (await call(s.env, 'GET', `/agent/v1/events/${late}`, { token: s.grant })).json.data.event;
    expect(detail).toMatchObject({ outcome: 'queued', handoffPause: { code: 'SVC_PLATFORM_UNAVAILABLE' } });
    expect(detail.attemptsDetail.map((a: { code: string }) => a.code)).toEqual(['server_error']);
  });
});

describe.if(!!TEST_DATABASE_URL)('two instances on one PostgreSQL', () => {
  it('share one renewal: both ask at once, the platform issues one token, both use it', async () => {
    const schema = testSchema();
    const key = newSecretKey();
    const shared = new ManualClock();
    clock = shared;
    const open = async () => {
      const repo = await openPgRepo({ url: TEST_DATABASE_URL!, schema, max: 4 });
      return createCore({
        repo,
        box: new SecretBox(key),
        clock: shared,
        log: memoryLog(),
        config: defaultConfig({ shopifyAdminUrl: fake.url, env: (n) => (n === SECRET_VAR ? CLIENT.clientSecret : undefined) }),
      });
    };
    const a = await open();
    const b = await open();
    try {
      const { store: view } = await initStore(a, {
        shopDomain: 'demo.myshopify.com',
        destination: 'shopify',
        auth: 'client-credentials',
        clientId: CLIENT.clientId,
        clientSecretEnv: SECRET_VAR,
      });
      const store = (await a.repo.getStore(view.storeId))!;
      const asks = [
        ...Array.from({ length: 10 }, () => shopifyPlatform(a).credentials.token(store)),
        ...Array.from({ length: 10 }, () => shopifyPlatform(b).credentials.token(store)),
      ];
      const got = await Promise.all(asks);
      expect(got.every((g) => g.ok)).toBe(true);
      expect(new Set(got.map((g) => (g.ok ? g.token.value : ''))).size).toBe(1);
      expect(fake.tokenRequests).toHaveLength(1);

      // Past 3/4 of its life: both still send with it while one of them renews beside (the other waits for that
      // renewal's token in the database); then both hand out the renewed one.
      shared.advance(3_100);
      const during = await Promise.all([shopifyPlatform(a).credentials.token(store), shopifyPlatform(b).credentials.token(store)]);
      expect(during.every((g) => g.ok && g.token.value === (got[0]!.ok ? got[0]!.token.value : ''))).toBe(true);
      await until(async () => fake.tokenRequests.length === 2);
      shared.advance(1);
      const after = async () => Promise.all([shopifyPlatform(a).credentials.token(store), shopifyPlatform(b).credentials.token(store)]);
      await until(async () => {
        const again = await after();
        return again[0].ok && again[1].ok && again[0].token.generation === 2 && again[1].token.generation === 2;
      });
      expect(fake.tokenRequests).toHaveLength(2);
    } finally {
      await Promise.all([a.repo.close(), b.repo.close()]);
    }
  });
});

describe('the API version Shopify answers with', () => {
  const future = fakeShopifyForFile({ token: 'shpat_future_static_token', supportedVersions: ['2027-01', '2027-04'] });

  it('records a fall-forward (2026-10 asked, 2027-01 answered), warns once, and doctor-facing reads show it', async () => {
    const env = await createTestEnv({
      shopifyAdminUrl: future.url,
      env: (n) => (n === 'STATIC_TOKEN' ? 'shpat_future_static_token' : undefined),
      handoff: HANDOFF,
    });
    clock = env.clock;
    await addStore(env, { destination: 'shopify', adminTokenEnv: 'STATIC_TOKEN' });
    const grant = await addGrant(env);
    const { endpoint, secret } = await createEndpoint(env, grant);
    for (let i = 0; i < 3; i++) await sendHook(env, endpoint, secret, orderEvent(`ff-${i}`));
    await new HandoffWorker(env.core).drain();
    expect(future.requests.map((r) => [r.version, r.answeredVersion])).toEqual(Array(3).fill(['2026-10', '2027-01']));
    expect(await count(env, 'events', "outcome = 'delivered'")).toBe(3);
    const warnings = env.log.lines.filter((l) => l.includes('answered with Admin API 2027-01, not 2026-10'));
    expect(warnings).toHaveLength(1);
    const platform = (await call(env, 'GET', '/agent/v1/setup-state', { token: grant })).json.data.platform;
    expect(platform).toMatchObject({
      answeredApiVersion: '2027-01',
      apiVersion: { version: '2026-10' },
      credentials: { mode: 'static', adminTokenEnv: 'STATIC_TOKEN', variableSet: true },
    });
    expect(platform.check.result).toBe('ok');
  });
});
