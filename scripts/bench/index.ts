/**
 * `bun run bench [--quick]`: starts what it measures (on 127.0.0.1), drives it with autocannon from another
 * process, writes bench/results.json and prints a Markdown table on stdout. Progress goes to stderr.
 *
 *   --quick   ingest vs the bare Bun.serve ceiling and the durable-ack limit only (about a minute)
 *   full      + durability (FULL vs NORMAL), handoff drain, handoff within a cost budget (bench:budget), API reads
 *             at 1,000,000 events, resources
 *
 * The server runs on core 0 and the load generator on core 1 when `taskset` exists.
 */
import { Database } from 'bun:sqlite';
import pg from 'pg';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  api,
  commitCounters,
  cpuSeconds,
  createHookEndpoint,
  freePort,
  HOOK_BODY,
  hookHeaders,
  hookLoad,
  log,
  machine,
  machineBusySeconds,
  machineStealSeconds,
  median,
  peakRssMiB,
  PINNED,
  pinned,
  ROOT,
  round,
  pgStatement,
  postgresCpuSeconds,
  rssMiB,
  spawnReady,
  stop,
  type Child,
} from './_lib.ts';
import type { LoadResult, LoadSpec } from './load.ts';
import { RUNTIME_FLAGS } from '../build.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const keep = argv.includes('--keep');
const flag = (name: string) => argv.find((x) => x.startsWith(`--${name}=`))?.split('=')[1];
/**
 * `--only=ingest,durability,handoff,budget,reads,resources,stores` runs just those parts of the full run (durability
 * needs ingest). `stores` (scripts/bench/stores.ts, most of an hour) runs only when named.
 */
const PARTS = ['ingest', 'durability', 'handoff', 'budget', 'reads', 'resources', 'stores'];
const only = flag('only')?.split(',');
const unknownParts = only?.filter((p) => !PARTS.includes(p)) ?? [];
if (only && (unknownParts.length || !only.length)) {
  // A misspelt part would otherwise run nothing and exit 0, as if measured.
  process.stderr.write(`--only: no part named ${unknownParts.map((p) => `'${p}'`).join(', ') || "''"}; name one or more of ${PARTS.join(', ')}\n`);
  process.exit(2);
}
const wants = (part: string) => (!only ? part !== 'stores' : only.includes(part));
/** Passed on to the stores part as they are (scripts/bench/stores.ts reads them). */
const STORES_FLAGS = argv.filter((x) => /^--(stores|quiet-minutes|steady-minutes|backends)=/.test(x));
/** `--relay-thread=1`: the SQLite ingest commits and hands off on a relay thread (serve with HOOKRELAY_RELAY_THREAD=on). */
const RELAY_THREAD = flag('relay-thread') ?? '0';
const SERVER = join(ROOT, 'scripts/bench/server.ts');
const LIMIT_SERVER = join(ROOT, 'scripts/bench/durable-ack.ts');
const LOADER = join(ROOT, 'scripts/bench/load.ts');
const CONNECTIONS = 64;
const WARMUP_S = quick ? 2 : 3;
const INGEST_S = quick ? 6 : 10;
/** Ceiling, limit and ingest alternate this many times (`--rounds=N`); each reports its best run (other load on the box only slows a run). */
const ROUNDS = Number(flag('rounds') ?? 2);
/**
 * `--against=<checkout>`: each ingest round also runs that checkout's serve (its own scripts/bench/server.ts, same
 * load, right after this tree's), so two trees and the limit are measured side by side in one run.
 */
const AGAINST = flag('against');
const READ_EVENTS = Number(flag('read-events') ?? 1_000_000);
const DRAIN_EVENTS = 20_000;
const FLOW_LATENCY_MS = 2;
const READ_WARMUP_S = 1;
const READ_S = 3;
/** Ingest is measured on PostgreSQL too when a server is named (a fresh database per run, dropped after it). */
const PG_URL = process.env.HOOKRELAY_BENCH_DATABASE_URL || process.env.HOOKRELAY_TEST_DATABASE_URL || null;

const tmp = mkdtempSync(join(tmpdir(), 'hookrelay-bench-'));
const live = new Set<Child>();
const cleanup = () => {
  for (const c of live) c.proc.kill('SIGKILL');
  if (!keep) rmSync(tmp, { recursive: true, force: true });
};
process.once('SIGINT', () => {
  cleanup();
  process.exit(130);
});

async function child(core: 0 | 1, cmd: string[], opts: Parameters<typeof spawnReady>[2] = {}): Promise<Child> {
  const c = await spawnReady(core, cmd, opts);
  live.add(c);
  c.proc.exited.then(() => live.delete(c));
  return c;
}

type Measured = LoadResult & { serverCpuPct: number | null; othersCpuPct: number | null; stealPct: number | null };

