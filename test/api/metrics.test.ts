/** GET /metrics over a real socket, read by a real parser of the Prometheus text format: values, types, histograms, auth. */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import parse, { type MetricFamily } from 'parse-prometheus-text-format';
import { hmacHex } from '../../src/lib/crypto.ts';
import { Registry, renderText } from '../../src/lib/metrics.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { VERSION } from '../../src/version.ts';
import { addGrant, addStore, createEndpoint, createTestEnv, orderEvent, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let server: ReturnType<typeof Bun.serve>;
let base: string;
let admin: string;
let observer: string;
let eventReader: string;
let storeId: string;
let endpoint: { id: string; auth: { headerName: string } };
let secret: string;

beforeAll(async () => {
  env = await createTestEnv();
  storeId = (await addStore(env)).storeId;
  admin = await addGrant(env);
  observer = await addGrant(env, 'observer');
  eventReader = await addGrant(env, 'observer', { scopes: ['event:read'] });
  ({ endpoint, secret } = await createEndpoint(env, admin));
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => env.app.fetch(req) });
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(() => server.stop(true));

function hook(body: string, auth: string | null, endpointId = endpoint.id) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (auth !== null) headers[endpoint.auth.headerName] = auth;
  return fetch(`${base}/hooks/${endpointId}`, { method: 'POST', headers, body });
}

function api(path: string, token: string, headers: Record<string, string> = {}) {
  return fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
}

async function scrape(token = observer): Promise<{ text: string; families: MetricFamily[] }> {
  const res = await api('/metrics', token);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  const text = await res.text();
  return { text, families: parse(text) };
}

function family(families: MetricFamily[], name: string): MetricFamily {
  const f = families.find((x) => x.name === name);
  if (!f) throw new Error(`no family ${name}`);
  return f;
}

/** The sample of `name` whose labels are exactly `labels`; 0 when the series does not exist yet. */
function value(families: MetricFamily[], name: string, labels: Record<string, string> = {}): number {
  const sample = family(families, name).metrics.find((m) => JSON.stringify(m.labels ?? {}) === JSON.stringify(labels));
  return sample ? Number(sample.value) : 0;
}

/** Cumulative buckets in ascending `le`, never decreasing, `+Inf` equal to the count. Returns the count. */
function checkHistogram(families: MetricFamily[], name: string): number {
  const f = family(families, name);
  expect(f.type).toBe('HISTOGRAM');
  expect(f.metrics).toHaveLength(1);
  const h = f.metrics[0]!;
  const buckets = Object.entries(h.buckets ?? {})
    .map(([le, n]) => [le === '+Inf' ? Infinity : Number(le), Number(n)] as const)
    .sort((a, b) => a[0] - b[0]);
  expect(buckets.at(-1)![0]).toBe(Infinity);
  for (let i = 1; i < buckets.length; i++) expect(buckets[i]![1]).toBeGreaterThanOrEqual(buckets[i - 1]![1]);
  expect(buckets.at(-1)![1]).toBe(Number(h.count));
  expect(Number(h.sum)).toBeGreaterThanOrEqual(0);
  return Number(h.count);
}

