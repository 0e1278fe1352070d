/**
 * Alerts on the fake Shopify, with the injected clock: a silence breach raises exactly one `hookrelay-alert` handoff
 * and a new receipt exactly one recovery; sweeps during a breach raise nothing more, sweeps at once raise one; a
 * store paused for credentials, an uninstall and a burst of failed authentications raise and recover too; the
 * reliability reads and /metrics show them; the phases go through the store's Flow credentials, pause and budget,
 * journaled before the send, retried and given up, skipped without a Flow destination or workflow. No secret, no
 * signature value and no body in any alert row, log line or trigger.
 */
import { describe, expect, it } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import parse from 'parse-prometheus-text-format';
import { ALERT_TRIGGER } from '../../src/contract/triggers.ts';
import { iso } from '../../src/lib/clock.ts';
import { diagnosisFor } from '../../src/contract/diagnoses.ts';
import { hmacBase64, hmacHex } from '../../src/lib/crypto.ts';
import { shopifyWebhooks } from '../../src/platform/shopify/webhook-handler.ts';
import type { TriggerRequest } from '../../src/platform/types.ts';
import { AlertWatch } from '../../src/relay/alerts.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { b, fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, BASE, call, createEndpoint, createTestEnv, executeIntent, orderEvent, rows, sendHook, type TestEnv } from '../helpers.ts';
import { ManualClock } from '../../src/lib/clock.ts';

const CLIENT = { clientId: 'alerts-app-client-0001', clientSecret: 'alerts-client-secret-canary-4c1e' };
const SECRET_VAR = 'SHOPIFY_CLIENT_SECRET';
const VARS: Record<string, string> = {
  [SECRET_VAR]: CLIENT.clientSecret,
  HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT.clientId,
  HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT.clientSecret,
};
const SHOP = 'demo.myshopify.com';
const MIN = 60_000;
const HOUR = 3600_000;

let clock = new ManualClock();
const fake = fakeShopifyForFile({ app: CLIENT, shop: { domain: SHOP }, now: () => clock.now() });

/** What the fake Flow received of the alert trigger, in order. */
const alertsSent = () => fake.requests.filter((r) => r.handle === ALERT_TRIGGER.handle);

interface Setup {
  env: TestEnv;
  grant: string;
  watch: AlertWatch;
  worker: HandoffWorker;
}

async function setup(opts: { destination?: 'shopify' | 'log'; store?: boolean } = {}): Promise<Setup> {
  const env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => VARS[n] });
  clock = env.clock;
  if (opts.store !== false) {
    if ((opts.destination ?? 'shopify') === 'shopify')
      await addStore(env, { destination: 'shopify', auth: 'client-credentials', clientId: CLIENT.clientId, clientSecretEnv: SECRET_VAR });
    else await addStore(env);
  }
  const grant = opts.store === false ? '' : await addGrant(env, 'admin_assistant', { ttlMs: 90 * 86400_000 });
  const worker = new HandoffWorker(env.core);
  worker.pauses.random = () => 1;
  return { env, grant, watch: new AlertWatch(env.core), worker };
}

const tenantRead = async (s: Setup, path = '/agent/v1/reliability/tenant') => (await call(s.env, 'GET', path, { token: s.grant })).json.data;

async function scrape(s: Setup): Promise<Record<string, Record<string, number>>> {
  const r = await s.env.app.fetch(new Request(`${BASE}/metrics`, { headers: { authorization: `Bearer ${s.grant}` } }));
  expect(r.status).toBe(200);
  const families = parse(await r.text());
  const out: Record<string, Record<string, number>> = {};
  for (const name of ['hookrelay_alerts_open', 'hookrelay_alert_handoffs_total']) {
    const f = families.find((x) => x.name === name);
    out[name] = Object.fromEntries((f?.metrics ?? []).map((m) => [Object.values(m.labels ?? {}).join(':'), Number(m.value)]));
  }
  return out;
}

const badAuth = (s: Setup, endpoint: { id: string; auth: { headerName: string; mode: string } }, ext: string) =>
  sendHook(s.env, endpoint, 'unused', orderEvent(ext), { auth: 'sig-canary-9d41e0' });

