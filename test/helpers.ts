/** Shared test harness: a fresh storage (in-memory SQLite, or PostgreSQL), a manual clock, a store, grants, the app and table reads. */
import { migrateSqlite, openSqliteDatabase, type SqliteRepo, sqliteRepo as sqliteHandle } from '../db/sqlite/repo.ts';
import type { Repo } from '../db/repo.ts';
import type { EventRow, StoreRow } from '../db/types.ts';
import { type PgRepo, openPgRepo } from '../db/pg/repo.ts';
import { TEST_DATABASE_URL, testSchema } from './fixtures/storage.ts';
import type { Tier } from '../src/contract/scopes.ts';
import { createCore, defaultConfig, type Config, type Core, type HandoffConfig } from '../src/core.ts';
import { ManualClock } from '../src/lib/clock.ts';
import { hmacHex, newSecretKey, SecretBox } from '../src/lib/crypto.ts';
import { memoryLog } from '../src/lib/log.ts';
import { issueGrant } from '../src/ops/grants.ts';
import { initStore, type InitStoreInput } from '../src/ops/stores.ts';
import { createApp, type App } from '../src/server/app.ts';
import { AuthFailureLimiter } from '../src/lib/auth-failures.ts';
import { createInvoke, type Invoke } from '../src/server/pipeline.ts';
import { RateLimiter } from '../src/server/rate-limit.ts';

export const BASE = 'http://local';

export interface TestEnv {
  core: Core;
  app: App;
  clock: ManualClock;
  log: ReturnType<typeof memoryLog>;
  repo: Repo;
}

/** The contract without HTTP (createInvoke) over the env's core, with fresh limiters and no in-flight calls. */
export function testInvoke(env: TestEnv, endpointChanged: (id: string) => void = () => {}): Invoke {
  const { core } = env;
  return createInvoke({
    core,
    endpointChanged,
    limiter: new RateLimiter(core.repo, core.clock, core.config.rateLimits),
    authFailures: new AuthFailureLimiter(core.clock),
    inflight: new Map(),
  });
}

/**
 * The backend createTestEnv opens: 'postgres' when HOOKRELAY_TEST_BACKEND=postgres (HOOKRELAY_TEST_DATABASE_URL
 * then names the server), else SQLite in memory. Tests about SQLite itself run under `describe.if(sqliteOnly)`.
 */
export const backend: 'sqlite' | 'postgres' = process.env.HOOKRELAY_TEST_BACKEND === 'postgres' ? 'postgres' : 'sqlite';
if (backend === 'postgres' && !TEST_DATABASE_URL) throw new Error('HOOKRELAY_TEST_BACKEND=postgres needs HOOKRELAY_TEST_DATABASE_URL');

/** True on the SQLite backend: the condition that names a test as being about SQLite itself (pages, WAL, plans). */
export const sqliteOnly = backend === 'sqlite';

const openPgRepos: PgRepo[] = [];
const KEEP_PG_REPOS_OPEN = 10;

/** A fresh, migrated storage of the selected backend; PostgreSQL in a schema of its own, dropped after the run. */
async function testRepo(): Promise<Repo> {
  if (backend === 'postgres') {
    const repo = await openPgRepo({ url: TEST_DATABASE_URL!, schema: testSchema(), max: 4, idleTimeoutMillis: 1000 });
    // Most tests never close their deployment; on PostgreSQL each holds connections (its pool, and the lease
    // liveness lock's own), and a run opens hundreds. Only the newest few stay open, within max_connections (100).
    openPgRepos.push(repo);
    while (openPgRepos.length > KEEP_PG_REPOS_OPEN)
      void openPgRepos
        .shift()!
        .close()
        .catch(() => {});
    return repo;
  }
  const sqlite = openSqliteDatabase({ path: ':memory:' });
  await migrateSqlite(sqlite);
  return sqliteHandle(sqlite);
}

/**
 * A test's handoff settings: HandoffConfig's, or its retry schedule as doubling delays (`baseDelayMs` doubling up
 * to `maxDelayMs`, `maxAttempts` tries in all), the form most handoff tests reason in.
 */
export type TestHandoff = Partial<HandoffConfig> & { baseDelayMs?: number; maxDelayMs?: number; maxAttempts?: number };

/** HandoffConfig from a TestHandoff: defaults for tests (short timeouts, 4 tries 1 s apart doubling), then the overrides. */
export function testHandoff(h: TestHandoff = {}): HandoffConfig {
  const { baseDelayMs = 1000, maxDelayMs = 60_000, maxAttempts = 4, ...rest } = h;
  const retrySchedule = Array.from({ length: maxAttempts - 1 }, (_, i) => Math.min(maxDelayMs, baseDelayMs * 2 ** i));
  return { timeoutMs: 2000, retrySchedule, concurrency: 4, batchSize: 16, probeBaseDelayMs: 5_000, probeMaxDelayMs: 60_000, ...rest };
}

/** A fresh deployment in memory. `config` overrides defaults (handoff delays, env, admin URL…). */
export async function createTestEnv(config: Partial<Omit<Config, 'handoff'>> & { handoff?: TestHandoff } = {}): Promise<TestEnv> {
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
      handoff: testHandoff(config.handoff),
    }),
  });
  return { core, app: createApp(core), clock, log, repo };
}

/**
 * `n` app instances on one fresh PostgreSQL schema (HOOKRELAY_TEST_DATABASE_URL), with one box key and one clock, as
 * a deployment of several instances is; `config` overrides defaults for each. `close` closes their writers and pools.
 */
