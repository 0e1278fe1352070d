/**
 * `bun run bench --only=stores` (or `bun scripts/bench/stores.ts`): what thousands of installed stores cost while
 * quiet, and whether one store's backlog delays another's, at 100, 1,000 and 10,000 stores.
 *
 *   [--stores=100,1000,10000] [--quiet-minutes=10] [--steady-minutes=3] [--backends=sqlite,postgres] [--json]
 *
 * Per backend and store count, a fresh database is seeded: N stores (plan growth, destination shopify, client
 * credentials of one app) with one order endpoint each, written through the repository in this process (initStore
 * and createEndpoint, as `init` and the API make them, without HTTP; SQLite with synchronous NORMAL while seeding).
 * The fake Shopify host (test/fixtures/fake-shopify.ts) runs in this process: every store its own shop domain
 * (HOOKRELAY_SHOPIFY_ADMIN_URL=…/{shop}), its own cost bucket (100 points restoring 10 a second: a handoff of 10
 * points, one a second) and client-credentials tokens that expire after an hour. Each store is seeded with a token
 * obtained at a random point of the last 45 minutes, so renewals fall due during the run, spread.
 *
 * serve runs as its own process (scripts/bench/stores-serve.ts: openCore + startServer as `hookrelay serve`, pinned
 * to core 0, statements counted inside it); on PostgreSQL two of them share the database.
 *
 *   quiet   no traffic for --quiet-minutes; serve restarted half-way. Per minute: serve's CPU (its own process
 *           time), RSS, statements executed, and token requests the fake received (the renewals' spread).
 *   steady  then, against the restarted serve: every store one event a minute (evenly spread), and HOT stores
 *           each HOT_FACTOR times what their Flow budget pays for. Measured: the quiet stores' time from 202 to
 *           handoff (events.received_at to delivered_at, from the database; an event not handed off by the end
 *           counts as late), and the hot stores' accepted Flow calls against their budget after the first
 *           STEADY_WARMUP_S (the bucket starts full).
 *
 * Progress on stderr; a Markdown table with each goal met or not (or JSON) on stdout; exit 1 when a goal is missed.
 */
import { Database } from 'bun:sqlite';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openCore } from '../../src/boot.ts';
import type { Core } from '../../src/core.ts';
import type { Log } from '../../src/lib/log.ts';
import { createEndpoint } from '../../src/ops/endpoints.ts';
import { initStore } from '../../src/ops/stores.ts';
import { startFakeShopifyHost, type FakeShopifyHost } from '../../test/fixtures/fake-shopify.ts';
import { RUNTIME_FLAGS } from '../build.ts';
import { cpuSeconds, log, machine, machineBusySeconds, pgStatement, ROOT, round, rssMiB, sign, spawnReady, stop, type Child } from './_lib.ts';

const USAGE = 'usage: bun run bench --only=stores [--stores=100,1000,10000] [--quiet-minutes=10] [--steady-minutes=3] [--backends=sqlite,postgres] [--json]';