describe('silence watch', () => {
  it('a breach raises exactly one hookrelay-alert handoff with the documented fields; later sweeps nothing; a new receipt exactly one recovery', async () => {
    const s = await setup();
    const { endpoint, secret } = await createEndpoint(s.env, s.grant, {
      triggerVariant: 'order',
      resourceIdPath: 'order.id',
      name: 'Zapier orders',
      expectedEvery: '2h',
    });
    const watchedFrom = s.env.clock.now();

    s.env.clock.advance(2 * HOUR); // exactly the interval: not past it
    expect(await s.watch.sweep()).toEqual({ raised: 0, recovered: 0, handoffs: { pending: 0, delivered: 0, failed: 0, skipped: 0 } });
    s.env.clock.advance(MIN);
    expect(await s.watch.sweep()).toEqual({ raised: 1, recovered: 0, handoffs: { pending: 0, delivered: 1, failed: 0, skipped: 0 } });
    expect(alertsSent()).toHaveLength(1);
    const raised = alertsSent()[0]!;
    expect(raised.tokenPresent).toBe(true);
    expect(Object.keys(raised.payload).sort()).toEqual([...ALERT_TRIGGER.textFields].sort());
    expect(raised.payload).toMatchObject({
      kind: 'silence',
      phase: 'raised',
      'endpoint id': endpoint.id,
      'endpoint name': 'Zapier orders',
      since: iso(watchedFrom),
    });
    expect(raised.payload['alert id']).toMatch(/^alr_/);
    expect(raised.payload.summary).toContain('longer than the 2h it expects');
    expect(raised.payload['recommended action']).toContain('Check the sender');
    for (const v of Object.values(raised.payload)) expect(String(v).length).toBeLessThanOrEqual(255);

    // Sweeps during the same breach, soon and hours later, raise and send nothing more.
    for (const step of [MIN, 3 * HOUR]) {
      s.env.clock.advance(step);
      expect(await s.watch.sweep()).toMatchObject({ raised: 0, recovered: 0, handoffs: { delivered: 0 } });
    }
    expect(alertsSent()).toHaveLength(1);

    // A new receipt: exactly one recovery, of the same alert.
    const received = s.env.clock.now();
    expect((await sendHook(s.env, endpoint, secret, orderEvent('back-1'))).status).toBe(202);
    s.env.clock.advance(MIN);
    expect(await s.watch.sweep()).toMatchObject({ raised: 0, recovered: 1, handoffs: { delivered: 1 } });
    expect(await s.watch.sweep()).toMatchObject({ raised: 0, recovered: 0, handoffs: { delivered: 0 } });
    expect(alertsSent()).toHaveLength(2);
    const recovered = alertsSent()[1]!;
    expect(recovered.payload).toMatchObject({
      'alert id': raised.payload['alert id'],
      kind: 'silence',
      phase: 'recovered',
      'endpoint id': endpoint.id,
      since: iso(watchedFrom),
    });
    expect(recovered.payload.summary).toContain(`received an event at ${iso(received)}`);

    // A new breach (quiet again past 2h from that receipt) is a new alert.
    s.env.clock.set(received + 2 * HOUR + 1);
    const again = await s.watch.sweep();
    expect(again).toMatchObject({ raised: 1, handoffs: { delivered: 1 } });
    expect(alertsSent()).toHaveLength(3);
    expect(alertsSent()[2]!.payload).toMatchObject({ phase: 'raised', since: iso(received) });
    expect(alertsSent()[2]!.payload['alert id']).not.toBe(raised.payload['alert id']);
    // None of it went through an event meter: alerts count against nothing the merchant pays for.
    const usage = (await call(s.env, 'GET', '/agent/v1/plan-usage', { token: s.grant })).json.data.meters;
    expect(usage.find((m: { meter: string }) => m.meter === 'accepted_events').used).toBe(1);
  });

  it('counts from the last receipt, and an unwatched endpoint never alerts', async () => {
    const s = await setup();
    const { endpoint, secret } = await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '2h' });
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', name: 'not watched' });
    s.env.clock.advance(30 * MIN);
    const last = s.env.clock.now();
    expect((await sendHook(s.env, endpoint, secret, orderEvent('r-1'))).status).toBe(202);
    s.env.clock.set(last + 2 * HOUR);
    expect((await s.watch.sweep()).raised).toBe(0);
    s.env.clock.advance(1);
    expect((await s.watch.sweep()).raised).toBe(1);
    expect(alertsSent()).toHaveLength(1);
    expect(alertsSent()[0]!.payload).toMatchObject({ 'endpoint id': endpoint.id, since: iso(last) });
    s.env.clock.advance(30 * 86400_000);
    expect((await s.watch.sweep()).raised).toBe(0);
  });

  it('a sweep reads the endpoints and failures of only the stores with something to watch, not of every quiet store', async () => {
    const s = await setup();
    const { endpoint } = await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '1h' });
    const quiet: string[] = [];
    for (let i = 0; i < 20; i++) quiet.push((await addStore(s.env, { shopDomain: `quiet-${i}.myshopify.com` })).storeId);
    // The storage as it is, its per-store reads observed.
    const repo = s.env.repo;
    const read: string[] = [];
    const { listEndpoints, countAuthFailures } = repo;
    repo.listEndpoints = (storeId) => {
      read.push(storeId);
      return listEndpoints.call(repo, storeId);
    };
    repo.countAuthFailures = (storeId, since) => {
      read.push(storeId);
      return countAuthFailures.call(repo, storeId, since);
    };
    try {
      s.env.clock.advance(HOUR + 1);
      expect((await s.watch.sweep()).raised).toBe(1);
      expect(alertsSent()[0]!.payload).toMatchObject({ 'endpoint id': endpoint.id });
      expect(read.length).toBeGreaterThan(0);
      expect(read.filter((id) => quiet.includes(id))).toEqual([]);
    } finally {
      Object.assign(repo, { listEndpoints, countAuthFailures });
    }
  });

  it('counts from when an edit intent began the watch; switching it off recovers an open alert', async () => {
    const s = await setup();
    const { endpoint } = await createEndpoint(s.env, s.grant, { triggerVariant: 'generic' });
    s.env.clock.advance(10 * 86400_000); // silent for 10 days, unwatched
    const path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
    const edit = async (expectedEvery: string | null, key: string) => {
      const p = await call(s.env, 'POST', path, { token: s.grant, body: { mode: 'preview', input: { expectedEvery } } });
      expect((await executeIntent(s.env, s.grant, path, p.json.data.intent, key)).status).toBe(200);
    };
    await edit('1h', 'on');
    const watchedFrom = s.env.clock.now();
    s.env.clock.advance(30 * MIN);
    await edit('1h', 'same'); // another version with the same watch keeps its start
    s.env.clock.advance(20 * MIN);
    expect((await s.watch.sweep()).raised).toBe(0);
    s.env.clock.set(watchedFrom + HOUR + 1);
    expect((await s.watch.sweep()).raised).toBe(1);
    expect(alertsSent()[0]!.payload.since).toBe(iso(watchedFrom));
    expect(alertsSent()[0]!.payload.summary).toContain('since its watch began');

    await edit(null, 'off');
    expect(await s.watch.sweep()).toMatchObject({ recovered: 1 });
    expect(alertsSent().map((r) => r.payload.phase)).toEqual(['raised', 'recovered']);
    expect(alertsSent()[1]!.payload.summary).toContain('silence watch was switched off');
  });

  it('two sweeps at once (two instances) raise one alert and send it once', async () => {
    const s = await setup();
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '30m' });
    s.env.clock.advance(31 * MIN);
    const results = await Promise.all([s.watch, new AlertWatch(s.env.core), new AlertWatch(s.env.core)].map((w) => w.sweep()));
    expect(results.reduce((n, r) => n + r.raised, 0)).toBe(1);
    expect(results.reduce((n, r) => n + r.handoffs.delivered, 0)).toBe(1);
    expect(alertsSent()).toHaveLength(1);
    expect((await rows(s.env, 'SELECT id FROM alerts')).length).toBe(1);
    expect((await rows(s.env, 'SELECT alert_id FROM alert_handoffs')).length).toBe(1);
  });
});