export async function pgInstances(
  n: number,
  opts: { max: number; config?: Partial<Omit<Config, 'handoff'>> },
): Promise<{ envs: TestEnv[]; close(): Promise<void> }> {
  const schema = testSchema();
  const key = newSecretKey();
  const clock = new ManualClock();
  const envs: TestEnv[] = [];
  for (let i = 0; i < n; i++) {
    const repo = await openPgRepo({ url: TEST_DATABASE_URL!, schema, max: opts.max });
    const log = memoryLog();
    const core = createCore({ repo, box: new SecretBox(key), clock, log, config: defaultConfig({ publicUrl: BASE, env: () => undefined, ...opts.config }) });
    envs.push({ core, app: createApp(core), clock, log, repo });
  }
  const close = async () => {
    await Promise.all(
      envs.map(async (e) => {
        await e.app.writer.close();
        await e.core.repo.close();
      }),
    );
  };
  return { envs, close };
}

/** The SQLite handle under a test deployment, for tests about SQLite itself (they run only where `sqliteOnly`). */
export function sqliteRepo(env: TestEnv): SqliteRepo {
  if (!('sqlite' in env.repo)) throw new Error('this test is about SQLite itself: run it under describe.if(sqliteOnly)');
  return env.repo as SqliteRepo;
}

/**
 * Rows of a query written once for both dialects: `?` placeholders (turned into $1, $2… for PostgreSQL, so no
 * `?` inside a literal), camelCase aliases double-quoted (`AS "n"`), no rowid. Numbers come back as numbers (PostgreSQL's numeric
 * sums included) and blobs as Uint8Array on both.
 */
export async function rows<T = Record<string, any>>(env: TestEnv, query: string, ...params: unknown[]): Promise<T[]> {
  if ('pool' in env.repo) {
    let i = 0;
    const r = await (env.repo as PgRepo).pool.query(
      query.replace(/\?/g, () => `$${++i}`),
      params,
    );
    const numeric = r.fields.filter((f) => f.dataTypeID === 1700).map((f) => f.name);
    for (const row of r.rows) for (const name of numeric) if (row[name] !== null) row[name] = Number(row[name]);
    return r.rows as T[];
  }
  return sqliteRepo(env)
    .sqlite.query(query)
    .all(...(params as never[])) as T[];
}

/** The first row of `rows`, or null. */
export async function row<T = Record<string, any>>(env: TestEnv, query: string, ...params: unknown[]): Promise<T | null> {
  return (await rows<T>(env, query, ...params))[0] ?? null;
}

/** How many rows `table` holds, optionally only those matching `where` (with `?` placeholders). */
export async function count(env: TestEnv, table: string, where = 'TRUE', ...params: unknown[]): Promise<number> {
  return (await row<{ n: number }>(env, `SELECT count(*) AS n FROM ${table} WHERE ${where}`, ...params))!.n;
}

/** Runs a statement (an UPDATE or INSERT a test sets up state with) on either dialect. */
export async function execSql(env: TestEnv, statement: string, ...params: unknown[]): Promise<void> {
  await rows(env, statement, ...params);
}

/** A table's column names: SQLite's table_info, or the test schema's information_schema on PostgreSQL. */
export async function columnsOf(env: TestEnv, table: string): Promise<string[]> {
  const query = {
    sqlite: 'SELECT name FROM pragma_table_info(?)',
    postgres: 'SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?',
  }[backend];
  return (await rows<{ name: string }>(env, query, table)).map((c) => c.name);
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
export async function call(
  env: Pick<TestEnv, 'app'>,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
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
  return call(env, 'POST', path, {
    token,
    headers: { 'Idempotency-Key': key },
    body: { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token },
  });
}

/** Creates an endpoint through the API; returns the endpoint view and its secret. */
export async function createEndpoint(
  env: Pick<TestEnv, 'app'>,
  token: string,
  input: Record<string, unknown> = { triggerVariant: 'order', resourceIdPath: 'order.id' },
) {
  const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: input });
  if (r.status !== 201) throw new Error(`createEndpoint failed: ${r.status} ${r.text}`);
  return { endpoint: r.json.data.endpoint, secret: r.json.data.secret as string };
}

/** Sends an inbound event. `sign: true` signs the exact bytes with HMAC; a string is sent as the header value. */
export async function sendHook(
  env: Pick<TestEnv, 'app'>,
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

/**
 * Makes the next `n` receipts reach the writer in one event-loop turn, so they share one group commit on either
 * backend (on PostgreSQL each handler's reads are round trips, so concurrent requests reach it spread out).
 * Returns their event ids in the order they were submitted (the commit's order), filled once all `n` arrived.
 */
export function gatherReceipts(env: TestEnv, n: number): string[] {
  const writer = env.app.writer;
  const submit = writer.submit.bind(writer);
  const held: { id: string; go: () => void }[] = [];
  const order: string[] = [];
  writer.submit = (receipt) =>
    new Promise((resolve, reject) => {
      held.push({ id: receipt.event.id, go: () => void submit(receipt).then(resolve, reject) });
      if (held.length < n) return;
      writer.submit = submit;
      for (const h of held.splice(0)) {
        order.push(h.id);
        h.go();
      }
    });
  return order;
}

/** A stores row as `init` makes one (the log destination, no credentials), unless `fields` say otherwise. */
export function storeRow(fields: Partial<StoreRow> = {}): StoreRow {
  const at = fields.createdAt ?? Date.parse('2026-06-17T12:00:00Z');
  return {
    id: 'st_01jz0000000000000000000000',
    platformKey: 'shopify',
    platformAccountId: 'acct_1',
    shopDomain: 'demo.myshopify.com',
    installationId: 'inst_1',
    plan: 'unlimited',
    billingStatus: 'active',
    destination: 'log',
    adminTokenEnv: null,
    credentialMode: null,
    clientId: null,
    clientSecretEnv: null,
    uninstalledAt: null,
    createdAt: at,
    updatedAt: at,
    ...fields,
  };
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
