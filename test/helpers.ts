/** Shared test harness: a fresh in-memory SQLite with migrations, a manual clock, a store, grants and the app. */
import { migrateSqlite, openSqliteDatabase, SqliteRepo } from '../db/sqlite/repo.ts';
import type { EventRow } from '../db/types.ts';
import { PgRepo } from '../db/pg/repo.ts';
import { TEST_DATABASE_URL, testSchema } from './fixtures/storage.ts';
import type { Tier } from '../src/contract/scopes.ts';
import { createCore, defaultConfig, type Config, type Core } from '../src/core.ts';
import { ManualClock } from '../src/lib/clock.ts';
import { hmacHex, newSecretKey, SecretBox } from '../src/lib/crypto.ts';
import { memoryLog } from '../src/lib/log.ts';
import { issueGrant } from '../src/ops/grants.ts';
import { initStore, type InitStoreInput } from '../src/ops/stores.ts';
import { createApp, type App } from '../src/server/app.ts';

export const BASE = 'http://local';

export interface TestEnv {
  core: Core;
  app: App;
  clock: ManualClock;
  log: ReturnType<typeof memoryLog>;
  repo: SqliteRepo;
}

/**
 * The storage a test deployment runs on: SQLite in memory, or a fresh PostgreSQL schema when
 * HOOKRELAY_TEST_BACKEND=postgres (with HOOKRELAY_TEST_DATABASE_URL): the API suites then run against PostgreSQL.
 */
async function testRepo(): Promise<SqliteRepo> {
  if (process.env.HOOKRELAY_TEST_BACKEND === 'postgres' && TEST_DATABASE_URL) {
    return (await PgRepo.open({ url: TEST_DATABASE_URL, schema: testSchema(), max: 4 })) as unknown as SqliteRepo;
  }
  const sqlite = openSqliteDatabase({ path: ':memory:' });
  await migrateSqlite(sqlite);
  return new SqliteRepo(sqlite);
}

/** A fresh deployment in memory. `config` overrides defaults (handoff delays, env, admin URL…). */
export async function createTestEnv(config: Partial<Config> = {}): Promise<TestEnv> {
  const repo = await testRepo();
  const clock = new ManualClock();
  const log = memoryLog();
  const core = createCore({
    repo,
    box: new SecretBox(newSecretKey()),
    clock,
    log,
    config: defaultConfig({
      publicUrl: BASE,
      env: () => undefined,
      ...config,
      handoff: { timeoutMs: 2000, baseDelayMs: 1000, maxDelayMs: 60_000, maxAttempts: 4, concurrency: 4, batchSize: 16, ...config.handoff },
    }),
  });
  return { core, app: createApp(core), clock, log, repo };
}

export async function addStore(env: TestEnv, input: Partial<InitStoreInput> = {}) {
  const { store } = await initStore(env.core, { shopDomain: 'demo.myshopify.com', ...input });
  return store;
}

/** Issues a grant and returns its token. */
export async function addGrant(env: TestEnv, tier: Tier = 'admin_assistant', opts: { shop?: string; scopes?: string[]; ttlMs?: number } = {}) {
  const g = await issueGrant(env.core, { shopDomain: opts.shop ?? 'demo.myshopify.com', tier, scopes: opts.scopes, ttlMs: opts.ttlMs ?? 3600_000 });
  return g.token;
}

/** Calls the app in-process. `body` objects are sent as JSON. */
export async function call(env: TestEnv, method: string, path: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await env.app.fetch(new Request(`${BASE}${path}`, { method, headers, body }));
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, json, text };
}

/** Executes a previewed intent: its confirmation token, under an Idempotency-Key. */
export function executeIntent(env: TestEnv, token: string, path: string, intent: { id: string; confirmation: { token: string } }, key: string) {
  return call(env, 'POST', path, { token, headers: { 'Idempotency-Key': key }, body: { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token } });
}

/** Creates an endpoint through the API; returns the endpoint view and its secret. */
export async function createEndpoint(env: TestEnv, token: string, input: Record<string, unknown> = { triggerVariant: 'order', resourceIdPath: 'order.id' }) {
  const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: input });
  if (r.status !== 201) throw new Error(`createEndpoint failed: ${r.status} ${r.text}`);
  return { endpoint: r.json.data.endpoint, secret: r.json.data.secret as string };
}

/** Sends an inbound event. `sign: true` signs the exact bytes with HMAC; a string is sent as the header value. */
export async function sendHook(
  env: TestEnv,
  endpoint: { id: string; auth: { headerName: string; mode: string } },
  secret: string,
  body: string,
  opts: { headers?: Record<string, string>; auth?: string | null } = {},
) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
  const value = opts.auth === undefined ? (endpoint.auth.mode === 'hmac_sha256' ? hmacHex(secret, body) : secret) : opts.auth;
  if (value !== null) headers[endpoint.auth.headerName] = value;
  const res = await env.app.fetch(new Request(`${BASE}/hooks/${endpoint.id}`, { method: 'POST', headers, body }));
  return { status: res.status, json: (await res.json()) as any };
}

export function orderEvent(ext: string, orderId: number | string = 4501) {
  return JSON.stringify({ event_type: 'order.flagged', external_event_id: ext, order: { id: orderId } });
}

/** Holds every group commit until the returned function is called (to observe that no 202 precedes its commit). */
export function holdCommits(env: TestEnv): () => void {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const original = env.repo.commitIngest.bind(env.repo);
  env.repo.commitIngest = async (receipts, failures, lease) => {
    await gate;
    return original(receipts, failures, lease);
  };
  return release;
}

/** An events row as a commit stores it: a queued receipt, due at receipt, unless `fields` say otherwise. */
export function eventRow(fields: Partial<EventRow> & { id: string }): EventRow {
  const receivedAt = fields.receivedAt ?? Date.parse('2026-06-17T12:00:00Z');
  return {
    receiptId: fields.id.replace(/^evt_/, 'rcpt_'),
    storeId: 'st_01jz0000000000000000000000',
    endpointId: 'ep_01jz0000000000000000000000',
    configVersion: 1,
    outcome: 'queued',
    code: null,
    externalEventId: null,
    eventType: null,
    isTest: false,
    duplicateOf: null,
    resourceId: null,
    relatedResourceId: null,
    bodyBytes: 2,
    bodyRetention: 'retained',
    receivedAt,
    attempts: 0,
    lastAttemptAt: null,
    nextAttemptAt: receivedAt,
    leaseUntil: null,
    deliveredAt: null,
    ...fields,
  };
}