describe('the reliability reads and /metrics', () => {
  it('show an open alert (a reason, verdict degraded), then the recovery; the gauge by kind and the handoffs counted', async () => {
    const s = await setup();
    const { endpoint, secret } = await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', name: 'n8n stock', expectedEvery: '1h' });
    expect((await tenantRead(s)).alerts).toEqual({ open: [], recent: [] });
    expect((await scrape(s)).hookrelay_alerts_open).toEqual({ silence: 0, handoff_paused: 0, uninstalled: 0, auth_failures: 0 });

    s.env.clock.advance(HOUR + MIN);
    await s.watch.sweep();
    for (const path of ['/agent/v1/reliability/tenant', '/agent/v1/reliability/destination']) {
      const read = await tenantRead(s, path);
      expect(read.alerts.open).toHaveLength(1);
      expect(read.alerts.open[0]).toMatchObject({
        kind: 'silence',
        state: 'open',
        endpoint: { id: endpoint.id, name: 'n8n stock' },
        raisedAt: iso(s.env.clock.now()),
        recoveredAt: null,
        handoff: { raised: 'delivered', recovered: null },
      });
      expect(read.alerts.open[0].id).toMatch(/^alr_/);
      expect(read.alerts.recent).toEqual(read.alerts.open);
      expect(read.reasons.some((r: string) => r.startsWith('Open alert (silence)'))).toBe(true);
      expect(read.verdict).toBe('degraded');
    }
    expect(await scrape(s)).toEqual({
      hookrelay_alerts_open: { silence: 1, handoff_paused: 0, uninstalled: 0, auth_failures: 0 },
      hookrelay_alert_handoffs_total: { 'raised:delivered': 1 },
    });

    expect((await sendHook(s.env, endpoint, secret, orderEvent('x'))).status).toBe(202);
    s.env.clock.advance(MIN);
    await s.watch.sweep();
    const after = await tenantRead(s);
    expect(after.alerts.open).toEqual([]);
    expect(after.alerts.recent).toHaveLength(1);
    expect(after.alerts.recent[0]).toMatchObject({
      state: 'recovered',
      recoveredAt: iso(s.env.clock.now()),
      handoff: { raised: 'delivered', recovered: 'delivered' },
    });
    expect(after.alerts.recent[0].summary).toContain('Recovered');
    expect(after.reasons.some((r: string) => r.startsWith('Open alert'))).toBe(false);
    expect(await scrape(s)).toEqual({
      hookrelay_alerts_open: { silence: 0, handoff_paused: 0, uninstalled: 0, auth_failures: 0 },
      hookrelay_alert_handoffs_total: { 'raised:delivered': 1, 'recovered:delivered': 1 },
    });
  });
});

