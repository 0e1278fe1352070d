/**
 * The measured side of the bench, one process (the orchestrator pins it to core 0). Prints one JSON line on
 * stdout when ready, then serves until SIGTERM.
 *
 *   bare                      a bare Bun.serve answering 202 (the ceiling)
 *   relay                     hookrelay's startServer over a data dir, or a PostgreSQL database (--database-url)
 *   seed                      seeds a data dir with --events settled events, prints how long it took, exits
 *   drain                     seeds a backlog of due events, drains it to --admin-url, prints the rate, exits
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import type { SqliteRepo } from '../../db/sqlite/repo.ts';
import { openCore } from '../../src/boot.ts';
import type { Config } from '../../src/core.ts';
import { stderrLog } from '../../src/lib/log.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { initStore } from '../../src/ops/stores.ts';
import { DEFAULT_RATE_LIMITS } from '../../src/contract/limits.ts';
import { reexecWithJscEnv } from '../../src/server/runtime-env.ts';
import { startServer } from '../../src/server/serve.ts';
import { seedEvents } from './seed.ts';

const { positionals, values: a } = parseArgs({
  allowPositionals: true,
  options: {
    port: { type: 'string', default: '0' },
    'data-dir': { type: 'string' },
    sync: { type: 'string', default: 'FULL' },
    worker: { type: 'string', default: '1' },
    'request-log': { type: 'string', default: '1' },
    /** `1`: commit and hand off on a relay thread (serve with HOOKRELAY_RELAY_THREAD=on), to compare. */
    'relay-thread': { type: 'string', default: '0' },
    shop: { type: 'string', default: 'bench.myshopify.com' },
    events: { type: 'string', default: '0' },
    endpoints: { type: 'string', default: '10' },
    'admin-url': { type: 'string' },
    /** `postgres://…`: the relay stores in PostgreSQL instead of the data dir's SQLite file. */
    'database-url': { type: 'string' },
  },
});
const mode = positionals[0];
// The relay runs as `hookrelay serve` does, with serve's JavaScriptCore options; the bare ceiling keeps Bun's own.
if (mode === 'relay' || mode === 'drain') reexecWithJscEnv();
const ready = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid, ...o })}\n`);
const untilSignal = () => new Promise<void>((r) => process.once('SIGTERM', () => r()).once('SIGINT', () => r()));

/**
 * The bench measures the relay's work, not the per-minute agent quotas: limits are raised out of reach, the
 * limiter itself still runs on every call.
 */
const unlimited = Object.fromEntries(Object.keys(DEFAULT_RATE_LIMITS).map((k) => [k, { grant: 1e12, store: 1e12 }])) as Config['rateLimits'];

const TOKEN_VAR = 'HOOKRELAY_BENCH_SHOPIFY_TOKEN';

async function open(sync: 'FULL' | 'NORMAL', requestLog: boolean, extra: Partial<Config> = {}) {
  const log = requestLog ? stderrLog('info') : stderrLog('warn');
  // PostgreSQL needs the sealing key from the environment (the same on every instance); one process here.
  if (a['database-url']) process.env.HOOKRELAY_SECRET_KEY ??= Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex');
  const core = await openCore({
    dataDir: a['data-dir'],
    databaseUrl: a['database-url'],
    log,
    synchronous: sync,
    config: { rateLimits: unlimited, env: (n) => (n === TOKEN_VAR ? 'shpat_bench_token' : process.env[n]), ...extra },
  });
  return core;
}

async function storeAndGrant(core: Awaited<ReturnType<typeof open>>, extra: { destination?: 'log' | 'shopify'; adminTokenEnv?: string } = {}) {
  const { store } = await initStore(core, { shopDomain: a.shop!, plan: 'scale', ...extra });
  const grant = await issueGrant(core, { shopDomain: a.shop!, tier: 'admin_assistant', ttlMs: 6 * 3600_000, label: 'bench' });
  return { storeId: store.storeId, token: grant.token };
}

/** Creates endpoints through the app in-process (the same pipeline as HTTP, no socket). */
async function createEndpoints(fetch: (r: Request) => Promise<Response>, token: string, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(
      new Request('http://bench.local/agent/v1/endpoints', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ triggerVariant: 'generic', name: `bench ${i + 1}` }),
      }),
    );
    const json = (await res.json()) as any;
    if (res.status !== 201) throw new Error(`createEndpoint: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
    out.push(json.data.endpoint.id);
  }
  return out;
}