function parseFlags() {
  try {
    return parseArgs({
      options: {
        stores: { type: 'string', default: '100,1000,10000' },
        'quiet-minutes': { type: 'string', default: '10' },
        'steady-minutes': { type: 'string', default: '3' },
        backends: { type: 'string', default: 'sqlite,postgres' },
        json: { type: 'boolean', default: false },
        only: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    }).values;
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
    process.exit(2);
  }
}
const flags = parseFlags();
if (flags.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const COUNTS = flags.stores!.split(',').map(Number);
const QUIET_MIN = Number(flags['quiet-minutes']);
const STEADY_MIN = Number(flags['steady-minutes']);
const BACKENDS = flags.backends!.split(',');
if (COUNTS.some((n) => !Number.isInteger(n) || n < 10) || !(QUIET_MIN >= 1) || !(STEADY_MIN >= 1) || BACKENDS.some((b) => b !== 'sqlite' && b !== 'postgres')) {
  process.stderr.write(`--stores: whole numbers >= 10; --quiet-minutes and --steady-minutes >= 1; --backends: sqlite, postgres\n${USAGE}\n`);
  process.exit(2);
}
const PG_URL = process.env.HOOKRELAY_BENCH_DATABASE_URL || process.env.HOOKRELAY_TEST_DATABASE_URL || null;

const SERVE = join(ROOT, 'scripts/bench/stores-serve.ts');
const CLIENT_ID = 'hookrelay-bench-stores';
const SECRET_VAR = 'HOOKRELAY_BENCH_STORES_CLIENT_SECRET';
// Random per run, never printed: only the fake and serve's environment hold it.
const CLIENT_SECRET = `shpss_${randomBytes(16).toString('hex')}`;
process.env[SECRET_VAR] = CLIENT_SECRET;
/** Each shop's cost bucket (Shopify's standard plan: 100 points, 10 restored a second here), a handoff 10 points. */
const BUCKET = { maximumAvailable: 100, restoreRate: 10 };
const COST = 10;
const BUDGET_PER_S = BUCKET.restoreRate / COST;
const HOT = 10;
const HOT_FACTOR = 10;
/** Client-credentials tokens live an hour here (as the `oauth` mode's expiring offline tokens): renewed after 45 minutes. */
const TOKEN_TTL_S = 3600;
/** The token the stores are seeded with: the fake accepts it as its static token (random per run, never printed). */
const SEEDED_TOKEN = `shpat_${randomBytes(16).toString('hex')}`;
const STEADY_WARMUP_S = 30;
const GOAL = { quietCpuPct: 2, quietRssMiB: 150, quietP99Ms: 2000, hotShare: 0.95 };

const quietLog: Log = { info: () => {}, warn: () => {}, error: (m) => log(`seed: ${m}`) };

interface Seeded {
  shop: string;
  storeId: string;
  endpointId: string;
  secret: string;
  header: string;
}

/** N stores with an endpoint each, written through the repository (no HTTP); returns what the load needs to sign. */
async function seed(core: Core, n: number): Promise<Seeded[]> {
  const out: Seeded[] = new Array(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const shop = `bench-stores-${String(i).padStart(5, '0')}.myshopify.com`;
      await initStore(core, {
        shopDomain: shop,
        plan: 'growth',
        destination: 'shopify',
        auth: 'client-credentials',
        clientId: CLIENT_ID,
        clientSecretEnv: SECRET_VAR,
      });
      const store = (await core.repo.getStoreByShop(shop))!;
      const ctx = { core, store, grant: null, scopes: [], actor: { kind: 'cli' }, requestId: 'seed' } as unknown as Parameters<typeof createEndpoint>[0];
      const made = await createEndpoint(ctx, { body: { triggerVariant: 'order', resourceIdPath: 'order.id', name: 'bench' } } as Parameters<
        typeof createEndpoint
      >[1]);
      // An installed store holds a token already: obtained at some point of the last 3/4 of its life (so the
      // renewals of 10,000 stores fall due spread, as they do once a deployment has run a while).
      const obtainedAt = Date.now() - Math.floor(Math.random() * TOKEN_TTL_S * 750);
      await core.repo.links.takeRenewal(store.id, 'seed', obtainedAt, obtainedAt + 60_000);
      await core.repo.links.saveToken(
        store.id,
        'seed',
        {
          sealed: core.box.seal(SEEDED_TOKEN),
          expiresAt: obtainedAt + TOKEN_TTL_S * 1000,
          obtainedAt,
          scope: null,
          clientId: CLIENT_ID,
          refreshSealed: null,
          refreshExpiresAt: null,
        },
        obtainedAt,
      );
      out[i] = { shop, storeId: store.id, endpointId: made.endpoint.id, secret: made.secret, header: made.endpoint.auth.headerName };
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return out;
}

interface Storage {
  label: string;
  serveArgs: string[];
  /** Quiet stores' events received in [from, to): each one's ms from 202 to handoff (null: not handed off). */
  latencies(hot: Set<string>, from: number, to: number): Promise<(number | null)[]>;
  close(): Promise<void>;
}

async function sqliteStorage(dir: string): Promise<Storage> {
  const file = join(dir, 'hookrelay.db');
  return {
    label: 'sqlite',
    serveArgs: ['--data-dir', dir],
    async latencies(hot, from, to) {
      const db = new Database(file, { readonly: true });
      try {
        return db
          .query<{ s: string; r: number; d: number | null }, [number, number]>(
            'SELECT store_id AS s, received_at AS r, delivered_at AS d FROM events WHERE received_at >= ? AND received_at < ?',
          )
          .all(from, to)
          .filter((e) => !hot.has(e.s))
          .map((e) => (e.d == null ? null : e.d - e.r));
      } finally {
        db.close();
      }
    },
    close: async () => {},
  };
}

async function postgresStorage(n: number): Promise<Storage> {
  const name = `hr_bench_stores_${process.pid}_${n}`;
  await pgStatement(PG_URL!, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await pgStatement(PG_URL!, `CREATE DATABASE "${name}"`);
  const url = new URL(PG_URL!);
  url.pathname = `/${name}`;
  return {
    label: 'postgres',
    serveArgs: ['--database-url', url.toString()],
    async latencies(hot, from, to) {
      const c = new pg.Client({ connectionString: url.toString() });
      await c.connect();
      try {
        const r = await c.query(
          'SELECT store_id AS s, received_at::float8 AS r, delivered_at::float8 AS d FROM events WHERE received_at >= $1 AND received_at < $2',
          [from, to],
        );
        return (r.rows as { s: string; r: number; d: number | null }[]).filter((e) => !hot.has(e.s)).map((e) => (e.d == null ? null : e.d - e.r));
      } finally {
        await c.end();
      }
    },
    close: () => pgStatement(PG_URL!, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}

interface Instance {
  child: Child;
  statsFile: string;
}

interface Sample {
  at: number;
  cpu: number | null;
  rss: number | null;
  statements: number;
  /** The instance's most executed statements since it started (text, count). */
  top: [string, number][];
}

function sample(i: Instance): Sample {
  const s = JSON.parse(readFileSync(i.statsFile, 'utf8')) as { at: number; statements: number; top: [string, number][] };
  return { at: Date.now(), cpu: cpuSeconds(i.child.pid), rss: rssMiB(i.child.pid), statements: s.statements, top: s.top };
}

/** One minute (or any span) of an instance: its CPU as % of a core, RSS at the end, statements per minute. */
function span(a: Sample, b: Sample) {
  const s = (b.at - a.at) / 1000;
  return {
    cpuPct: a.cpu != null && b.cpu != null ? ((b.cpu - a.cpu) / s) * 100 : null,
    rssMiB: b.rss,
    statementsPerMin: ((b.statements - a.statements) / s) * 60,
  };
}

/** Token requests the fake received in [from, to), over every shop. */
function tokenRequests(host: FakeShopifyHost, from: number, to: number): number {
  let n = 0;
  for (const s of host.shops()) for (const t of host.shop(s.domain).tokenRequests) if (t.at >= from && t.at < to) n++;
  return n;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : null;
};

async function run(backend: string, n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-bench-stores-'));
  const instances = backend === 'postgres' ? 2 : 1;
  if (backend === 'postgres') process.env.HOOKRELAY_SECRET_KEY ??= randomBytes(32).toString('hex');
  const storage = backend === 'postgres' ? await postgresStorage(n) : await sqliteStorage(dir);
  const host = startFakeShopifyHost({
    app: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenTtlSeconds: TOKEN_TTL_S },
    token: SEEDED_TOKEN,
    bucket: BUCKET,
  });
  const live: Instance[] = [];
  try {
    const t0 = performance.now();
    const core = await openCore({
      dataDir: backend === 'sqlite' ? dir : undefined,
      databaseUrl: backend === 'postgres' ? storage.serveArgs[1] : undefined,
      synchronous: 'NORMAL',
      log: quietLog,
      config: { publicUrl: 'http://127.0.0.1' },
    });
    const seeded = await seed(core, n);
    await core.repo.close();
    const seedS = (performance.now() - t0) / 1000;
    log(`stores ${backend} ${n}: seeded ${n} stores with an endpoint each in ${seedS.toFixed(1)} s`);

    const start = async (k: number): Promise<Instance> => {
      const statsFile = join(dir, `stats-${k}-${Date.now()}.json`);
      const child = await spawnReady(0, ['bun', ...RUNTIME_FLAGS, SERVE, ...storage.serveArgs, '--stats-file', statsFile], {
        stderrTo: join(dir, `serve-${k}-${Date.now()}.log`),
        env: { HOOKRELAY_SHOPIFY_ADMIN_URL: `${host.url}/{shop}` },
        timeoutMs: 120_000,
      });
      const inst = { child, statsFile };
      live.push(inst);
      return inst;
    };
    const stopAll = async (xs: Instance[]) => {
      for (const x of xs) {
        await stop(x.child);
        live.splice(live.indexOf(x), 1);
      }
    };

    // ─── quiet ───
    let serves = await Promise.all(Array.from({ length: instances }, (_, k) => start(k)));
    let marks = serves.map(sample);
    const quietStart = Date.now();
    const restartAfter = Math.max(1, Math.floor(QUIET_MIN / 2));
    const minutes: {
      minute: number;
      afterStart: boolean;
      cpuPct: number[];
      rssMiB: number[];
      statementsPerMin: number;
      tokenRequests: number;
      othersPct: number | null;
    }[] = [];
    let startedAt = 0;
    let busy = machineBusySeconds();
    for (let m = 1; m <= QUIET_MIN; m++) {
      await Bun.sleep(Math.max(0, quietStart + m * 60_000 - Date.now()));
      const now = serves.map(sample);
      const spans = now.map((s, k) => span(marks[k]!, s));
      const b = machineBusySeconds();
      const cpuSum = spans.reduce((t, s) => t + (s.cpuPct ?? 0), 0);
      minutes.push({
        minute: m,
        afterStart: m - 1 === startedAt,
        cpuPct: spans.map((s) => round(s.cpuPct, 2)!),
        rssMiB: spans.map((s) => round(s.rssMiB, 1)!),
        statementsPerMin: Math.round(spans.reduce((t, s) => t + s.statementsPerMin, 0)),
        tokenRequests: tokenRequests(host, quietStart + (m - 1) * 60_000, quietStart + m * 60_000),
        othersPct: busy != null && b != null ? round(((b - busy) / 60) * 100 - cpuSum, 0) : null,
      });
      busy = b;
      log(`stores ${backend} ${n}: quiet minute ${m}: ${JSON.stringify(minutes.at(-1))}`);
      marks = now;
      if (m === restartAfter && m < QUIET_MIN) {
        log(`stores ${backend} ${n}: restarting serve`);
        await stopAll(serves);
        serves = await Promise.all(Array.from({ length: instances }, (_, k) => start(k)));
        // The restart's own seconds count in the next minute's figures.
        marks = marks.map((mk, k) => ({ ...mk, cpu: 0, statements: 0, rss: sample(serves[k]!).rss }));
        startedAt = m;
      }
    }
    // Minutes without a start in them; a run too short to have one (--quiet-minutes=1) is judged on all it has.
    const settled = minutes.some((x) => !x.afterStart) ? minutes.filter((x) => !x.afterStart) : minutes;
    const quiet = {
      minutes,
      cpuPctMax: round(Math.max(...settled.flatMap((x) => x.cpuPct)), 2),
      cpuPctMean: round(settled.flatMap((x) => x.cpuPct).reduce((t, x) => t + x, 0) / Math.max(1, settled.length * instances), 2),
      startupMinuteCpuPct: round(Math.max(...minutes.filter((x) => x.afterStart).flatMap((x) => x.cpuPct)), 2),
      rssMiBMax: round(Math.max(...minutes.flatMap((x) => x.rssMiB)), 1),
      statementsPerMinSettled: Math.round(settled.reduce((t, x) => t + x.statementsPerMin, 0) / Math.max(1, settled.length)),
      tokenRequests: minutes.map((x) => x.tokenRequests),
    };

    // ─── steady ───
    const hot = seeded.slice(0, HOT);
    const hotIds = new Set(hot.map((s) => s.storeId));
    const urls = serves.map((s) => s.child.ready.url as string);
    const statuses = new Map<number, number>();
    let sent = 0;
    let inFlight = 0;
    const send = (s: Seeded, tag: string) => {
      const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: tag, order: { id: 4501 + sent } });
      const url = `${urls[sent++ % urls.length]}/hooks/${s.endpointId}`;
      inFlight++;
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', [s.header]: sign(s.secret, body) }, body })
        .then(async (r) => {
          await r.arrayBuffer();
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        })
        .catch(() => statuses.set(0, (statuses.get(0) ?? 0) + 1))
        .finally(() => inFlight--);
    };
    marks = serves.map(sample);
    const steadyStart = Date.now();
    const steadyEnd = steadyStart + STEADY_MIN * 60_000;
    const perStoreMs = 60_000 / n;
    const hotEveryMs = 1000 / (BUDGET_PER_S * HOT_FACTOR);
    let quietNext = 0;
    let hotNext = 0;
    log(
      `stores ${backend} ${n}: steady for ${STEADY_MIN} min: ${round(n / 60, 1)} events/s over every store + ${HOT} hot stores at ${HOT_FACTOR}x their budget`,
    );
    while (Date.now() < steadyEnd) {
      const t = Date.now() - steadyStart;
      for (; quietNext * perStoreMs <= t; quietNext++) send(seeded[quietNext % n]!, `q-${quietNext}`);
      for (; hotNext * hotEveryMs <= t; hotNext++) for (const s of hot) send(s, `h-${hotNext}-${s.storeId}`);
      await Bun.sleep(20);
    }
    while (inFlight > 0) await Bun.sleep(20);
    const steadyMarks = serves.map(sample);
    const steadySpans = steadyMarks.map((s, k) => span(marks[k]!, s));
    // Whatever a quiet store sent in the window has had its chance: a little grace for the last second's events.
    await Bun.sleep(3000);
    const lat = await storage.latencies(hotIds, steadyStart, steadyEnd);
    const handed = lat.filter((x): x is number => x != null);
    const late = lat.length - handed.length;
    // Not handed off counts as slower than any handed off (a p99 it falls into is missed).
    const ranked = [...handed, ...Array.from({ length: late }, () => Number.POSITIVE_INFINITY)];
    const hotFrom = steadyStart + STEADY_WARMUP_S * 1000;
    const hotShares = hot.map((s) => {
      const ok = host.shop(s.shop).requests.filter((r) => r.at >= hotFrom && r.at < steadyEnd && r.behaviour === 'ok').length;
      return ok / (((steadyEnd - hotFrom) / 1000) * BUDGET_PER_S);
    });
    const steadyTokens = Array.from({ length: STEADY_MIN }, (_, m) => tokenRequests(host, steadyStart + m * 60_000, steadyStart + (m + 1) * 60_000));
    const steady = {
      minutes: STEADY_MIN,
      sent,
      statuses: Object.fromEntries(statuses),
      ratePerS: round(sent / (STEADY_MIN * 60), 1),
      quietEvents: lat.length,
      quietNotHandedOff: late,
      quietP50Ms: round(pct(ranked, 50), 0),
      quietP99Ms: round(pct(ranked, 99), 0),
      quietMaxMs: round(pct(ranked, 100), 0),
      hotShareMin: round(Math.min(...hotShares), 3),
      hotShareMean: round(hotShares.reduce((t, x) => t + x, 0) / hotShares.length, 3),
      cpuPct: steadySpans.map((s) => round(s.cpuPct, 1)),
      rssMiB: steadySpans.map((s) => round(s.rssMiB, 1)),
      statementsPerMin: Math.round(steadySpans.reduce((t, s) => t + s.statementsPerMin, 0)),
      tokenRequests: steadyTokens,
      /** The first instance's most executed statements over its life (the quiet half after the restart, then this). */
      topStatements: steadyMarks[0]!.top,
    };
    log(`stores ${backend} ${n}: steady ${JSON.stringify(steady)}`);
    if ([...statuses.keys()].some((k) => k !== 202)) {
      // What serve said of the answers that were not 202 (its own log lines: never a secret or a body).
      const errors = readdirSync(dir)
        .filter((f) => f.startsWith('serve-'))
        .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n'))
        .filter((l) => /error|unhandled/i.test(l));
      for (const l of errors.slice(0, 10)) log(`  serve: ${l.slice(0, 400)}`);
    }
    await stopAll([...live]);
    return { backend, stores: n, instances, seedSeconds: round(seedS, 1), quiet, steady };
  } finally {
    for (const x of live) await stop(x.child);
    await host.stop();
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

type Result = Awaited<ReturnType<typeof run>>;

/** Token requests spread: no minute holds more than twice the mean of the others and a few (no burst at a start). */
function spread(xs: number[]): boolean {
  const mean = xs.reduce((t, x) => t + x, 0) / Math.max(1, xs.length);
  return xs.every((x) => x <= Math.max(3, 2 * mean));
}

function verdicts(r: Result) {
  const q = r.quiet;
  const s = r.steady;
  const at = `${r.backend}, ${r.stores.toLocaleString('en')} stores`;
  return [
    {
      target: `quiet: serve CPU <= ${GOAL.quietCpuPct}% of a core (${at})`,
      measured: `${q.cpuPctMax}% (max minute; the minute after a start: ${q.startupMinuteCpuPct}%)`,
      met: q.cpuPctMax! <= GOAL.quietCpuPct,
    },
    { target: `quiet: serve RSS <= ${GOAL.quietRssMiB} MiB (${at})`, measured: `${q.rssMiBMax} MiB`, met: q.rssMiBMax! <= GOAL.quietRssMiB },
    {
      target: `quiet: token requests spread, no burst at a start or after the restart (${at})`,
      measured: `per minute ${q.tokenRequests.join(', ')}`,
      met: spread(q.tokenRequests),
    },
    {
      target: `steady: quiet stores 202 -> handoff p99 <= ${GOAL.quietP99Ms} ms while hot stores are backlogged (${at})`,
      measured: `p99 ${s.quietP99Ms} ms (p50 ${s.quietP50Ms}, max ${s.quietMaxMs}; ${s.quietNotHandedOff} of ${s.quietEvents} not handed off)`,
      met: s.quietP99Ms != null && s.quietP99Ms <= GOAL.quietP99Ms,
    },
    {
      target: `steady: hot stores >= ${GOAL.hotShare} of their Flow budget (${at})`,
      measured: `min ${s.hotShareMin}, mean ${s.hotShareMean}`,
      met: s.hotShareMin! >= GOAL.hotShare,
    },
  ];
}

const results: Result[] = [];
const started = performance.now();
for (const backend of BACKENDS) {
  if (backend === 'postgres' && !PG_URL) {
    log('stores: no HOOKRELAY_BENCH_DATABASE_URL or HOOKRELAY_TEST_DATABASE_URL: the PostgreSQL part is skipped');
    continue;
  }
  for (const n of COUNTS) results.push(await run(backend, n));
}
const targets = results.flatMap(verdicts);
const doc = {
  machine: machine(),
  config: { quietMinutes: QUIET_MIN, steadyMinutes: STEADY_MIN, bucket: BUCKET, cost: COST, hot: HOT, hotFactor: HOT_FACTOR, tokenTtlSeconds: TOKEN_TTL_S },
  results,
  targets,
  seconds: round((performance.now() - started) / 1000, 0),
};
if (flags.json) process.stdout.write(`${JSON.stringify(doc)}\n`);
else process.stdout.write(`${table(doc)}\n`);
process.exit(targets.every((t) => t.met) ? 0 : 1);

/** The stores part's Markdown: one row per backend and store count, then each goal met or not. */
function table(d: { results: Result[]; targets: ReturnType<typeof verdicts> }): string {
  const lines = [
    '| backend | stores | quiet CPU % (max minute / mean) | quiet CPU % minute after a start | quiet RSS MiB | quiet statements/min | quiet token requests per minute | steady events/s | quiet stores 202→handoff p50 / p99 / max ms | hot stores share of budget (min) | steady CPU % | steady statements/min |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...d.results.map(
      (r) =>
        `| ${r.backend}${r.instances > 1 ? ` ×${r.instances}` : ''} | ${r.stores.toLocaleString('en')} | ${r.quiet.cpuPctMax} / ${r.quiet.cpuPctMean} | ${r.quiet.startupMinuteCpuPct} | ${r.quiet.rssMiBMax} | ${r.quiet.statementsPerMinSettled.toLocaleString('en')} | ${r.quiet.tokenRequests.join(' ')} | ${r.steady.ratePerS} | ${r.steady.quietP50Ms} / ${r.steady.quietP99Ms} / ${r.steady.quietMaxMs} | ${r.steady.hotShareMin} | ${r.steady.cpuPct.join(' + ')} | ${r.steady.statementsPerMin.toLocaleString('en')} |`,
    ),
    '',
    '| target | measured | verdict |',
    '|---|---|---|',
    ...d.targets.map((t) => `| ${t.target} | ${t.measured} | ${t.met ? 'met' : 'missed'} |`),
  ];
  return lines.join('\n');
}