describe('the same mechanism for stores and senders', () => {
  it('a store paused for credentials raises handoff_paused (its phases wait for the resume) and recovers when a probe resumes it', async () => {
    const s = await setup();
    const { endpoint, secret } = await createEndpoint(s.env, s.grant);
    fake.refuseAllTokens(true);
    expect((await sendHook(s.env, endpoint, secret, orderEvent('p-1'))).status).toBe(202);
    await s.worker.drain();
    const pausedAt = s.env.clock.now();
    expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { delivered: 0, pending: 0 } });
    expect(alertsSent()).toHaveLength(0); // the store cannot reach Flow while paused: nothing is tried
    const open = (await tenantRead(s)).alerts.open;
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ kind: 'handoff_paused', endpoint: null, since: iso(pausedAt), handoff: { raised: 'pending' } });
    expect(open[0].summary).toContain('SVC_CREDENTIALS_REFUSED');
    expect(open[0].recommendedAction).toContain('refused');
    expect(await s.watch.sweep()).toMatchObject({ raised: 0 });

    fake.refuseAllTokens(false);
    s.env.clock.advance(MIN);
    await s.worker.drain(); // the probe succeeds, the handoff resumes
    expect(await s.watch.sweep()).toMatchObject({ recovered: 1, handoffs: { delivered: 2 } });
    expect(alertsSent().map((r) => [r.payload.kind, r.payload.phase])).toEqual([
      ['handoff_paused', 'raised'],
      ['handoff_paused', 'recovered'],
    ]);
    expect(alertsSent()[0]!.payload['endpoint id']).toBe('');
    expect(alertsSent()[1]!.payload.summary).toContain('the handoff resumed');
  });

  it('an uninstall raises uninstalled; an install again recovers it, and both phases reach Flow after it', async () => {
    const s = await setup({ store: false });
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => s.env.app.fetch(req) });
    try {
      await install(s.env);
      const grant = await addGrant(s.env, 'admin_assistant', { ttlMs: 90 * 86400_000 });
      const delivered = await fake.deliverWebhook(`http://127.0.0.1:${server.port}/shopify/webhooks`, { topic: 'app/uninstalled', payload: fake.uninstall() });
      expect(delivered.status).toBe(200);
      await shopifyWebhooks(s.env.core).idle();
      const uninstalledAt = (await s.env.repo.getStoreByShop(SHOP))!.uninstalledAt!;
      expect(uninstalledAt).toBe(s.env.clock.now());

      s.env.clock.advance(MIN);
      expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { delivered: 0 } });
      const read = (await call(s.env, 'GET', '/agent/v1/reliability/tenant', { token: grant })).json.data;
      expect(read.alerts.open.map((a: { kind: string }) => a.kind)).toEqual(['uninstalled']);
      expect(read.alerts.open[0].since).toBe(iso(uninstalledAt));
      expect(read.alerts.open[0].recommendedAction).toContain(`${BASE}/auth/install?shop=${SHOP}`);
      expect(alertsSent()).toHaveLength(0);

      await install(s.env);
      s.env.clock.advance(MIN);
      expect(await s.watch.sweep()).toMatchObject({ recovered: 1, handoffs: { delivered: 2 } });
      expect(alertsSent().map((r) => [r.payload.kind, r.payload.phase])).toEqual([
        ['uninstalled', 'raised'],
        ['uninstalled', 'recovered'],
      ]);
      expect(alertsSent()[1]!.payload.summary).toContain('installed again');
    } finally {
      await server.stop(true);
    }
  });

  it('a burst of failed authentications raises auth_failures at the threshold; an authenticated receipt recovers it; no value is kept', async () => {
    const s = await setup();
    const { endpoint, secret } = await createEndpoint(s.env, s.grant, { triggerVariant: 'order', resourceIdPath: 'order.id', name: 'make orders' });
    const first = s.env.clock.now();
    for (let i = 0; i < 4; i++) {
      expect((await badAuth(s, endpoint, `bad-${i}`)).status).toBe(401);
      s.env.clock.advance(10_000);
    }
    expect((await s.watch.sweep()).raised).toBe(0); // 4 in the window: below the threshold of 5
    expect((await badAuth(s, endpoint, 'bad-4')).status).toBe(401);
    expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { delivered: 1 } });
    expect(alertsSent()[0]!.payload).toMatchObject({
      kind: 'auth_failures',
      phase: 'raised',
      'endpoint id': endpoint.id,
      'endpoint name': 'make orders',
      since: iso(first),
    });
    expect(alertsSent()[0]!.payload.summary).toContain('5 requests');
    // More failures: still the same alert (no flapping below the threshold either).
    for (let i = 5; i < 8; i++) expect((await badAuth(s, endpoint, `bad-${i}`)).status).toBe(401);
    s.env.clock.advance(5 * MIN);
    expect(await s.watch.sweep()).toMatchObject({ raised: 0, recovered: 0 });

    expect((await sendHook(s.env, endpoint, secret, orderEvent('good-1'))).status).toBe(202);
    s.env.clock.advance(1000);
    expect(await s.watch.sweep()).toMatchObject({ recovered: 1, handoffs: { delivered: 1 } });
    expect(alertsSent().map((r) => r.payload.phase)).toEqual(['raised', 'recovered']);

    // Canaries: the endpoint secret, the signature sent, the client secret and the event bodies are nowhere.
    const stored = JSON.stringify([await rows(s.env, 'SELECT * FROM alerts'), await rows(s.env, 'SELECT * FROM alert_handoffs')]);
    const logged = s.env.log.lines.join('\n');
    const sent = JSON.stringify(alertsSent().map((r) => r.payload));
    for (const text of [stored, logged, sent]) {
      for (const canary of [secret, 'sig-canary-9d41e0', CLIENT.clientSecret, 'good-1', 'bad-4']) expect(text).not.toContain(canary);
    }
  });

  it("a burst's recommended action names what signature forensics recognised in its newest failure, with the preset's fix", async () => {
    const s = await setup();
    const { endpoint, secret } = await createEndpoint(s.env, s.grant, {
      triggerVariant: 'order',
      resourceIdPath: 'order.id',
      senderProfile: 'n8n',
      authMode: 'hmac_sha256',
    });
    for (let i = 0; i < 5; i++) {
      const body = orderEvent(`upper-${i}`);
      const upper = hmacHex(secret, body).toUpperCase();
      const r = await sendHook(s.env, endpoint, secret, body, { auth: upper });
      expect([r.status, r.json.diagnosis?.code]).toEqual([401, 'hex_uppercase']);
    }
    expect(await s.watch.sweep()).toMatchObject({ raised: 1 });
    const action = alertsSent()[0]!.payload['recommended action'];
    expect(action).toContain('hex_uppercase');
    expect(action).toContain(diagnosisFor('hex_uppercase', 'n8n').fix);
    expect(action).not.toContain(hmacHex(secret, orderEvent('upper-4')).toUpperCase());
  });

  it('a burst recovers once a whole window passes without a failure', async () => {
    const s = await setup();
    const { endpoint } = await createEndpoint(s.env, s.grant);
    for (let i = 0; i < 6; i++) expect((await badAuth(s, endpoint, `b-${i}`)).status).toBe(401);
    expect((await s.watch.sweep()).raised).toBe(1);
    s.env.clock.advance(10 * MIN - 1);
    expect((await s.watch.sweep()).recovered).toBe(0);
    s.env.clock.advance(2);
    expect((await s.watch.sweep()).recovered).toBe(1);
    expect(alertsSent()[1]!.payload.summary).toContain('no failed authentication for 10m');
  });
});

