/**
 * `bun run bench:budget [--events N] [--max P] [--rate P] [--json] [--only sqlite,postgres]`: draining a backlog
 * to a store whose cost budget is the limit, against the fake Shopify's enforced bucket (by default 1,000 points,
 * 500 restored a second, 10 a handoff: the first 100 go at once, then 50 a second).
 *
 * The ideal drain of N events is (N × cost − max) / rate seconds (1,500 events: 28 s): the budget, not hookrelay,
 * bounds it. Measured: the drain time from the workers' start to the last delivery, its ratio to the ideal, and
 * THROTTLED answers as a share of flowTriggerReceive calls. Two setups, each a fresh deployment:
 *
 *   sqlite     one instance, a SQLite file (as serve keeps it)
 *   postgres   two instances on one PostgreSQL database (HOOKRELAY_BENCH_DATABASE_URL or
 *              HOOKRELAY_TEST_DATABASE_URL; skipped without), each with its own storage handle, worker and
 *              platform, sharing the store's budget through the database, as two `serve` processes do
 *
 * In one process: the fake and the instances share the event loop, as the bench's other in-process parts do.
 * Progress on stderr; a Markdown table (or JSON) on stdout. Exit 1 when an event was not delivered.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openPgRepo } from '../../db/pg/repo.ts';
import type { Repo } from '../../db/repo.ts';
import { openSqliteRepo } from '../../db/sqlite/repo.ts';
import { newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import type { Log } from '../../src/lib/log.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { startFakeShopify } from '../../test/fixtures/fake-shopify.ts';
import { benchCore, benchDeployment, sendEvents } from './_deploy.ts';
import { log, machine, pgStatement, round } from './_lib.ts';

const { values: a } = parseArgs({
  options: {
    events: { type: 'string', default: '1500' },
    max: { type: 'string', default: '1000' },
    rate: { type: 'string', default: '500' },
    only: { type: 'string', default: 'sqlite,postgres' },
    json: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(a.events);
const MAX = Number(a.max);
const RATE = Number(a.rate);
const COST = 10;
const IDEAL_S = Math.max(0, EVENTS * COST - MAX) / RATE;
const PG_URL = process.env.HOOKRELAY_BENCH_DATABASE_URL || process.env.HOOKRELAY_TEST_DATABASE_URL || null;
const TOKEN = `shpat_bench_budget_${Math.random().toString(36).slice(2)}`;
const SHOP = 'bench-budget.myshopify.com';

interface Result {
  setup: string;
  instances: number;
  events: number;
  delivered: number;
  seconds: number;
  idealSeconds: number;
  ratio: number;
  calls: number;
  throttled: number;
  throttledShare: number;
}

const quiet: Log = { info: () => {}, warn: () => {}, error: (m) => process.stderr.write(`[bench] ${m}\n`) };

async function drain(setup: string, repos: Repo[], delivered: () => Promise<number>): Promise<Result> {
  const fake = startFakeShopify({ token: TOKEN, bucket: { maximumAvailable: MAX, restoreRate: RATE } });
  try {
    const key = newSecretKey();
    const cores = repos.map((repo) => benchCore(repo, new SecretBox(key), fake.url, { TOKEN_VAR: TOKEN }, quiet));
    const d = await benchDeployment(cores[0]!, { shopDomain: SHOP, destination: 'shopify', adminTokenEnv: 'TOKEN_VAR' });
    await sendEvents(d, EVENTS);
    await d.app.writer.close();
    // The bucket starts full, as Shopify's does for a store the app has not called for a while.
    fake.reset();
    log(`budget: ${setup}, ${EVENTS} events due, bucket ${MAX} points restoring ${RATE}/s, ${repos.length} instance(s)`);
    const workers = cores.map((core) => new HandoffWorker(core));
    const t0 = performance.now();
    for (const w of workers) w.start();
    let done = 0;
    while (performance.now() - t0 < (IDEAL_S * 3 + 30) * 1000) {
      await Bun.sleep(50);
      done = await delivered();
      if (done >= EVENTS) break;
    }
    const seconds = (performance.now() - t0) / 1000;
    await Promise.all(workers.map((w) => w.stop()));
    const calls = fake.requests.length;
    const throttled = fake.requests.filter((r) => r.behaviour === 'throttled').length;
    return {
      setup,
      instances: repos.length,
      events: EVENTS,
      delivered: done,
      seconds: round(seconds, 2)!,
      idealSeconds: round(IDEAL_S, 2)!,
      ratio: round(seconds / IDEAL_S, 3)!,
      calls,
      throttled,
      throttledShare: round(throttled / Math.max(1, calls), 4)!,
    };
  } finally {
    await fake.stop();
  }
}

async function onSqlite(): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-bench-budget-'));
  const repo = await openSqliteRepo({ path: join(dir, 'hookrelay.db') });
  try {
    const q = repo.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM events WHERE outcome = 'delivered'");
    return await drain('sqlite', [repo], async () => q.get()!.n);
  } finally {
    await repo.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function onPostgres(): Promise<Result> {
  const name = `hr_bench_budget_${process.pid}`;
  const admin = (sql: string) => pgStatement(PG_URL!, sql);
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(PG_URL!);
  url.pathname = `/${name}`;
  const repos = [await openPgRepo({ url: url.toString() }), await openPgRepo({ url: url.toString() })];
  try {
    return await drain('postgres', repos, async () =>
      Number((await repos[0]!.pool.query("SELECT count(*) AS n FROM events WHERE outcome = 'delivered'")).rows[0].n),
    );
  } finally {
    await Promise.all(repos.map((r) => r.close()));
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
}

const only = new Set(a.only!.split(','));
const results: Result[] = [];
if (only.has('sqlite')) results.push(await onSqlite());
if (only.has('postgres')) {
  if (PG_URL) results.push(await onPostgres());
  else log('budget: no HOOKRELAY_BENCH_DATABASE_URL or HOOKRELAY_TEST_DATABASE_URL: the PostgreSQL part is skipped');
}

if (a.json) process.stdout.write(`${JSON.stringify({ machine: machine(), results })}\n`);
else {
  const lines = [
    `Handoff within a cost budget: bucket ${MAX} points, ${RATE}/s, ${COST} a handoff; ideal drain of ${EVENTS} events ${round(IDEAL_S, 1)} s`,
    '',
    '| setup | instances | delivered | drain s | ÷ ideal (≤ 1.15) | calls | THROTTLED | share (≤ 3%) |',
    '|---|---|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.setup} | ${r.instances} | ${r.delivered}/${r.events} | ${r.seconds} | ${r.ratio} | ${r.calls} | ${r.throttled} | ${round(r.throttledShare * 100, 2)}% |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
process.exit(results.every((r) => r.delivered >= r.events) ? 0 : 1);