/** Runs the load generator on core 1 against a server process; server CPU is sampled over the measured run only. */
async function load(spec: LoadSpec, serverPid: number): Promise<Measured> {
  const file = join(tmp, `load-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(spec));
  const gen = await child(1, ['bun', LOADER, `@${file}`], { timeoutMs: (spec.warmupS + 30) * 1000 });
  const cpu0 = cpuSeconds(serverPid);
  const busy0 = machineBusySeconds();
  const steal0 = machineStealSeconds();
  const t0 = performance.now();
  const out = await gen.rest;
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = cpuSeconds(serverPid);
  const busy1 = machineBusySeconds();
  const steal1 = machineStealSeconds();
  await gen.proc.exited;
  const line = out.trim().split('\n').pop();
  if (!line) throw new Error('load generator printed no result');
  const r = JSON.parse(line) as LoadResult;
  const serverCpuPct = cpu0 != null && cpu1 != null ? ((cpu1 - cpu0) / wall) * 100 : null;
  // What the rest of the machine used meanwhile (other engineers' tests, daemons): noise in the figures.
  const othersCpuPct =
    busy0 != null && busy1 != null && serverCpuPct != null ? Math.max(0, ((busy1 - busy0) / wall) * 100 - serverCpuPct - r.loaderCpuPct) : null;
  const stealPct = steal0 != null && steal1 != null ? ((steal1 - steal0) / wall) * 100 : null;
  return { ...r, serverCpuPct, othersCpuPct, stealPct };
}

function brief(r: Measured) {
  return {
    rps: round(r.rps, 0),
    rpsMedianSecond: round(r.rpsMedianSecond, 0),
    p50Ms: round(r.p50Ms, 2),
    p90Ms: round(r.p90Ms, 2),
    p99Ms: round(r.p99Ms, 2),
    p999Ms: round(r.p999Ms, 2),
    maxMs: round(r.maxMs, 1),
    requests: r.requests,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    serverCpuPct: round(r.serverCpuPct, 0),
    // Server CPU per answered request: unlike req/s, it hardly moves when the host steals time from this VM.
    serverCpuUsPerRequest: r.serverCpuPct == null || r.rps === 0 ? null : round((r.serverCpuPct / 100 / r.rps) * 1e6, 1),
    loaderCpuPct: round(r.loaderCpuPct, 0),
    othersCpuPct: round(r.othersCpuPct, 0),
    stealPct: round(r.stealPct, 0),
  };
}

const INGEST_LOAD = { connections: CONNECTIONS, warmupS: WARMUP_S, durationS: INGEST_S };

/**
 * Waits (up to `maxS`) for half a second in which the rest of the machine is nearly idle: other engineers' test
 * runs share these two cores. Returns the seconds waited.
 */
async function awaitQuiet(maxS: number): Promise<number> {
  const t0 = performance.now();
  while ((performance.now() - t0) / 1000 < maxS) {
    const a = machineBusySeconds();
    await Bun.sleep(500);
    const b = machineBusySeconds();
    if (a == null || b == null || b - a < 0.075) break;
  }
  const waited = (performance.now() - t0) / 1000;
  if (waited > 1.5) log(`waited ${waited.toFixed(0)} s for the machine to go quiet`);
  return waited;
}

async function ceiling() {
  await awaitQuiet(quick ? 1 : 30);
  log('ceiling: bare Bun.serve answering 202');
  const server = await child(0, ['bun', SERVER, 'bare']);
  try {
    const r = await load(hookLoad(`${server.ready.url}/hooks/ep_bench`, 'whsec_bench', INGEST_LOAD), server.pid);
    return brief(r);
  } finally {
    await stop(server);
  }
}

/**
 * The durable-ack limit: a minimal server that verifies the same signed requests and answers 202 only after the
 * group commit holding its row (scripts/bench/durable-ack.ts). Every row it stored must be a 202 it sent, and no
 * 202 the loader received may be missing.
 */
async function limit(label: string) {
  await awaitQuiet(quick ? 1 : 30);
  log('limit: durable-ack reference (Bun.serve + HMAC + group commit of one row per event, synchronous=FULL)');
  const dataDir = join(tmp, label);
  const server = await child(0, ['bun', LIMIT_SERVER, '--data-dir', dataDir], { stderrTo: join(tmp, `${label}.log`) });
  let r: Measured;
  let rss: number | null;
  let idleRss: number | null;
  try {
    const url = `${server.ready.url}/hooks/ep_limit`;
    const forged = await fetch(url, { method: 'POST', headers: hookHeaders('whsec_not_the_secret'), body: HOOK_BODY });
    await forged.arrayBuffer();
    if (forged.status !== 401) throw new Error(`limit server answered ${forged.status} to a bad signature`);
    const probe = await fetch(url, { method: 'POST', headers: hookHeaders(server.ready.secret), body: HOOK_BODY });
    const probeBody = await probe.text();
    if (probe.status !== 202) throw new Error(`limit probe answered ${probe.status}: ${probeBody.slice(0, 200)}`);
    idleRss = rssMiB(server.pid);
    r = await load(hookLoad(url, server.ready.secret, INGEST_LOAD), server.pid);
    rss = peakRssMiB(server.pid);
  } finally {
    await stop(server);
  }
  const last = (await server.rest).trim().split('\n').pop();
  const { answered = null, commits = null } = last ? (JSON.parse(last) as { answered?: number; commits?: number }) : {};
  const db = new Database(join(dataDir, 'limit.db'), { readonly: true });
  const stored = db.query<{ n: number }, []>('SELECT count(*) AS n FROM events').get()!.n;
  db.close();
  const acknowledged = r.warmupOk + r.ok + 1;
  const rowsPerCommit = commits ? round(stored / commits, 1) : null;
  return {
    ...brief(r),
    idleRssMiB: round(idleRss, 1),
    peakRssMiB: round(rss, 1),
    rowsPerCommit,
    acknowledged,
    answered,
    stored,
    storedEqualsAnswered: stored === answered && stored >= acknowledged,
  };
}

interface IngestOptions {
  sync: 'FULL' | 'NORMAL';
  worker: boolean;
  requestLog: boolean;
}

async function ingest(label: string, o: IngestOptions, server_ = SERVER) {
  await awaitQuiet(quick ? 1 : 30);
  log(`ingest ${label}: synchronous=${o.sync} worker=${o.worker} requestLog=${o.requestLog}`);
  const dataDir = join(tmp, label);
  const server = await child(
    0,
    [
      'bun',
      ...RUNTIME_FLAGS,
      server_,
      'relay',
      '--data-dir',
      dataDir,
      '--sync',
      o.sync,
      '--worker',
      o.worker ? '1' : '0',
      '--request-log',
      o.requestLog ? '1' : '0',
      '--relay-thread',
      RELAY_THREAD,
    ],
    { stderrTo: join(tmp, `${label}.log`) },
  );
  let r: Measured;
  let rss: number | null;
  let idleRss: number | null;
  try {
    const base = server.ready.url as string;
    const { url, secret } = await createHookEndpoint(base, server.ready.token, 'bench ingest');
    const probe = await fetch(url, { method: 'POST', headers: hookHeaders(secret), body: HOOK_BODY });
    const probeBody = await probe.text();
    if (probe.status !== 202) throw new Error(`ingest probe answered ${probe.status}: ${probeBody.slice(0, 200)}`);
    idleRss = rssMiB(server.pid);
    r = await load(hookLoad(url, secret, INGEST_LOAD), server.pid);
    rss = peakRssMiB(server.pid);
  } finally {
    await stop(server);
  }
  // Every 202 must be a committed receipt: count them in the database the server closed.
  const db = new Database(join(dataDir, 'hookrelay.db'), { readonly: true });
  const stored = db.query<{ n: number }, []>('SELECT count(*) AS n FROM events').get()!.n;
  db.close();
  const acknowledged = r.warmupOk + r.ok + 1;
  return { ...o, ...brief(r), idleRssMiB: round(idleRss, 1), peakRssMiB: round(rss, 1), acknowledged, stored, allAcknowledgedStored: stored >= acknowledged };
}

const pgAdmin = (sql: string) => pgStatement(PG_URL!, sql);

/** Cluster-wide WAL counters (PostgreSQL 14+): records, bytes, and fsyncs of the WAL. */
async function walCounters(db: pg.Client): Promise<{ records: number; bytes: number; syncs: number }> {
  const r = await db.query('SELECT wal_records::float8 AS records, wal_bytes::float8 AS bytes, wal_sync::float8 AS syncs FROM pg_stat_wal');
  return r.rows[0];
}

/**
 * The same ingest as `ingest` (serve, worker on, log destination, request log), stored in a fresh PostgreSQL
 * database. Besides the load's figures: group commits and receipts per commit (the relay's /metrics), WAL
 * fsyncs, and the CPU of every postgres process on the machine over the load.
 */
async function ingestPg(label: string) {
  await awaitQuiet(quick ? 1 : 30);
  const name = `hr_bench_${process.pid}_${label.replace(/\W/g, '_')}`;
  log(`ingest ${label}: PostgreSQL database ${name}, worker=true requestLog=true`);
  await pgAdmin(`CREATE DATABASE "${name}"`);
  const url = new URL(PG_URL!);
  url.pathname = `/${name}`;
  const db = new pg.Client({ connectionString: url.toString() });
  try {
    const server = await child(
      0,
      ['bun', ...RUNTIME_FLAGS, SERVER, 'relay', '--data-dir', join(tmp, label), '--database-url', url.toString(), '--worker', '1', '--request-log', '1'],
      { stderrTo: join(tmp, `${label}.log`) },
    );
    let r: Measured;
    let stats: Record<string, number | null>;
    try {
      const base = server.ready.url as string;
      const token = server.ready.token as string;
      const { url: hook, secret } = await createHookEndpoint(base, token, 'bench ingest pg');
      const probe = await fetch(hook, { method: 'POST', headers: hookHeaders(secret), body: HOOK_BODY });
      const probeBody = await probe.text();
      if (probe.status !== 202) throw new Error(`ingest probe answered ${probe.status}: ${probeBody.slice(0, 200)}`);
      await db.connect();
      const [c0, w0, pg0, t0] = [await commitCounters(base, token), await walCounters(db), postgresCpuSeconds(), performance.now()];
      r = await load(hookLoad(hook, secret, INGEST_LOAD), server.pid);
      const [c1, w1, pg1, t1] = [await commitCounters(base, token), await walCounters(db), postgresCpuSeconds(), performance.now()];
      const wall = (t1 - t0) / 1000;
      const commits = c1.commits - c0.commits;
      stats = {
        commitsPerSecond: round(commits / wall, 0),
        receiptsPerCommit: round((c1.receipts - c0.receipts) / commits, 1),
        meanCommitMs: round(((c1.seconds - c0.seconds) / commits) * 1000, 2),
        walSyncsPerSecond: round((w1.syncs - w0.syncs) / wall, 0),
        walBytesPerReceipt: round((w1.bytes - w0.bytes) / (c1.receipts - c0.receipts), 0),
        postgresCpuPct: pg0 != null && pg1 != null ? round(((pg1 - pg0) / wall) * 100, 0) : null,
      };
    } finally {
      await stop(server);
    }
    // Every 202 must be a committed receipt.
    const stored = Number((await db.query('SELECT count(*) AS n FROM events')).rows[0].n);
    const acknowledged = r.warmupOk + r.ok + 1;
    return { storage: 'postgres', ...brief(r), ...stats, acknowledged, stored, allAcknowledgedStored: stored >= acknowledged };
  } finally {
    await db.end().catch(() => {});
    await pgAdmin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
}

async function handoff() {
  log(`handoff: draining ${DRAIN_EVENTS} due events to the fake Flow server (${FLOW_LATENCY_MS} ms per call)`);
  const fake = await child(1, ['bun', join(ROOT, 'scripts/bench/fake-flow.ts'), '--delay-ms', String(FLOW_LATENCY_MS), '--calls', String(DRAIN_EVENTS * 2)]);
  try {
    const drain = await child(0, ['bun', SERVER, 'drain', '--data-dir', join(tmp, 'drain'), '--events', String(DRAIN_EVENTS), '--admin-url', fake.ready.url], {
      timeoutMs: 180_000,
      stderrTo: join(tmp, 'drain.log'),
    });
    await drain.proc.exited;
    const d = drain.ready;
    await stop(fake);
    const fakeSaw = JSON.parse((await fake.rest).trim().split('\n').pop() || '{}') as { requests?: number };
    return {
      events: d.events,
      delivered: d.delivered,
      seconds: round(d.seconds, 2),
      eventsPerSecond: round(d.rate, 0),
      flowLatencyMs: FLOW_LATENCY_MS,
      concurrency: d.concurrency,
      batchSize: d.batchSize,
      boundEventsPerSecond: Math.round((d.concurrency * 1000) / FLOW_LATENCY_MS),
      attempts: d.attempts,
      fakeRequests: fakeSaw.requests ?? null,
    };
  } finally {
    await stop(fake);
  }
}

/** bench:budget as a part: a backlog drained within the fake's enforced cost bucket (scripts/bench/budget.ts). */
async function budget() {
  const proc = Bun.spawn(['bun', join(ROOT, 'scripts/bench/budget.ts'), '--json'], { cwd: ROOT, stdout: 'pipe', stderr: 'inherit', env: process.env });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  const doc = JSON.parse(out.trim().split('\n').pop() || '{}') as { results?: unknown[] };
  return { exitCode: code, results: doc.results ?? [] };
}

/** The stores part: what thousands of quiet stores cost, and one store's backlog against the others' (scripts/bench/stores.ts). */
async function stores() {
  const proc = Bun.spawn(['bun', join(ROOT, 'scripts/bench/stores.ts'), '--json', ...STORES_FLAGS], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'inherit',
    env: process.env,
  });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  const doc = JSON.parse(out.trim().split('\n').pop() || '{}') as { results?: unknown[]; targets?: Verdict[]; config?: unknown };
  return { exitCode: code, config: doc.config ?? null, results: doc.results ?? [], targets: doc.targets ?? [] };
}

const OPTIONAL_READS = [
  ['setup state', '/agent/v1/setup-state'],
  ['plan usage', '/agent/v1/plan-usage'],
  ['reliability health (tenant)', '/agent/v1/reliability/tenant'],
  ['reliability health (destination)', '/agent/v1/reliability/destination'],
] as const;

async function reads() {
  const dataDir = join(tmp, 'reads');
  log(`reads: seeding ${READ_EVENTS.toLocaleString('en')} events (raw batched INSERTs, synchronous=NORMAL)`);
  const seed = await child(0, ['bun', SERVER, 'seed', '--data-dir', dataDir, '--events', String(READ_EVENTS), '--shop', 'bench-reads.myshopify.com'], {
    timeoutMs: 300_000,
    stderrTo: join(tmp, 'seed.log'),
  });
  await seed.proc.exited;
  const s = seed.ready as { seconds: number; deepId: string; sampleIds: string[]; endpointIds: string[]; dbBytes: number };
  log(`reads: seeded in ${s.seconds.toFixed(1)} s; serving with synchronous=FULL, worker and request log on`);

  // Time to ready on a 1M-event database: startServer releases leftover leases with an UPDATE over events.
  const t0 = performance.now();
  const server = await child(0, ['bun', ...RUNTIME_FLAGS, SERVER, 'relay', '--data-dir', dataDir, '--shop', 'bench-reads.myshopify.com'], {
    stderrTo: join(tmp, 'reads.log'),
    timeoutMs: 120_000,
  });
  const startMs = performance.now() - t0;
  try {
    const base = server.ready.url as string;
    const token = server.ready.token as string;
    const auth = { authorization: `Bearer ${token}` };
    const cursor = Buffer.from(s.deepId).toString('base64url');
    const list: { name: string; paths: string[] }[] = [
      { name: 'events, first page (limit=25)', paths: ['/agent/v1/events?limit=25'] },
      {
        name: `events, deep cursor page (${Math.floor(READ_EVENTS * 0.9).toLocaleString('en')} newer events)`,
        paths: [`/agent/v1/events?limit=25&cursor=${cursor}`],
      },
      { name: 'events, endpoint filter, first page', paths: [`/agent/v1/events?limit=25&endpointId=${s.endpointIds[3]}`] },
      { name: 'event detail (2,000 ids in turn)', paths: s.sampleIds.map((id) => `/agent/v1/events/${id}`) },
      { name: 'event result (latest)', paths: ['/agent/v1/event-result'] },
    ];
    // Sanity: pages are full, and the deep page really is deep.
    const first = await api(base, token, 'GET', list[0]!.paths[0]!);
    const deep = await api(base, token, 'GET', list[1]!.paths[0]!);
    if (first.data.events.length !== 25 || deep.data.events.length !== 25 || !(deep.data.events[0].id < s.deepId)) {
      throw new Error('the seeded event pages do not look right');
    }
    const notServed: { name: string; path: string; status: number }[] = [];
    for (const [name, path] of OPTIONAL_READS) {
      const res = await fetch(`${base}${path}`, { headers: auth });
      await res.arrayBuffer();
      if (res.status === 200) list.push({ name, paths: [path] });
      else notServed.push({ name, path, status: res.status });
    }
    const out: Record<string, unknown>[] = [];
    for (const item of list) {
      log(`reads: ${item.name}`);
      const row: Record<string, unknown> = { name: item.name, path: item.paths[0]!.replace(cursor, '<cursor>').replace(/evt_[0-9a-z]+/, '{eventId}') };
      for (const c of [1, 8]) {
        const r = await load(
          { url: `${base}${item.paths[0]}`, paths: item.paths, headers: auth, connections: c, warmupS: READ_WARMUP_S, durationS: READ_S },
          server.pid,
        );
        row[`c${c}`] = brief(r);
      }
      out.push(row);
    }
    return {
      events: READ_EVENTS,
      seedSeconds: round(s.seconds, 1),
      seedRowsPerSecond: round(READ_EVENTS / s.seconds, 0),
      dbMiB: round(s.dbBytes / 1024 ** 2, 0),
      connections: [1, 8],
      warmupS: READ_WARMUP_S,
      durationS: READ_S,
      results: out,
      notServed,
      peakRssMiB: round(peakRssMiB(server.pid), 1),
      serverStartMs: round(startMs, 0),
    };
  } finally {
    await stop(server);
  }
}

function run(cmd: string[], env: Record<string, string> = {}) {
  const t0 = performance.now();
  const r = Bun.spawnSync(cmd, { cwd: ROOT, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' });
  return { ms: performance.now() - t0, code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

async function resources() {
  const bin = join(tmp, 'bin', 'hookrelay');
  mkdirSync(join(tmp, 'bin'));
  log('resources: bun run build (scripts/build.ts) into the bench directory');
  const build = run(['bun', 'run', 'build', bin]);
  if (build.code !== 0) return { buildError: (build.stderr || build.stdout).trim().split('\n').slice(-5).join('\n') };
  const size = Bun.file(bin).size;

  // `status` is the client command the issue names; until it exists, `--version` is the nearest cold start.
  const help = run([bin, '--help'], { NO_COLOR: '1' });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is what an ANSI colour sequence starts with
  const hasStatus = /^\s+status\s/m.test((help.stdout + help.stderr).replace(/\x1b\[[0-9;]*m/g, ''));
  const port = await freePort();
  const dataDir = join(tmp, 'cold');
  const admin = (args: string[]) => {
    const r = run([bin, ...args, '--data-dir', dataDir]);
    if (r.code !== 0) throw new Error(`hookrelay ${args[0]}: ${r.stdout}${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  admin(['init', '--shop', 'bench-cold.myshopify.com', '--plan', 'scale']);
  const grant = admin(['grant', 'issue', '--shop', 'bench-cold.myshopify.com', '--tier', 'operator', '--ttl', '1h', '--label', 'bench']);

  const startServe = () =>
    Bun.spawn(pinned(0, [bin, 'serve', '--port', String(port), '--data-dir', dataDir]), { cwd: tmp, stdout: 'ignore', stderr: 'ignore', stdin: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  const untilUp = async (deadlineMs: number) => {
    while (performance.now() < deadlineMs) {
      try {
        if ((await fetch(`${base}/status`)).ok) return;
      } catch {}
      await Bun.sleep(5);
    }
    throw new Error('serve did not come up');
  };

  // One run to create the endpoint over HTTP, then timed restarts: spawn -> first 202 from /hooks/{id}.
  let proc = startServe();
  await untilUp(performance.now() + 15_000);
  const { url: hook, secret } = await createHookEndpoint(base, grant.token, 'bench cold start');
  await stop(proc);
  const headers = hookHeaders(secret);
  const serveMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    proc = startServe();
    for (;;) {
      try {
        const res = await fetch(hook, { method: 'POST', headers, body: HOOK_BODY });
        await res.arrayBuffer();
        if (res.status === 202) break;
        throw new Error(`first request answered ${res.status}`);
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('first request')) throw err;
        if (performance.now() - t0 > 15_000) throw new Error('serve never accepted');
        await Bun.sleep(1);
      }
    }
    serveMs.push(performance.now() - t0);
    await stop(proc);
  }

  // `status` reads the server's public /status, so a server runs meanwhile (on the other core).
  const clientEnv = { XDG_CONFIG_HOME: join(tmp, 'xdg'), NO_COLOR: '1' };
  /** Eleven runs pinned to core 1: the first is the coldest the page cache allows, the median is of the other ten. */
  const coldStart = (args: string[]) => {
    const times: number[] = [];
    let exitCode: number | null = null;
    for (let i = 0; i < 11; i++) {
      const r = run(pinned(1, [bin, ...args]), clientEnv);
      times.push(r.ms);
      exitCode = r.code;
    }
    return {
      command: `hookrelay ${args.join(' ').replace(base, 'http://127.0.0.1:PORT')}`,
      exitCode,
      firstMs: round(times[0], 1),
      medianMs: round(median(times.slice(1)), 1),
    };
  };
  const version = coldStart(['--version']);
  // The floor: an empty program compiled the same way (what Bun's runtime alone costs to start).
  const emptySrc = join(tmp, 'bin', 'empty.ts');
  writeFileSync(emptySrc, 'console.log("{}");\n');
  const emptyBin = join(tmp, 'bin', 'empty');
  const emptyBuild = await Bun.build({ entrypoints: [emptySrc], compile: { outfile: emptyBin }, minify: true });
  const floor = emptyBuild.success
    ? (() => {
        const t: number[] = [];
        for (let i = 0; i < 11; i++) t.push(run(pinned(1, [emptyBin])).ms);
        return { binaryMiB: round(Bun.file(emptyBin).size / 1024 ** 2, 1), medianMs: round(median(t.slice(1)), 1) };
      })()
    : null;
  let status = null;
  if (hasStatus) {
    // `status` reads the server's public /status, so a server runs meanwhile (on the other core).
    proc = startServe();
    await untilUp(performance.now() + 15_000);
    status = coldStart(['status', '--base-url', base]);
    await stop(proc);
  }

  // The ingest load against the binary as shipped: its JavaScript runs from the embedded bytecode, whose pages
  // count in its RSS, where the ingest runs above load the same code from source.
  await awaitQuiet(quick ? 1 : 30);
  log('resources: the compiled serve under the ingest load');
  proc = startServe();
  await untilUp(performance.now() + 15_000);
  // An agent's read first, as on a box agents operate: the agent API and its schemas load with it (~15 MiB).
  await api(base, grant.token, 'GET', '/agent/v1/events?limit=1');
  const shippedIdle = rssMiB(proc.pid);
  const shipped = await load(hookLoad(hook, secret, INGEST_LOAD), proc.pid);
  const shippedPeak = peakRssMiB(proc.pid);
  await stop(proc);
  return {
    binary: 'bun run build (scripts/build.ts), written to the bench directory',
    binaryMiB: round(size / 1024 ** 2, 1),
    binaryBytes: size,
    buildSeconds: round(build.ms / 1000, 1),
    clientColdStart: { ...(status ?? version), statusCommandExists: hasStatus },
    versionColdStart: version,
    emptyBinary: floor,
    serveToFirstAccepted: { runs: serveMs.map((m) => round(m, 0)), medianMs: round(median(serveMs), 0) },
    compiledIngest: { ...brief(shipped), idleRssMiB: round(shippedIdle, 1), peakRssMiB: round(shippedPeak, 1) },
  };
}

/** The run with the highest throughput: other load on the machine can only slow a run down. */
const best = <T extends { rps: number | null }>(xs: T[]) => xs.reduce((a, b) => ((b.rps ?? 0) > (a.rps ?? 0) ? b : a));

type Verdict = { target: string; measured: string; met: boolean | null; note?: string };

function verdicts(r: any): Verdict[] {
  const out: Verdict[] = [];
  if (r.ingest) verdictsIngest(r, out);
  verdictsRest(r, out);
  return out;
}

/** The issue 16 targets for ingest. */
const TARGET = { limitRatio: 0.7, ceilingPct: 20, p99Ms: 15, peakRssMiB: 110, statusMs: 60 };

function verdictsIngest(r: any, out: Verdict[]) {
  const n = (x: number) => x.toLocaleString('en');
  if (r.limit) {
    const k = r.limitRatio;
    out.push({
      target: `ingest (synchronous FULL) >= ${TARGET.limitRatio.toFixed(2)} of the durable-ack limit, same run`,
      measured: `${k.toFixed(2)} (${n(r.ingest.rps)} of ${n(r.limit.rps)} req/s)`,
      met: k >= TARGET.limitRatio,
      note: k >= TARGET.limitRatio ? undefined : `short by ${n(Math.round(r.limit.rps * TARGET.limitRatio - r.ingest.rps))} req/s`,
    });
    out.push({
      target: 'durable-ack limit: every row stored is a 202 it sent, every 202 received is stored',
      measured: `${n(r.limit.stored)} rows, ${n(r.limit.answered ?? 0)} 202s sent, ${n(r.limit.acknowledged)} received (best run)`,
      met: r.limit.everyRunStoredEqualsAnswered,
      note: r.limit.everyRunStoredEqualsAnswered ? undefined : 'a run stored other than it answered: its figure is no bound',
    });
  }
  const ratioPct = r.ratio * 100;
  out.push({
    target: `ingest (synchronous FULL) >= ${TARGET.ceilingPct}% of the bare Bun.serve ceiling`,
    measured: `${ratioPct.toFixed(1)}% (${n(r.ingest.rps)} of ${n(r.ceiling.rps)} req/s)`,
    met: ratioPct >= TARGET.ceilingPct,
    note:
      ratioPct >= TARGET.ceilingPct
        ? undefined
        : `short by ${(TARGET.ceilingPct - ratioPct).toFixed(1)} points (${n(Math.round((r.ceiling.rps * TARGET.ceilingPct) / 100 - r.ingest.rps))} req/s)`,
  });
  out.push({
    target: `ingest p99 <= ${TARGET.p99Ms} ms at 64 connections`,
    measured: `${r.ingest.p99Ms} ms`,
    met: r.ingest.p99Ms <= TARGET.p99Ms,
    note: r.ingest.p99Ms <= TARGET.p99Ms ? undefined : `over by ${(r.ingest.p99Ms - TARGET.p99Ms).toFixed(1)} ms`,
  });
  if (r.ingestPostgres) {
    const p = r.ingestPostgres;
    out.push({
      target: 'ingest on PostgreSQL: every 202 a stored receipt',
      measured: `${p.stored.toLocaleString('en')} stored of ${p.acknowledged.toLocaleString('en')} acknowledged (best run)`,
      met: p.allAcknowledgedStored,
    });
  }
  if (r.ingest.peakRssMiB != null) {
    const mib = r.ingest.peakRssMiB;
    const max = TARGET.peakRssMiB;
    out.push({
      target: `peak RSS of serve under ingest load <= ${max} MiB`,
      measured: `${mib} MiB (the highest of the runs)`,
      met: mib <= max,
      note: mib <= max ? undefined : `over by ${(mib - max).toFixed(1)} MiB`,
    });
  }
}

function verdictsRest(r: any, out: Verdict[]) {
  out.push(...(r.stores?.targets ?? []));
  for (const b of r.budget?.results ?? []) {
    out.push({
      target: `handoff within a cost budget (${b.setup}, ${b.instances} instance${b.instances > 1 ? 's' : ''}): drain <= 1.15x the budget's ideal time, THROTTLED <= 3% of sends`,
      measured: `${b.ratio}x (${b.seconds} of ${b.idealSeconds} s), THROTTLED ${(b.throttledShare * 100).toFixed(2)}% (${b.throttled} of ${b.calls}), ${b.delivered} of ${b.events} delivered`,
      met: b.ratio <= 1.15 && b.throttledShare <= 0.03 && b.delivered >= b.events,
    });
  }
  if (r.reads) {
    // Judged on one connection (a read's own latency); 8 connections adds queueing behind the other seven.
    for (const row of r.reads.results) {
      const p99 = row.c1.p99Ms;
      out.push({
        target: `read p99 <= 10 ms at ${r.reads.events.toLocaleString('en')} events: ${row.name}`,
        measured: `${p99} ms on 1 connection (8 connections: ${row.c8.p99Ms} ms)`,
        met: p99 <= 10,
        note: p99 <= 10 ? undefined : `over by ${(p99 - 10).toFixed(1)} ms`,
      });
    }
    for (const n of r.reads.notServed)
      out.push({
        target: `read p99 <= 10 ms at ${r.reads.events.toLocaleString('en')} events: ${n.name}`,
        measured: `not yet served (HTTP ${n.status})`,
        met: null,
      });
  }
  const shipped = r.resources?.compiledIngest;
  if (shipped?.peakRssMiB != null) {
    const mib = shipped.peakRssMiB;
    const max = TARGET.peakRssMiB;
    out.push({
      target: `peak RSS of the compiled serve (as shipped) under ingest load <= ${max} MiB`,
      measured: `${mib} MiB`,
      met: mib <= max,
      note: mib <= max ? undefined : `over by ${(mib - max).toFixed(1)} MiB`,
    });
  }
  const cold = r.resources?.clientColdStart;
  if (cold) {
    out.push({
      target: `\`status\` cold start <= ${TARGET.statusMs} ms`,
      measured: `${cold.medianMs} ms median, ${cold.firstMs} ms first (${cold.command})`,
      met: cold.statusCommandExists ? cold.medianMs <= TARGET.statusMs : null,
      note: !cold.statusCommandExists
        ? '`status` not built yet; --version measured instead'
        : cold.medianMs > TARGET.statusMs
          ? `over by ${(cold.medianMs - TARGET.statusMs).toFixed(1)} ms`
          : undefined,
    });
  }
}

function table(r: any): string {
  const lines = ['| part | measure | value |', '|---|---|---|'];
  const row = (a: string, b: string, c: string) => lines.push(`| ${a} | ${b} | ${c} |`);
  const lat = (x: any) => `p50 ${x.p50Ms} ms, p99 ${x.p99Ms} ms`;
  if (r.ingest) tableIngest(r, row, lat);
  tableRest(r, row, lat);
  lines.push('', '| target | measured | verdict |', '|---|---|---|');
  for (const v of r.targets as Verdict[]) {
    lines.push(`| ${v.target} | ${v.measured} | ${v.met == null ? 'not measurable yet' : v.met ? 'met' : `missed${v.note ? `: ${v.note}` : ''}`} |`);
  }
  return lines.join('\n');
}

type Row = (a: string, b: string, c: string) => void;

function tableIngest(r: any, row: Row, lat: (x: any) => string) {
  row(
    'ceiling',
    'bare Bun.serve 202',
    `${r.ceiling.rps.toLocaleString('en')} req/s (${lat(r.ceiling)}); CPU: server ${r.ceiling.serverCpuPct}%, loader ${r.ceiling.loaderCpuPct}%, others ${r.ceiling.othersCpuPct}% (hypervisor steal ${r.ceiling.stealPct}%)`,
  );
  const l = r.limit;
  if (l)
    row(
      'limit',
      'durable-ack reference: Bun.serve + HMAC + group commit of one row per event, synchronous FULL',
      `${l.rps.toLocaleString('en')} req/s (${lat(l)}); CPU: server ${l.serverCpuPct}%, loader ${l.loaderCpuPct}%, others ${l.othersCpuPct}% (hypervisor steal ${l.stealPct}%); ${l.rowsPerCommit} rows per commit`,
    );
  row(
    'ingest',
    'serve, synchronous FULL, worker + log destination + request log',
    `${r.ingest.rps.toLocaleString('en')} req/s (${lat(r.ingest)}); CPU: server ${r.ingest.serverCpuPct}%, loader ${r.ingest.loaderCpuPct}%, others ${r.ingest.othersCpuPct}% (hypervisor steal ${r.ingest.stealPct}%)`,
  );
  if (l) row('ingest', 'ratio ingest / durable-ack limit', r.limitRatio.toFixed(2));
  if (r.against) {
    const t = r.against;
    row(
      'ingest',
      `--against ${t.checkout}, same load, each round right after this tree's`,
      `${t.rps.toLocaleString('en')} req/s (${lat(t)}); ${t.serverCpuUsPerRequest} µs server CPU per request; ${t.limitRatio.toFixed(2)} of the limit`,
    );
    const k = (x: any, i: number) => (x?.runs[i] == null ? '-' : x.runs[i].toLocaleString('en'));
    const perRound = t.runs.map((_: number, i: number) => `${i + 1}: ${k(l, i)} / ${k(r.ingest, i)} / ${k(t, i)}`);
    row('ingest', 'req/s per round: limit / this tree / against', perRound.join('; '));
    const cpu = t.cpuUsRuns.map((c: number | null, i: number) => `${i + 1}: ${r.ingest.cpuUsRuns[i] ?? '-'} / ${c ?? '-'} µs`);
    row('ingest', 'server CPU per request per round: this tree / against', cpu.join('; '));
  }
  row('ingest', 'ratio ingest / ceiling', `${(r.ratio * 100).toFixed(1)}%`);
  row(
    'ingest',
    `server CPU per request: ceiling${l ? ' / limit' : ''} / ingest (steal-robust)`,
    [r.ceiling, ...(l ? [l] : []), r.ingest].map((x) => `${x.serverCpuUsPerRequest} µs`).join(' / '),
  );
  const p = r.ingestPostgres;
  if (p) {
    row(
      'ingest',
      'serve on PostgreSQL (synchronous_commit on), worker + log destination + request log',
      `${p.rps.toLocaleString('en')} req/s (${lat(p)}); CPU: server ${p.serverCpuPct}%, postgres ${p.postgresCpuPct}%, loader ${p.loaderCpuPct}%, others ${p.othersCpuPct}%`,
    );
    row(
      'ingest',
      'PostgreSQL group commits',
      `${p.commitsPerSecond.toLocaleString('en')}/s, ${p.receiptsPerCommit} receipts each, ${p.meanCommitMs} ms each until durable; WAL ${p.walSyncsPerSecond.toLocaleString('en')} fsyncs/s, ${p.walBytesPerReceipt.toLocaleString('en')} bytes per receipt`,
    );
  }
  if (r.ingest.peakRssMiB != null) {
    const floor = l?.peakRssMiB != null ? `; the durable-ack limit's: ${l.peakRssMiB} MiB` : '';
    row('resources', 'peak RSS of serve under ingest load (VmHWM)', `${r.ingest.peakRssMiB} MiB (${r.ingest.idleRssMiB} MiB before the load)${floor}`);
  }
  if (r.durability) {
    for (const [k, v] of Object.entries<any>(r.durability.runs)) {
      row('durability', k, `${v.rps.toLocaleString('en')} req/s (${lat(v)})`);
    }
    row('durability', 'NORMAL / FULL throughput (serve)', `${r.durability.normalOverFull}x`);
  }
}

function tableRest(r: any, row: Row, lat: (x: any) => string) {
  for (const x of r.stores?.results ?? []) {
    const at = `${x.backend}${x.instances > 1 ? ` ×${x.instances}` : ''}, ${x.stores.toLocaleString('en')} stores`;
    const q = x.quiet;
    row(
      'stores',
      `quiet ${q.minutes.length} min, ${at}`,
      `serve CPU ${q.cpuPctMax}% max minute (${q.startupMinuteCpuPct}% the minute after a start), RSS ${q.rssMiBMax} MiB, ${q.statementsPerMinSettled.toLocaleString('en')} statements/min, token requests per minute ${q.tokenRequests.join(' ')}`,
    );
    const st = x.steady;
    row(
      'stores',
      `steady ${st.minutes} min, ${at}: ${st.ratePerS} events/s, 10 hot stores at 10x their budget`,
      `quiet stores 202→handoff p50 ${st.quietP50Ms} ms, p99 ${st.quietP99Ms} ms; hot stores ${st.hotShareMin} of budget (min); serve CPU ${st.cpuPct.join(' + ')}%, ${st.statementsPerMin.toLocaleString('en')} statements/min`,
    );
  }
  if (r.handoff) {
    row(
      'handoff',
      `drain ${r.handoff.events.toLocaleString('en')} events, Flow latency ${r.handoff.flowLatencyMs} ms, concurrency ${r.handoff.concurrency}`,
      `${r.handoff.eventsPerSecond.toLocaleString('en')} events/s (bound ${r.handoff.boundEventsPerSecond.toLocaleString('en')})`,
    );
  }
  for (const b of r.budget?.results ?? []) {
    row(
      'budget',
      `drain ${b.events.toLocaleString('en')} events within a cost budget, ${b.setup}, ${b.instances} instance(s)`,
      `${b.seconds} s (ideal ${b.idealSeconds} s, ${b.ratio}x); THROTTLED ${b.throttled} of ${b.calls} calls`,
    );
  }
  if (r.reads) {
    row(
      'reads',
      `seed ${r.reads.events.toLocaleString('en')} events`,
      `${r.reads.seedSeconds} s, DB ${r.reads.dbMiB} MiB; bench server ready ${r.reads.serverStartMs} ms after spawn on it`,
    );
    for (const x of r.reads.results) {
      row('reads', x.name, `1 conn: ${lat(x.c1)}; 8 conns: ${lat(x.c8)}, ${x.c8.rps.toLocaleString('en')} req/s`);
    }
    for (const n of r.reads.notServed) row('reads', n.name, `not yet served (HTTP ${n.status})`);
  }
  if (r.resources?.buildError) row('resources', 'build', `failed: ${r.resources.buildError.replaceAll('\n', ' ')}`);
  if (r.resources?.binaryMiB != null) {
    const floor = r.resources.emptyBinary;
    row(
      'resources',
      'size of the compiled hookrelay',
      `${r.resources.binaryMiB} MiB${floor ? ` (an empty compiled Bun program: ${floor.binaryMiB} MiB)` : ''}`,
    );
    const c = r.resources.clientColdStart;
    row(
      'resources',
      `cold start of \`${c.command}\`${c.statusCommandExists ? '' : ' (status not built yet)'}`,
      `${c.medianMs} ms median (first ${c.firstMs} ms)`,
    );
    if (c.statusCommandExists)
      row(
        'resources',
        'cold start of `hookrelay --version`',
        `${r.resources.versionColdStart.medianMs} ms median (first ${r.resources.versionColdStart.firstMs} ms)`,
      );
    if (floor) row('resources', 'cold start of an empty compiled Bun program (floor)', `${floor.medianMs} ms median`);
    row('resources', 'serve: spawn to first accepted request', `${r.resources.serveToFirstAccepted.medianMs} ms median`);
    const shipped = r.resources.compiledIngest;
    if (shipped) {
      row(
        'resources',
        'the compiled serve (as shipped) under the ingest load: peak RSS (VmHWM)',
        `${shipped.peakRssMiB} MiB (${shipped.idleRssMiB} MiB before the load); ${shipped.rps.toLocaleString('en')} req/s (${lat(shipped)}), ${shipped.serverCpuUsPerRequest} µs server CPU per request${shipped.non2xx || shipped.errors ? `; ${shipped.non2xx} non-2xx, ${shipped.errors} errors` : ''}`,
      );
    }
  }
}

async function main() {
  const started = performance.now();
  const results: Record<string, any> = {
    mode: quick ? 'quick' : 'full',
    startedAt: new Date().toISOString(),
    command: `bun run bench${quick ? ' --quick' : ''}`,
    machine: machine(),
    loader: {
      tool: 'autocannon',
      runtime: `bun ${Bun.version}`,
      connections: CONNECTIONS,
      warmupS: WARMUP_S,
      durationS: INGEST_S,
      rounds: ROUNDS,
      bodyBytes: 1024,
      pinned: PINNED,
    },
  };
  if (!PINNED) log('taskset not found or fewer than 2 cores: server and load generator are not pinned');

  if (quick || wants('ingest')) {
    const ceilings: Awaited<ReturnType<typeof ceiling>>[] = [];
    const limits: Awaited<ReturnType<typeof limit>>[] = [];
    const serves: Awaited<ReturnType<typeof ingest>>[] = [];
    const pgServes: Awaited<ReturnType<typeof ingestPg>>[] = [];
    const againsts: Awaited<ReturnType<typeof ingest>>[] = [];
    const serveOptions: IngestOptions = { sync: 'FULL', worker: true, requestLog: true };
    for (let i = 1; i <= ROUNDS; i++) {
      ceilings.push(await ceiling());
      limits.push(await limit(`limit-${i}`));
      serves.push(await ingest(`serve-full-${i}`, serveOptions));
      if (AGAINST) againsts.push(await ingest(`against-${i}`, serveOptions, join(resolve(AGAINST), 'scripts/bench/server.ts')));
      if (PG_URL) pgServes.push(await ingestPg(`serve-pg-${i}`));
    }
    if (pgServes.length) results.ingestPostgres = { ...best(pgServes), runs: pgServes.map((x) => x.rps) };
    results.ceiling = { ...best(ceilings), runs: ceilings.map((c) => c.rps) };
    results.ingest = {
      ...best(serves),
      peakRssMiB: Math.max(...serves.map((x) => x.peakRssMiB ?? 0)),
      runs: serves.map((x) => x.rps),
      cpuUsRuns: serves.map((x) => x.serverCpuUsPerRequest),
    };
    results.ratio = round(results.ingest.rps / results.ceiling.rps, 4);
    results.limit = {
      ...best(limits),
      peakRssMiB: Math.max(...limits.map((x) => x.peakRssMiB ?? 0)),
      runs: limits.map((x) => x.rps),
      everyRunStoredEqualsAnswered: limits.every((x) => x.storedEqualsAnswered),
    };
    results.limitRatio = round(results.ingest.rps / results.limit.rps, 4);
    if (againsts.length) {
      const b = best(againsts);
      results.against = {
        checkout: resolve(AGAINST!),
        ...b,
        runs: againsts.map((x) => x.rps),
        cpuUsRuns: againsts.map((x) => x.serverCpuUsPerRequest),
        limitRatio: round(b.rps! / results.limit.rps, 4),
      };
    }
  }
  const full = results.ingest;

  if (!quick && full && wants('durability')) {
    const bestOf = async (label: string, o: IngestOptions) => {
      const runs: Awaited<ReturnType<typeof ingest>>[] = [];
      for (let i = 1; i <= ROUNDS; i++) runs.push(await ingest(`${label}-${i}`, o));
      return { ...best(runs), runs: runs.map((x) => x.rps) };
    };
    const normal = await bestOf('serve-normal', { sync: 'NORMAL', worker: true, requestLog: true });
    const leanFull = await bestOf('lean-full', { sync: 'FULL', worker: false, requestLog: false });
    const leanNormal = await bestOf('lean-normal', { sync: 'NORMAL', worker: false, requestLog: false });
    results.durability = {
      runs: {
        'serve, synchronous FULL': full,
        'serve, synchronous NORMAL': normal,
        'ingest only (no worker, no request log), FULL': leanFull,
        'ingest only (no worker, no request log), NORMAL': leanNormal,
      },
      normalOverFull: round(normal.rps! / full.rps!, 2),
      leanNormalOverFull: round(leanNormal.rps! / leanFull.rps!, 2),
    };
  }
  if (!quick) {
    if (wants('handoff')) results.handoff = await handoff();
    if (wants('budget')) results.budget = await budget();
    if (wants('reads')) results.reads = await reads();
    if (wants('resources')) results.resources = await resources();
    if (wants('stores')) results.stores = await stores();
  }
  results.targets = verdicts(results);
  results.seconds = round((performance.now() - started) / 1000, 1);

  mkdirSync(join(ROOT, 'bench'), { recursive: true });
  writeFileSync(join(ROOT, 'bench/results.json'), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${table(results)}\n`);
  log(`wrote bench/results.json in ${results.seconds} s`);
}

try {
  await main();
} finally {
  cleanup();
}