describe('the handoff of a phase', () => {
  it('a store without a Flow destination marks its phases skipped and sends nothing', async () => {
    const s = await setup({ destination: 'log' });
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { skipped: 1 } });
    expect(fake.requests).toHaveLength(0);
    expect((await tenantRead(s)).alerts.open[0].handoff).toEqual({ raised: 'skipped', recovered: null });
    expect((await rows(s.env, 'SELECT last_error AS e, next_attempt_at AS n FROM alert_handoffs'))[0]).toEqual({ e: 'no_flow_destination', n: null });
  });

  it('Flow reporting no enabled workflow for hookrelay-alert (its lifecycle callback) skips the phases', async () => {
    const s = await setup();
    const body = JSON.stringify({
      flow_trigger_definition_id: 'hookrelay-alert',
      has_enabled_flow: false,
      shopify_domain: SHOP,
      shop_id: 1,
      timestamp: new Date(s.env.clock.now()).toISOString(),
    });
    const res = await s.env.app.fetch(
      new Request(`${BASE}/flow/lifecycle`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-shopify-hmac-sha256': hmacBase64(CLIENT.clientSecret, body) },
      }),
    );
    expect(res.status).toBe(200);
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { skipped: 1 } });
    expect(alertsSent()).toHaveLength(0);
  });

  it('a send that gets a 5xx retries on its schedule; a refusal (userErrors) fails at once; retries run out', async () => {
    const s = await setup();
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    fake.script(b.status(503));
    expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { pending: 1 } });
    expect((await rows(s.env, 'SELECT state, attempts, last_error AS e FROM alert_handoffs'))[0]).toEqual({ state: 'pending', attempts: 1, e: 'server_error' });
    s.env.clock.advance(29_000);
    expect((await s.watch.sweep()).handoffs).toMatchObject({ pending: 0, delivered: 0 });
    s.env.clock.advance(1_000);
    expect((await s.watch.sweep()).handoffs).toMatchObject({ delivered: 1 });
    expect(alertsSent().map((r) => r.behaviour)).toEqual(['status', 'ok']);

    // A second endpoint's alert: Flow refuses the trigger (not deployed, say): failed at once, never retried.
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    fake.script(b.userErrors({ field: ['handle'], message: 'Invalid handle' }));
    expect((await s.watch.sweep()).handoffs).toMatchObject({ failed: 1 });
    s.env.clock.advance(HOUR);
    expect((await s.watch.sweep()).handoffs).toMatchObject({ failed: 0, delivered: 0, pending: 0 });

    // A third: Flow keeps answering 500: one attempt and one per delay of the schedule (30s, 2m, 10m, 1h, 6h), then given up.
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    fake.script(...Array.from({ length: 6 }, () => b.status(500)));
    await s.watch.sweep();
    for (const delay of [30_000, 2 * MIN, 10 * MIN, HOUR, 6 * HOUR]) {
      s.env.clock.advance(delay);
      await s.watch.sweep();
    }
    const last = await rows(s.env, "SELECT state, attempts, last_error AS e FROM alert_handoffs WHERE state <> 'delivered' ORDER BY created_at");
    expect(last).toEqual([
      { state: 'failed', attempts: 1, e: 'user_errors' },
      { state: 'failed', attempts: 6, e: 'server_error' },
    ]);
    expect(alertsSent().filter((r) => r.behaviour === 'status')).toHaveLength(7);
    expect(s.env.log.lines.some((l) => l.includes('given up after 6 attempts'))).toBe(true);
  });

  it('THROTTLED (the cost bucket short) defers the phase without counting an attempt; it goes once the bucket refills', async () => {
    const s = await setup();
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    fake.script(b.throttled());
    expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { pending: 1, delivered: 0 } });
    const row = (await rows(s.env, 'SELECT state, attempts, last_error AS e, next_attempt_at AS at FROM alert_handoffs'))[0]!;
    expect(row).toMatchObject({ state: 'pending', attempts: 0, e: 'throttled' });
    expect(row.at).toBeGreaterThan(s.env.clock.now());
    s.env.clock.advance(row.at - s.env.clock.now());
    expect((await s.watch.sweep()).handoffs).toMatchObject({ delivered: 1 });
    expect(alertsSent().map((r) => r.behaviour)).toEqual(['throttled', 'ok']);
  });

  it('an issued token that expired is renewed by the send itself, which is then delivered (no pause, no failed attempt)', async () => {
    const s = await setup();
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    expect((await s.watch.sweep()).handoffs).toMatchObject({ delivered: 1 });
    const tokens = fake.tokenRequests.length;
    fake.expireIssuedTokens();
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    expect((await s.watch.sweep()).handoffs).toMatchObject({ delivered: 1, pending: 0, failed: 0 });
    expect(fake.tokenRequests.length).toBe(tokens + 1);
    expect(alertsSent().map((r) => r.behaviour)).toEqual(['ok', 'unauthorized', 'ok']);
    const store = (await s.env.repo.getStoreByShop(SHOP))!;
    expect((await s.env.repo.links.get(store.id))?.pauseReason ?? null).toBeNull();
  });

  it('a Shopify outage of 40 minutes: the phase retries on its schedule and is delivered once, after Shopify is back', async () => {
    const s = await setup();
    // A first alert gets the store its token before the outage.
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    expect((await s.watch.sweep()).handoffs.delivered).toBe(1);
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    fake.setDown(true);
    s.env.clock.advance(6 * MIN);
    expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { pending: 1 } });
    for (let t = 5; t <= 40; t += 5) {
      s.env.clock.advance(5 * MIN);
      expect((await s.watch.sweep()).handoffs.delivered).toBe(0);
    }
    fake.setDown(false);
    let delivered = 0;
    for (let t = 0; t < 90 && !delivered; t += 5) {
      s.env.clock.advance(5 * MIN);
      delivered = (await s.watch.sweep()).handoffs.delivered;
    }
    expect(delivered).toBe(1);
    expect(await rows(s.env, "SELECT state FROM alert_handoffs WHERE state <> 'delivered'")).toEqual([]);
    // Sent at the raise, then at the sweeps after each delay came due (30 s, 2 min, 10 min), then after the hour's.
    expect(alertsSent().map((r) => r.behaviour)).toEqual(['ok', 'down', 'down', 'down', 'down', 'ok']);
  });

  it('is journaled sending before the send: a send whose instance died is taken over after its lease, sent once more and said so', async () => {
    const s = await setup();
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    // An instance that leased the phase and died mid-send: its send never returns.
    let started = 0;
    const dying = new AlertWatch(s.env.core, {
      send: (_req: TriggerRequest) => {
        started++;
        return new Promise(() => {});
      },
    });
    void dying.sweep();
    await until(() => started === 1);
    expect((await rows(s.env, 'SELECT state, attempts FROM alert_handoffs'))[0]).toEqual({ state: 'sending', attempts: 1 });
    expect((await s.watch.sweep()).handoffs.delivered).toBe(0); // under its lease: nobody else sends it
    s.env.clock.advance(2 * MIN);
    expect((await s.watch.sweep()).handoffs.delivered).toBe(1);
    expect(alertsSent()).toHaveLength(1);
    expect((await rows(s.env, "SELECT state, attempts FROM alert_handoffs WHERE alert_id IN (SELECT id FROM alerts WHERE kind = 'silence')"))[0]).toEqual({
      state: 'delivered',
      attempts: 2,
    });
    expect(s.env.log.lines.some((l) => l.includes('may have reached Flow'))).toBe(true);
  });

  it('a send refused for credentials pauses the store for events too, and waits for the resume', async () => {
    const s = await setup();
    await createEndpoint(s.env, s.grant, { triggerVariant: 'generic', expectedEvery: '5m' });
    s.env.clock.advance(6 * MIN);
    fake.refuseAllTokens(true);
    expect(await s.watch.sweep()).toMatchObject({ raised: 1, handoffs: { pending: 1, delivered: 0 } });
    const store = (await s.env.repo.getStoreByShop(SHOP))!;
    expect(await s.env.repo.links.get(store.id)).toMatchObject({ pauseReason: 'credentials', pauseCode: 'SVC_CREDENTIALS_REFUSED' });
    // Paused: the phase waits (nothing is tried) while the store's probe fails.
    expect(await s.watch.sweep()).toMatchObject({ handoffs: { pending: 0, delivered: 0 } });
    expect(
      (await rows(s.env, "SELECT state, attempts, last_error AS e FROM alert_handoffs WHERE alert_id IN (SELECT id FROM alerts WHERE kind = 'silence')"))[0],
    ).toEqual({
      state: 'pending',
      attempts: 1,
      e: 'credentials',
    });
    fake.refuseAllTokens(false);
    s.env.clock.advance(MIN);
    await s.worker.drain();
    expect(await s.watch.sweep()).toMatchObject({ recovered: 1, handoffs: { delivered: 3 } });
    // Refused (and once more with a renewed token), then delivered after the resume: the refused send counts as an
    // attempt. The pause it caused was an alert of its own (raised by the sweep while paused), delivered too.
    expect(alertsSent().map((x) => `${x.behaviour}:${x.payload.kind}:${x.payload.phase}`)).toEqual([
      'unauthorized:silence:raised',
      'unauthorized:silence:raised',
      'ok:handoff_paused:raised',
      'ok:silence:raised',
      'ok:handoff_paused:recovered',
    ]);
    expect((await rows(s.env, "SELECT state, attempts FROM alert_handoffs WHERE alert_id IN (SELECT id FROM alerts WHERE kind = 'silence')"))[0]).toEqual({
      state: 'delivered',
      attempts: 2,
    });
  });
});