if (mode === 'bare') {
  const reply = JSON.stringify({ receiptId: 'rcpt_00000000000000000000000000', eventId: 'evt_00000000000000000000000000', status: 'accepted' });
  const server = Bun.serve({
    port: Number(a.port),
    hostname: '127.0.0.1',
    development: false, // as serve runs
    fetch: () => new Response(reply, { status: 202, headers: { 'Content-Type': 'application/json' } }),
  });
  ready({ url: `http://127.0.0.1:${server.port}` });
  await untilSignal();
  server.stop(true);
} else if (mode === 'relay') {
  const sync = a.sync === 'NORMAL' ? 'NORMAL' : 'FULL';
  const requestLog = a['request-log'] === '1';
  const core = await open(sync, requestLog, { publicUrl: 'http://127.0.0.1' });
  const { storeId, token } = await storeAndGrant(core);
  const relayThread = a['relay-thread'] === '1';
  const running = await startServer(core, { port: Number(a.port), host: '127.0.0.1', worker: a.worker === '1', logRequests: requestLog, relayThread });
  ready({ url: running.url, token, storeId });
  await untilSignal();
  await running.stop();
  process.exit(0);
} else if (mode === 'seed') {
  const core = await open('NORMAL', false);
  const { storeId, token } = await storeAndGrant(core);
  const running = await startServer(core, { port: 0, host: '127.0.0.1', worker: false, logRequests: false });
  const endpointIds = await createEndpoints(running.app.fetch, token, Number(a.endpoints));
  await running.stop();
  // Reopen bare: the worker and the writer are gone, and synchronous stays NORMAL for the bulk load.
  const seeding = await open('NORMAL', false);
  const sqlite = (seeding.repo as SqliteRepo).sqlite;
  const now = Date.now();
  const count = Number(a.events);
  const seconds = seedEvents(sqlite, { storeId, endpointIds, count, fromMs: now - 29 * 86400_000, toMs: now - 60_000, kind: 'history' });
  sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  const sample = sqlite.query<{ id: string }, [number]>('SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?');
  const deepId = sample.get(Math.floor(count * 0.9))?.id ?? null;
  const ids = sqlite
    .query<{ id: string }, []>('SELECT id FROM events WHERE rowid % 997 = 0 LIMIT 2000')
    .all()
    .map((r) => r.id);
  await seeding.repo.close();
  ready({ storeId, endpointIds, seconds, deepId, sampleIds: ids, dbBytes: Bun.file(join(a['data-dir']!, 'hookrelay.db')).size });
} else if (mode === 'drain') {
  if (!a['admin-url']) throw new Error('drain needs --admin-url');
  const core = await open('FULL', false, { shopifyAdminUrl: a['admin-url'] });
  const { storeId, token } = await storeAndGrant(core, { destination: 'shopify', adminTokenEnv: TOKEN_VAR });
  const running = await startServer(core, { port: 0, host: '127.0.0.1', worker: false, logRequests: false });
  const endpointIds = await createEndpoints(running.app.fetch, token, 1);
  const sqlite = (core.repo as SqliteRepo).sqlite;
  const count = Number(a.events);
  const now = Date.now();
  seedEvents(sqlite, { storeId, endpointIds, count, fromMs: now - count, toMs: now, kind: 'due' });
  const delivered = sqlite.query<{ n: number }, [string]>(`SELECT count(*) AS n FROM events WHERE store_id = ? AND outcome = 'delivered'`);
  const started = performance.now();
  running.worker.start();
  running.worker.wake();
  const deadline = started + 120_000;
  let done = 0;
  while (performance.now() < deadline) {
    await Bun.sleep(25);
    done = delivered.get(storeId)!.n;
    if (done >= count) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const attempts = sqlite.query<{ outcome: string; n: number }, []>('SELECT outcome, count(*) AS n FROM attempts GROUP BY outcome').all();
  await running.stop();
  ready({
    events: count,
    delivered: done,
    seconds,
    rate: done / seconds,
    attempts,
    concurrency: core.config.handoff.concurrency,
    batchSize: core.config.handoff.batchSize,
  });
  process.exit(0);
} else {
  process.stderr.write('usage: bun scripts/bench/server.ts bare|relay|seed|drain [options]\n');
  process.exit(2);
}