describe('GET /metrics', () => {
  it("counts inbound outcomes, auth failures, handoffs, agent calls and the backlog of the grant's store", async () => {
    const before = (await scrape()).families;
    const body = orderEvent('ext-1');
    expect(((await (await hook(body, hmacHex(secret, body))).json()) as any).status).toBe('accepted');
    expect(((await (await hook(body, hmacHex(secret, body))).json()) as any).status).toBe('duplicate_suppressed');
    const unmappable = JSON.stringify({ event_type: 'order.flagged', external_event_id: 'ext-2', order: {} });
    expect((await hook(unmappable, hmacHex(secret, unmappable))).status).toBe(422);
    expect((await hook(orderEvent('ext-3'), 'f'.repeat(64))).status).toBe(401);
    expect((await hook(orderEvent('ext-4'), null)).status).toBe(401);
    expect((await hook(body, 'x', 'ep_unknown')).status).toBe(404);
    expect((await api('/agent/v1/events', observer)).status).toBe(200);
    expect((await api('/agent/v1/setup-state', eventReader)).status).toBe(403);
    expect((await api('/agent/v1/events', 'hrg_not_a_grant')).status).toBe(401);

    env.clock.advance(90_000);
    const pending = (await scrape()).families;
    expect(value(pending, 'hookrelay_handoff_backlog')).toBe(1);
    expect(value(pending, 'hookrelay_handoff_oldest_pending_seconds')).toBe(90);
    expect(await env.repo.handoffBacklog(storeId)).toEqual(await env.repo.pendingStats(storeId));

    await new HandoffWorker(env.core).drain();
    const { text, families } = await scrape();
    const types = Object.fromEntries(families.map((f) => [f.name, f.type]));
    expect(types).toMatchObject({
      hookrelay_inbound_requests_total: 'COUNTER',
      hookrelay_auth_failures_total: 'COUNTER',
      hookrelay_handoff_attempts_total: 'COUNTER',
      hookrelay_agent_calls_total: 'COUNTER',
      hookrelay_unattributed_requests_total: 'COUNTER',
      hookrelay_handoff_backlog: 'GAUGE',
      hookrelay_handoff_oldest_pending_seconds: 'GAUGE',
      hookrelay_commit_batch_size: 'HISTOGRAM',
      hookrelay_commit_seconds: 'HISTOGRAM',
      process_resident_memory_bytes: 'GAUGE',
      process_cpu_seconds_total: 'COUNTER',
      process_start_time_seconds: 'GAUGE',
      hookrelay_build_info: 'GAUGE',
      hookrelay_instance_info: 'GAUGE',
    });

    // This store's series started with this test file's store: exact values.
    const inbound = (outcome: string) => value(families, 'hookrelay_inbound_requests_total', { outcome });
    expect([inbound('accepted'), inbound('duplicate_suppressed'), inbound('rejected'), inbound('auth_failed'), inbound('held')]).toEqual([1, 1, 1, 2, 0]);
    expect(value(families, 'hookrelay_auth_failures_total', { code: 'SVC_AUTH_FAILED' })).toBe(1);
    expect(value(families, 'hookrelay_auth_failures_total', { code: 'SVC_AUTH_HEADER_MISSING' })).toBe(1);
    expect(value(families, 'hookrelay_handoff_attempts_total', { result: 'delivered' })).toBe(1);
    expect(value(families, 'hookrelay_agent_calls_total', { operation: 'createEndpoint', outcome: 'ok' })).toBe(1);
    expect(value(families, 'hookrelay_agent_calls_total', { operation: 'listEvents', outcome: 'ok' })).toBe(1);
    expect(value(families, 'hookrelay_agent_calls_total', { operation: 'getSetupState', outcome: 'refused' })).toBe(1);
    expect(value(families, 'hookrelay_handoff_backlog')).toBe(0);
    expect(value(families, 'hookrelay_handoff_oldest_pending_seconds')).toBe(0);

    // Box-wide series are the process's (other test files may share it): compare with the first scrape.
    const delta = (labels: Record<string, string>) =>
      value(families, 'hookrelay_unattributed_requests_total', labels) - value(before, 'hookrelay_unattributed_requests_total', labels);
    expect(delta({ surface: 'inbound', outcome: 'not_found' })).toBe(1);
    expect(delta({ surface: 'agent_api', outcome: 'auth_failed' })).toBe(1);
    const commits = checkHistogram(families, 'hookrelay_commit_batch_size');
    expect(commits - checkHistogram(before, 'hookrelay_commit_batch_size')).toBeGreaterThanOrEqual(1);
    expect(checkHistogram(families, 'hookrelay_commit_seconds')).toBe(commits);
    const batch = family(families, 'hookrelay_commit_batch_size').metrics[0]!;
    expect(Number(batch.sum)).toBeGreaterThanOrEqual(commits);

    expect(value(families, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(value(families, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(value(families, 'process_start_time_seconds')).toBeLessThanOrEqual(Date.now() / 1000);
    if (process.platform === 'linux') expect(value(families, 'process_open_fds')).toBeGreaterThan(0);
    expect(value(families, 'hookrelay_build_info', { version: VERSION })).toBe(1);
    const instance = family(families, 'hookrelay_instance_info').metrics[0]!;
    expect(instance.labels?.pid).toBe(String(process.pid));
    expect(family(families, 'hookrelay_handoff_backlog').help).toContain('from the database');
    expect(family(families, 'hookrelay_inbound_requests_total').help).toContain('this process');

    for (const planted of [admin, observer, secret, storeId, endpoint.id]) expect(text).not.toContain(planted);
  });

  it('answers 401 without a valid grant and counts it box-wide', async () => {
    const count = async () => value((await scrape()).families, 'hookrelay_unattributed_requests_total', { surface: 'metrics', outcome: 'auth_failed' });
    const before = await count();
    const bare = await fetch(`${base}/metrics`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toContain('Bearer');
    expect(((await bare.json()) as any).error.code).toBe('unauthorized');
    const wrong = await api('/metrics', 'hrg_not_a_grant');
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as any).scope).toBeNull();
    expect(await count()).toBe(before + 2);
  });

  it("answers 403 with the scope refusal for a grant without setup:read, and for another store's expected context", async () => {
    const res = await api('/metrics', eventReader);
    expect(res.status).toBe(403);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe('insufficient_scope');
    expect(body.refusal.category).toBe('scope');
    expect(body.error.details.missingScopes).toEqual(['setup:read']);
    const mismatch = await api('/metrics', observer, { 'X-Service-Expected-Shop-Domain': 'other.myshopify.com' });
    expect(mismatch.status).toBe(403);
    expect(((await mismatch.json()) as any).error.code).toBe('agent_context_mismatch');
  });

  it('answers 405 to other methods', async () => {
    const res = await fetch(`${base}/metrics`, { method: 'POST', headers: { authorization: `Bearer ${observer}` } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
  });

  it("shows a grant of another store only that store's figures, and no box-wide commit figures once the box has two", async () => {
    await addStore(env, { shopDomain: 'other.myshopify.com' });
    const other = await addGrant(env, 'observer', { shop: 'other.myshopify.com' });
    const { families } = await scrape(other);
    expect(value(families, 'hookrelay_inbound_requests_total', { outcome: 'accepted' })).toBe(0);
    expect(family(families, 'hookrelay_agent_calls_total').metrics).toEqual([]);
    expect(value(families, 'hookrelay_handoff_backlog')).toBe(0);
    for (const f of [families, (await scrape()).families]) {
      expect(f.some((x) => x.name === 'hookrelay_commit_batch_size' || x.name === 'hookrelay_commit_seconds')).toBe(false);
    }
  });
});

describe('the text rendering', () => {
  it('escapes label values and HELP so the parser reads back the exact strings', () => {
    const r = new Registry();
    const awkward = 'a "quoted" back\\slash\nnew line';
    r.counter('x_total', 'help with \\ and\nnewline', ['v']).labels(awkward).inc(3);
    r.histogram('x_seconds', 'h', [0.5, 1]).labels().observe(0.7);
    const [counter, histogram] = parse(renderText([r]));
    expect(counter).toEqual({ name: 'x_total', help: 'help with \\ and\nnewline', type: 'COUNTER', metrics: [{ labels: { v: awkward }, value: '3' }] });
    expect(histogram).toEqual({
      name: 'x_seconds',
      help: 'h',
      type: 'HISTOGRAM',
      metrics: [{ buckets: { '0.5': '0', '1': '1', '+Inf': '1' }, sum: '0.7', count: '1' }],
    });
  });

  it('refuses names the format cannot carry', () => {
    const r = new Registry();
    expect(() => r.counter('bad-name', 'h')).toThrow();
    expect(() => r.counter('ok_total', 'h', ['le'])).toThrow();
    expect(() => r.histogram('h_seconds', 'h', [1, 0.5])).toThrow();
    r.gauge('g', 'h');
    expect(() => r.gauge('g', 'h')).toThrow();
  });
});