describe('the hookrelay-alert trigger extension', () => {
  it('declares exactly the fields sent, in order, as the contract names them; no endpoint can select it', async () => {
    const toml = Bun.TOML.parse(readFileSync(join(import.meta.dir, '../../shopify/extensions/alert/shopify.extension.toml'), 'utf8')) as {
      extensions: { name: string; type: string; handle: string; description: string }[];
      settings: { fields: { type: string; key: string; description: string }[] };
    };
    expect(toml.extensions).toEqual([{ name: ALERT_TRIGGER.name, type: 'flow_trigger', handle: ALERT_TRIGGER.handle, description: ALERT_TRIGGER.description }]);
    expect(toml.settings.fields.map((f) => f.key)).toEqual([...ALERT_TRIGGER.textFields]);
    for (const f of toml.settings.fields) {
      expect(f.type).toBe('single_line_text_field');
      expect(f.key).toMatch(/^[A-Za-z]+( [A-Za-z]+)*$/);
      expect(f.description.length).toBeGreaterThan(0);
    }
    const s = await setup();
    const refused = await call(s.env, 'POST', '/agent/v1/endpoints', { token: s.grant, body: { triggerVariant: 'alert' } });
    expect(refused.status).toBe(400);
    expect(refused.json.error.details.map((d: { path: string }) => d.path)).toEqual(['body.triggerVariant']);
  });
});

/** The merchant's browser: /auth/install, Shopify's authorize page (the fake approves), back to /auth/callback. */
async function install(e: TestEnv): Promise<void> {
  const begin = await e.app.fetch(new Request(`${BASE}/auth/install?shop=${SHOP}`));
  const cookie = begin.headers.get('set-cookie')!.split(';')[0]!;
  const authorize = await fetch(begin.headers.get('location')!, { redirect: 'manual' });
  const back = new URL(authorize.headers.get('location')!);
  const landed = await e.app.fetch(new Request(back.toString(), { headers: { cookie } }));
  expect(landed.status).toBe(200);
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await Bun.sleep(2);
  }
}
