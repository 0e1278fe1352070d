/**
 * `bun run bench:tokens [--events N] [--rounds R] [--ttl SECONDS] [--delay-ms MS] [--json]`: the handoff rate
 * with renewing Admin API tokens (client credentials) against a static token, in the same run.
 *
 * One process. The fake Shopify (test/fixtures/fake-shopify.ts) runs on 127.0.0.1 with a static token and an
 * app whose tokens live `--ttl` seconds on wall time (default 2 s: a renewal at 3/4 of that, every ~1.5 s,
 * where the real tokens live 24 h: an upper bound on what renewal costs). Every flowTriggerReceive is answered
 * after `--delay-ms` (default 15 ms: a scripted `slow` reply per call, so that the default 3,000 events take
 * about three TTLs to drain, four renewals; `--delay-ms 0` answers at once, a CPU-bound drain that needs ~40,000
 * events to hold a few renewals, and is too noisy here to resolve 5%). Each run builds a fresh deployment as the
 * tests do (in-memory SQLite, a store pointed at the fake, a grant, one endpoint made through the agent API, N
 * signed events committed through the inbound path) but on the system clock (createTestEnv's manual clock would
 * never expire a token), and drains it with the real HandoffWorker and the real Shopify platform, with
 * defaultConfig()'s handoff settings (concurrency 8, batch 256):
 *
 *   A  static token (adminTokenEnv)
 *   B  client-credentials, tokens of `--ttl` seconds, renewed by hookrelay during the drain
 *
 * Runs alternate A,B then B,A (round by round) after one unmeasured warm-up pair; the median events/s of each,
 * the ratio B/A per round and its median are reported. Progress on stderr, a Markdown table (or JSON) on
 * stdout. Exit 0 whatever the ratio (it is a measurement); exit 1 if an event failed or stayed undelivered, or
 * a flowTriggerReceive got a 401 in B. No token or secret is ever printed: they are random per run and only the
 * fake and the deployments' env() see them.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { migrateSqlite, openSqliteDatabase, type SqliteRepo, sqliteRepo } from '../../db/sqlite/repo.ts';
import { defaultConfig } from '../../src/core.ts';
import { newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import type { Log } from '../../src/lib/log.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { b, startFakeShopify, type FakeShopify } from '../../test/fixtures/fake-shopify.ts';
import { benchCore, benchDeployment, sendEvents, type Deployment } from './_deploy.ts';
import { log, machine, round } from './_lib.ts';

const USAGE = 'usage: bun run bench:tokens [--events N] [--rounds R] [--ttl SECONDS] [--delay-ms MS] [--json]\n';
/** The command line's flags; a wrong one exits 2 with the usage. */
function parseFlags() {
  try {
    return parseArgs({
      options: {
        events: { type: 'string', default: '3000' },
        rounds: { type: 'string', default: '5' },
        ttl: { type: 'string', default: '2' },
        'delay-ms': { type: 'string', default: '15' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    }).values;
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    process.exit(2);
  }
}
const parsed = parseFlags();
if (parsed.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const EVENTS = Number(parsed.events);
const ROUNDS = Number(parsed.rounds);
const TTL_S = Number(parsed.ttl);
const DELAY_MS = Number(parsed['delay-ms']);
if (!Number.isInteger(EVENTS) || EVENTS < 1 || !Number.isInteger(ROUNDS) || ROUNDS < 1 || !(TTL_S > 0) || !(DELAY_MS >= 0)) {
  process.stderr.write(`--events and --rounds must be positive integers, --ttl positive, --delay-ms 0 or more\n${USAGE}`);
  process.exit(2);
}
/** The median; of an even count, the mean of the middle two (bench's _lib median takes the lower one). */
function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** A measured drain should hold at least this many renewals, or the ratio says little about renewal. */
const MIN_RENEWALS = 3;
const WARMUP_EVENTS = Math.min(EVENTS, 1000);
const LIMIT_PCT = 5;

const SHOP = 'bench-tokens.myshopify.com';
const TOKEN_VAR = 'HOOKRELAY_BENCH_ADMIN_TOKEN';
const SECRET_VAR = 'HOOKRELAY_BENCH_CLIENT_SECRET';
const CLIENT_ID = 'hookrelay-bench-tokens';
// Random per run, never printed: only the fake and the deployments' env() hold them.
const STATIC_TOKEN = `shpat_${randomBytes(16).toString('hex')}`;
const CLIENT_SECRET = `shpss_${randomBytes(16).toString('hex')}`;
const secretEnv: Record<string, string> = { [TOKEN_VAR]: STATIC_TOKEN, [SECRET_VAR]: CLIENT_SECRET };

type Mode = 'static' | 'client-credentials';

interface Run {
  round: number;
  mode: Mode;
  events: number;
  delivered: number;
  failed: number;
  /** Events neither delivered nor failed when the drain ended (queued for a retry or a probe). */
  pending: number;
  seconds: number;
  eventsPerSecond: number;
  /** flowTriggerReceive calls the fake saw, and how many it answered 401. */
  calls: number;
  unauthorized: number;
  /** Token requests the fake received during the drain; `renewals` are those after the first (the initial token). */
  tokenRequests: number;
  renewals: number;
  /** Handoff warnings the worker logged (one per attempt not delivered). */
  warnings: number;
}

/** A deployment on the system clock (tokens expire on wall time), SQLite in memory, `events` accepted and due. */
async function deployment(fake: FakeShopify, mode: Mode, events: number): Promise<Deployment & { warnings: () => number; close: () => Promise<void> }> {
  const sqlite = openSqliteDatabase({ path: ':memory:' });
  await migrateSqlite(sqlite);
  const repo = sqliteRepo(sqlite);
  let warnings = 0;
  const quiet: Log = { info: () => {}, warn: () => void warnings++, error: (m) => process.stderr.write(`[bench] deployment error: ${m}\n`) };
  const core = benchCore(repo, new SecretBox(newSecretKey()), fake.url, secretEnv, quiet);
  const d = await benchDeployment(
    core,
    mode === 'static'
      ? { shopDomain: SHOP, destination: 'shopify', auth: 'static', adminTokenEnv: TOKEN_VAR }
      : { shopDomain: SHOP, destination: 'shopify', auth: 'client-credentials', clientId: CLIENT_ID, clientSecretEnv: SECRET_VAR },
  );
  await sendEvents(d, events);
  const accepted = sqlite.query<{ n: number }, []>(`SELECT count(*) AS n FROM events WHERE outcome = 'accepted'`).get()!.n;
  if (accepted !== events) throw new Error(`setup: ${accepted} of ${events} events accepted`);
  return { ...d, warnings: () => warnings, close: () => repo.close() };
}

async function measure(fake: FakeShopify, mode: Mode, events: number, roundNo: number): Promise<Run> {
  const d = await deployment(fake, mode, events);
  try {
    fake.reset();
    // One slow reply per call expected (and a margin); an empty script answers `ok` at once.
    if (DELAY_MS > 0) fake.script(...Array.from({ length: events + 64 }, () => b.slow(DELAY_MS)));
    const worker = new HandoffWorker(d.core);
    Bun.gc(true);
    const t0 = performance.now();
    // drain() runs rounds until nothing is due; the cap only ends a run that would never settle.
    await worker.drain(10 * Math.ceil(events / d.core.config.handoff.batchSize) + 100);
    const seconds = (performance.now() - t0) / 1000;
    await worker.stop();
    const sqlite = (d.core.repo as SqliteRepo).sqlite;
    const by = Object.fromEntries(
      sqlite
        .query<{ outcome: string; n: number }, []>('SELECT outcome, count(*) AS n FROM events GROUP BY outcome')
        .all()
        .map((r) => [r.outcome, r.n]),
    );
    const delivered = by.delivered ?? 0;
    const failed = by.failed ?? 0;
    const issued = fake.tokenRequests.filter((t) => t.outcome === 'issued').length;
    return {
      round: roundNo,
      mode,
      events,
      delivered,
      failed,
      pending: events - delivered - failed,
      seconds,
      eventsPerSecond: delivered / seconds,
      calls: fake.requests.length,
      unauthorized: fake.requests.filter((r) => r.behaviour === 'unauthorized').length,
      tokenRequests: fake.tokenRequests.length,
      renewals: Math.max(0, issued - 1),
      warnings: d.warnings(),
    };
  } finally {
    await d.close();
  }
}

const describe = (r: Run) =>
  `${r.mode === 'static' ? 'A static' : 'B client-credentials'}: ${r.delivered}/${r.events} delivered in ${r.seconds.toFixed(2)} s, ${Math.round(r.eventsPerSecond)} events/s` +
  (r.mode === 'client-credentials' ? `, ${r.tokenRequests} token requests (${r.renewals} renewals), ${r.unauthorized} × 401` : '') +
  (r.failed || r.pending ? `, ${r.failed} failed, ${r.pending} undelivered` : '');

const fake = startFakeShopify({ token: STATIC_TOKEN, app: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenTtlSeconds: TTL_S } });
const runs: Run[] = [];
const started = performance.now();
try {
  log(
    `tokens: ${EVENTS} events per drain, ${ROUNDS} rounds, token TTL ${TTL_S} s (renewed every ~${round(TTL_S * 0.75, 2)} s), ` +
      `fake answers each flowTriggerReceive ${DELAY_MS > 0 ? `after ${DELAY_MS} ms (scripted slow)` : 'at once (default ok)'}, ` +
      `handoff concurrency ${defaultConfig().handoff.concurrency}, batch ${defaultConfig().handoff.batchSize}`,
  );
  log(`warm-up (not measured): ${WARMUP_EVENTS} events each`);
  for (const mode of ['static', 'client-credentials'] as const) log(`  ${describe(await measure(fake, mode, WARMUP_EVENTS, 0))}`);
  for (let i = 1; i <= ROUNDS; i++) {
    const order: Mode[] = i % 2 === 1 ? ['static', 'client-credentials'] : ['client-credentials', 'static'];
    for (const mode of order) {
      const r = await measure(fake, mode, EVENTS, i);
      runs.push(r);
      log(`round ${i}/${ROUNDS} ${describe(r)}`);
    }
  }
} finally {
  await fake.stop();
}

const a = runs.filter((r) => r.mode === 'static');
const bRuns = runs.filter((r) => r.mode === 'client-credentials');
const ratios = Array.from({ length: ROUNDS }, (_, i) => {
  const ra = a.find((r) => r.round === i + 1)!;
  const rb = bRuns.find((r) => r.round === i + 1)!;
  return rb.eventsPerSecond / ra.eventsPerSecond;
});
const medianRatio = median(ratios);
const costPct = (1 - medianRatio) * 100;
const fewRenewals = bRuns.filter((r) => r.renewals < MIN_RENEWALS).length;
const failed = runs.reduce((n, r) => n + r.failed, 0);
const pending = runs.reduce((n, r) => n + r.pending, 0);
const unauthorized = bRuns.reduce((n, r) => n + r.unauthorized, 0);
const broken = failed > 0 || pending > 0 || unauthorized > 0;
const verdict = `renewal cost: ${(Math.abs(costPct) < 0.05 ? 0 : costPct).toFixed(1)}% (limit ${LIMIT_PCT}%) — ${costPct <= LIMIT_PCT ? 'ok' : 'over'}`;

const summary = {
  config: {
    events: EVENTS,
    rounds: ROUNDS,
    tokenTtlSeconds: TTL_S,
    renewEverySeconds: round(TTL_S * 0.75, 3),
    flowDelayMs: DELAY_MS,
    flowReply: DELAY_MS > 0 ? `scripted slow(${DELAY_MS})` : 'default ok (immediate)',
    concurrency: defaultConfig().handoff.concurrency,
    batchSize: defaultConfig().handoff.batchSize,
    storage: 'SQLite in memory',
    eventsVia: 'inbound path (signed POST /hooks/{id} through the app)',
    order: 'one warm-up pair, then A,B / B,A alternating by round',
    process: 'one process (relay, worker and fake share it), not pinned to a core',
  },
  // Whether taskset exists says nothing here: this bench pins nothing.
  machine: { ...machine(), taskset: undefined },
  static: { medianEventsPerSecond: round(median(a.map((r) => r.eventsPerSecond)), 0) },
  clientCredentials: {
    medianEventsPerSecond: round(median(bRuns.map((r) => r.eventsPerSecond)), 0),
    renewalsPerRun: bRuns.map((r) => r.renewals),
    unauthorized,
  },
  ratios: ratios.map((x) => round(x, 4)),
  medianRatio: round(medianRatio, 4),
  costPct: round(costPct, 2),
  limitPct: LIMIT_PCT,
  verdict: costPct <= LIMIT_PCT ? 'ok' : 'over',
  verdictLine: verdict,
  meaningful: fewRenewals === 0,
  failed,
  undelivered: pending,
  seconds: round((performance.now() - started) / 1000, 1),
  runs: runs.map((r) => ({ ...r, seconds: round(r.seconds, 3), eventsPerSecond: round(r.eventsPerSecond, 0) })),
};

if (parsed.json) {
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  const fmt = (n: number) => Math.round(n).toLocaleString('en');
  const lines = [
    `Handoff with renewing tokens: ${EVENTS.toLocaleString('en')} events per drain, ${ROUNDS} rounds, token TTL ${TTL_S} s, Flow reply ${summary.config.flowReply}, concurrency ${summary.config.concurrency}, batch ${summary.config.batchSize}, SQLite in memory`,
    '',
    '| round | A static events/s | B client-credentials events/s | B/A | B token requests | B renewals | B 401s |',
    '|---|---|---|---|---|---|---|',
    ...Array.from({ length: ROUNDS }, (_, i) => {
      const ra = a.find((r) => r.round === i + 1)!;
      const rb = bRuns.find((r) => r.round === i + 1)!;
      return `| ${i + 1} (${i % 2 === 0 ? 'A,B' : 'B,A'}) | ${fmt(ra.eventsPerSecond)} | ${fmt(rb.eventsPerSecond)} | ${ratios[i]!.toFixed(3)} | ${rb.tokenRequests} | ${rb.renewals} | ${rb.unauthorized} |`;
    }),
    `| **median** | **${fmt(median(a.map((r) => r.eventsPerSecond)))}** | **${fmt(median(bRuns.map((r) => r.eventsPerSecond)))}** | **${medianRatio.toFixed(3)}** | | | |`,
    '',
    verdict,
  ];
  if (fewRenewals)
    lines.push(
      `note: ${fewRenewals} of ${bRuns.length} B drains held fewer than ${MIN_RENEWALS} renewals: raise --events or lower --ttl for a ratio that says something about renewal.`,
    );
  if (broken) lines.push(`NOT CLEAN: ${failed} events failed, ${pending} undelivered, ${unauthorized} flowTriggerReceive calls answered 401 in B.`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
log(`done in ${summary.seconds} s`);
process.exit(broken ? 1 : 0);
