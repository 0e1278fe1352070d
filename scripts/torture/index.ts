/**
 * `bun run torture`: the reliability suite against the compiled binary (crash, fuzz, auth flood, sandbox abuse),
 * loopback only, bounded in count and time. Prints one table (or `--json`); exits 1 when any figure that must be
 * zero is not. See docs/reliability.md.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../bench/_lib.ts';
import { killAllServers, log } from './_box.ts';
import { seeded } from './_rand.ts';
import { crashPart, type CrashFigures } from './crash.ts';
import { databasePart, type DatabaseFigures } from './database.ts';
import { floodPart, type FloodFigures } from './flood.ts';
import { fuzzPart, type FuzzFigures } from './fuzz.ts';
import { sandboxPart, type SandboxFigures } from './sandbox.ts';
import { shopifyPart, type ShopifyFigures } from './shopify.ts';
import { uploadsPart, type UploadsFigures } from './uploads.ts';

const PARTS = ['crash', 'fuzz', 'flood', 'sandbox', 'uploads', 'database', 'shopify'] as const;
type Part = (typeof PARTS)[number];

const { values: a } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seed: { type: 'string', default: '13' },
    json: { type: 'boolean', default: false },
    bin: { type: 'string' },
    only: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (a.help) {
  process.stdout.write(`usage: bun run torture [--quick] [--seed N] [--json] [--only crash,fuzz,flood,sandbox,uploads,database,shopify] [--bin PATH] [--keep]
  --quick   the CI size: 3 kill -9 + 1 SIGTERM, 300 fuzz cases, 500 flood requests, the sandbox set once, 500 stalled uploads once,
            PostgreSQL frozen 8 s, then stopped, killed and restarted once each under load, 300 requests per unauthenticated
            Shopify path and every signed Shopify body replayed 15 ways
            default: 20 kill -9 + 5 SIGTERM, 2000 fuzz cases, 10,000 flood requests, the sandbox set 3 times, 1,000 stalled uploads twice,
            PostgreSQL frozen 20 s, then stopped, killed and restarted 3 times each, 2,000 per unauthenticated Shopify path
  --seed    fuzz cases, kill moments and flood values derive from it (default 13)
  --bin     test this binary instead of building dist/hookrelay first
  --keep    keep the temporary data dirs and server logs (their paths are logged)
Exit 1 when lost, unexplained repeats, 5xx, undocumented shapes, server deaths, changes made by replayed Shopify bodies or rows
written by unauthenticated requests are not 0.\n`);
  process.exit(0);
}

/** Sizes: --quick is what CI runs (a few minutes on 2 cores, the uploads and database parts included); the default is bounded to about 10. */
const SIZE = a.quick
  ? {
      kills: 3,
      terms: 1,
      senders: 6,
      fuzzCases: 300,
      floodEach: 250,
      sandboxRounds: 1,
      uploads: 500,
      uploadRounds: 1,
      dbFreezeMs: 8_000,
      dbStopRounds: 1,
      shopifyFloodEach: 300,
      watchdogMs: 7 * 60_000,
    }
  : {
      kills: 20,
      terms: 5,
      senders: 8,
      fuzzCases: 2000,
      floodEach: 5000,
      sandboxRounds: 3,
      uploads: 1000,
      uploadRounds: 2,
      dbFreezeMs: 20_000,
      dbStopRounds: 3,
      shopifyFloodEach: 2000,
      watchdogMs: 16 * 60_000,
    };

const seed = Number(a.seed);
if (!Number.isInteger(seed)) throw new Error('--seed must be an integer');
const only = new Set<Part>(a.only ? (a.only.split(',').map((s) => s.trim()) as Part[]) : PARTS);
for (const p of only) if (!PARTS.includes(p)) throw new Error(`--only: unknown part ${p} (${PARTS.join(', ')})`);

// The suite stops by itself: past the watchdog every server is killed and the run fails.
const watchdog = setTimeout(() => {
  log(`watchdog: still running after ${SIZE.watchdogMs / 60_000} min; stopping every server`);
  killAllServers();
  process.exit(2);
}, SIZE.watchdogMs);
process.once('SIGINT', () => {
  killAllServers();
  process.exit(130);
});

function git(...args: string[]): string {
  const r = Bun.spawnSync(['git', ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'ignore' });
  return r.exitCode === 0 ? r.stdout.toString().trim() : '';
}

async function binary(): Promise<string> {
  if (a.bin) {
    if (!existsSync(a.bin)) throw new Error(`--bin ${a.bin}: no such file`);
    return a.bin;
  }
  const out = join(ROOT, 'dist', 'hookrelay');
  log('building dist/hookrelay');
  const proc = Bun.spawn(['bun', 'scripts/build.ts', out], { cwd: ROOT, stdout: 'ignore', stderr: 'pipe' });
  if ((await proc.exited) !== 0) throw new Error(`build failed: ${await new Response(proc.stderr).text()}`);
  return out;
}

interface Results {
  crash?: CrashFigures | { error: string };
  fuzz?: FuzzFigures | { error: string };
  flood?: FloodFigures | { error: string };
  sandbox?: SandboxFigures | { error: string };
  uploads?: UploadsFigures | { error: string };
  database?: DatabaseFigures | { error: string };
  shopify?: ShopifyFigures | { error: string };
}

const started = Date.now();
const bin = await binary();
const rand = (part: Part) => seeded(seed * 31 + PARTS.indexOf(part));
const results: Results = {};
const seconds: Partial<Record<Part, number>> = {};
const attempt = async <T>(part: Part, run: () => Promise<T>): Promise<T | { error: string }> => {
  log(`${part}: starting`);
  const t0 = Date.now();
  try {
    return await run();
  } catch (err) {
    log(`${part}: failed: ${err instanceof Error ? err.stack : String(err)}`);
    return { error: err instanceof Error ? err.message : String(err) };
  } finally {
    seconds[part] = Math.round((Date.now() - t0) / 1000);
  }
};
if (only.has('crash'))
  results.crash = await attempt('crash', () =>
    crashPart({ bin, rand: rand('crash'), kills: SIZE.kills, terms: SIZE.terms, senders: SIZE.senders, keep: a.keep }),
  );
if (only.has('fuzz')) results.fuzz = await attempt('fuzz', () => fuzzPart({ bin, rand: rand('fuzz'), cases: SIZE.fuzzCases, concurrency: 4, keep: a.keep }));
if (only.has('flood'))
  results.flood = await attempt('flood', () => floodPart({ bin, rand: rand('flood'), requests: SIZE.floodEach, concurrency: 8, keep: a.keep }));
if (only.has('sandbox')) results.sandbox = await attempt('sandbox', () => sandboxPart({ bin, rounds: SIZE.sandboxRounds, keep: a.keep }));
if (only.has('uploads')) results.uploads = await attempt('uploads', () => uploadsPart({ bin, uploads: SIZE.uploads, rounds: SIZE.uploadRounds, keep: a.keep }));
if (only.has('database')) {
  results.database = await attempt('database', () =>
    databasePart({ bin, rand: rand('database'), freezeMs: SIZE.dbFreezeMs, stopRounds: SIZE.dbStopRounds, senders: 4, keep: a.keep }),
  );
}
if (only.has('shopify'))
  results.shopify = await attempt('shopify', () => shopifyPart({ bin, rand: rand('shopify'), floodEach: SIZE.shopifyFloodEach, concurrency: 8, keep: a.keep }));
clearTimeout(watchdog);

type Row = [part: string, figure: string, value: string | number, verdict: '' | 'ok' | 'FAIL'];
const rows: Row[] = [];
const failures: string[] = [];
/** A figure that must be zero: ok, or FAIL (and a failure). */
const mustBeZero = (part: string, figure: string, n: number, shown: string | number = n) => {
  rows.push([part, figure, shown, n === 0 ? 'ok' : 'FAIL']);
  if (n !== 0) failures.push(`${part}: ${figure.trim()} = ${n}`);
};
const info = (part: string, figure: string, value: string | number) => rows.push([part, figure, value, '']);
const errored = (part: string, r: object | undefined): r is { error: string } => {
  if (r && 'error' in r) {
    rows.push([part, 'the part could not run', (r as { error: string }).error.slice(0, 60), 'FAIL']);
    failures.push(`${part}: could not run`);
    return true;
  }
  return false;
};
const statusList = (s: Record<string, number>) =>
  Object.entries(s)
    .map(([k, v]) => `${k}×${v}`)
    .join(' ');

const c = results.crash;
if (c && !errored('crash', c)) {
  info('crash', 'kill -9 / SIGTERM rounds (restart after each)', `${c.kills} / ${c.terms}`);
  info('crash', 'acknowledged (202 with an eventId)', c.acknowledged);
  info('crash', 'found afterwards (database)', c.found);
  mustBeZero('crash', 'lost (acknowledged, not found)', c.lost);
  info('crash', 'stored but never acknowledged', c.storedUnacknowledged);
  info('crash', 'handoffs repeated (event delivered twice+)', c.repeats);
  info('crash', '  of which twice within one server run', c.repeatsWithinOneRun);
  info('crash', '  of which first sent by a server stopped by SIGTERM', c.repeatsAcrossSigterm);
  mustBeZero('crash', 'repeats without an `unknown` attempt', c.repeatsUnexplained);
  info('crash', 'most repeats from one killed run', c.repeatsPerKillMax);
  mustBeZero('crash', `kill rounds repeating more than the ${c.inFlightBound} sends in flight`, c.killRoundsOverBound);
  mustBeZero('crash', 'delivered without any handoff', c.deliveredWithoutHandoff);
  info('crash', 'still pending after the drain wait', c.pendingAtEnd);
  info('crash', 'SIGTERM rounds not exiting 0 in time', c.termsUnclean);
  info('crash', 'sender answers', statusList(c.answers));
  info('crash', 'ERROR lines in the server logs', c.serverErrorLines);
}
const f = results.fuzz;
if (f && !errored('fuzz', f)) {
  info('fuzz', 'cases (operations in the OpenAPI)', `${f.cases} (${f.operations})`);
  info('fuzz', 'answers', statusList(f.statuses));
  mustBeZero('fuzz', '5xx (answered / in the server log)', f.serverErrors, `${f.answered5xx} / ${f.logged5xx}`);
  mustBeZero('fuzz', 'undocumented shapes', f.undocumented);
  mustBeZero('fuzz', 'server deaths', f.survived ? 0 : 1);
  info('fuzz', "answered by Bun's parser (malformed HTTP, headers > 16 KiB)", f.parserLevel.length);
  info('fuzz', 'two auth header values, accepted (of 4)', f.duplicateAuthAccepted);
}
const fl = results.flood;
if (fl && !errored('flood', fl)) {
  info('flood', 'bad bearer tokens: sent / 429', `${fl.badTokens.sent} / ${fl.badTokens.rateLimited}`);
  info('flood', 'bad signatures: sent / 429', `${fl.badSignatures.sent} / ${fl.badSignatures.rateLimited}`);
  info('flood', '429 without Retry-After', fl.badTokens.retryAfterMissing + fl.badSignatures.retryAfterMissing);
  info('flood', 'database + WAL growth', `${((fl.after.bytes - fl.before.bytes) / 1024).toFixed(0)} KiB`);
  info('flood', 'audit_log rows added', fl.after.auditRows - fl.before.auditRows);
  info('flood', 'auth_failures rows added', fl.after.authFailureRows - fl.before.authFailureRows);
  info('flood', 'valid grant / signed event right after', `${fl.goodGrantAfter} / ${fl.goodHookAfter}`);
  mustBeZero('flood', '5xx', fl.serverErrors);
}
const s = results.sandbox;
if (s && !errored('sandbox', s)) {
  info('sandbox', 'execute runs (the abuse set)', s.runs);
  mustBeZero('sandbox', 'server deaths', s.deaths);
  info('sandbox', 'restarts needed', s.restarts);
  for (const r of s.results) info('sandbox', `  ${r.name}`, r.died ? `DIED (${r.exit})` : r.answer);
}

const u = results.uploads;
if (u && !errored('uploads', u)) {
  const sum = (k: 'unexpected' | 'undocumented' | 'retryAfterMissing' | 'leftOpen') => u.rounds.reduce((t, r) => t + r[k], 0);
  const answers: Record<string, number> = {};
  for (const r of u.rounds) for (const [k, v] of Object.entries(r.answers)) answers[k] = (answers[k] ?? 0) + v;
  info('uploads', 'stalled chunked uploads (rounds × at once)', `${u.rounds.length} × ${u.rounds[0]?.opened}`);
  info('uploads', 'answers (408 at the body deadline, 503 past the bound)', statusList(answers));
  mustBeZero('uploads', 'answered otherwise, or not at all', sum('unexpected'));
  mustBeZero('uploads', 'undocumented shapes', sum('undocumented'));
  mustBeZero('uploads', '503 without Retry-After', sum('retryAfterMissing'));
  mustBeZero('uploads', 'not closed by the server within 10 s of the answer', sum('leftOpen'));
  info('uploads', 'last answer after the uploads stalled', `${(Math.max(...u.rounds.map((r) => r.lastAnswerMs)) / 1000).toFixed(1)} s`);
  info('uploads', 'serve RSS before / peak / after, per round (MiB)', u.rounds.map((r) => `${r.rssBeforeMiB} / ${r.rssPeakMiB} / ${r.rssAfterMiB}`).join(', '));
  mustBeZero('uploads', `RSS peak growth over +${u.bounds.peak} MiB`, u.peakGrowthMiB > u.bounds.peak ? 1 : 0, `+${u.peakGrowthMiB} MiB`);
  mustBeZero('uploads', `RSS growth after they closed over +${u.bounds.after} MiB`, u.afterGrowthMiB > u.bounds.after ? 1 : 0, `+${u.afterGrowthMiB} MiB`);
  const slow = u.rounds.filter((r) => r.goodReceipt.status !== 202).length;
  mustBeZero('uploads', 'signed events during the stall not 202', slow, u.rounds.map((r) => `${r.goodReceipt.status} in ${r.goodReceipt.ms} ms`).join(', '));
  mustBeZero(
    'uploads',
    'signed chunked events from another address during the stall not 202',
    u.rounds.filter((r) => r.chunkedReceipt.status !== 202).length,
    u.rounds.map((r) => `${r.chunkedReceipt.status ?? 'none'} in ${r.chunkedReceipt.ms} ms`).join(', '),
  );
  mustBeZero('uploads', `Connection: close / HTTP/1.0 not answered and closed (of ${u.closes.length})`, u.closesFailed);
  info('uploads', '  closed after the answer (ms)', u.closes.map((c) => c.closedAfterMs ?? 'open').join(' '));
  info('uploads', 'HTTP/1.0 with a Host header left open (Bun hides the version)', u.http10WithHost.filter((c) => c.closedAfterMs === null).length);
  mustBeZero('uploads', 'server deaths', u.survived ? 0 : 1);
  info('uploads', 'ERROR lines in the server log', u.serverErrorLines);
}
const d = results.database;
if (d && !errored('database', d)) {
  if (d.skipped) info('database', 'skipped: no PostgreSQL to freeze and stop here', d.skipped);
  else {
    info('database', `PostgreSQL ${d.postgres}: down / degraded after / 202 again / operational again (ms)`, '');
    for (const r of d.rounds) {
      info(
        'database',
        `  ${r.fault} (receipts in flight: ${statusList(r.answers)})`,
        `${r.downMs} / ${r.degradedAfterMs ?? '-'} / ${r.accepting202AfterMs ?? '-'} / ${r.operationalAfterMs ?? '-'}`,
      );
    }
    info('database', 'receipt / API / /status answers', `${statusList(d.hooks)} / ${statusList(d.api)} / ${statusList(d.status)}`);
    mustBeZero('database', 'answers but 202 or 503 (API 200, 429, 503; /status 200, 503)', d.unexpected);
    mustBeZero('database', '5xx but 503 (answered / in the request log)', d.serverErrors);
    mustBeZero('database', 'requests without an answer within 20 s', d.unanswered);
    info('database', 'slowest receipt / /status answer (ms)', `${d.slowestHookMs} / ${d.slowestStatusMs}`);
    info('database', 'acknowledged (202)', d.acknowledged);
    mustBeZero('database', 'lost (202, not stored)', d.lost);
    info('database', '503 saying nothing was recorded / may have been (stored)', `${d.refused} / ${d.refusedMaybe} (${d.refusedMaybeStored})`);
    mustBeZero('database', '503 saying nothing was recorded, yet stored', d.refusedButStored);
    info('database', 'stored after a connection cut before its answer', d.storedAfterCutConnection);
    mustBeZero('database', 'external ids stored twice, not as a duplicate', d.secondEvents);
    info('database', 'retries answered duplicate_suppressed', d.retriesDeduplicated);
    mustBeZero('database', '/status slower than 5 s', d.statusSlow);
    mustBeZero('database', '/status operational while the database was away', d.statusDishonest);
    mustBeZero('database', 'faults /status never called degraded', d.statusSilent);
    mustBeZero('database', 'faults not recovered within 30 s (serve not restarted)', d.notRecovered);
    mustBeZero('database', 'server deaths', d.serverDeaths);
    mustBeZero('database', 'log lines outside the one-line format (stack traces)', d.stackTraceLines);
    mustBeZero('database', '"unhandled error" lines', d.unhandledErrors);
    info('database', 'ERROR lines in the server log', d.errorLines);
  }
}
const sh = results.shopify;
if (sh && !errored('shopify', sh)) {
  info('shopify', 'lifecycle deliveries by the fake (topic: statuses)', sh.lifecycle.length);
  for (const l of sh.lifecycle) info('shopify', `  ${l}`, '');
  mustBeZero('shopify', 'lifecycle deliveries not answered 2xx', sh.lifecycleRefused);
  mustBeZero('shopify', 'lifecycle steps without their effect (replays would prove nothing)', sh.lifecycleMissing.length);
  for (const m of sh.lifecycleMissing) info('shopify', `  missing: ${m}`, '');
  info('shopify', 'replays of signed bodies: sent / taken (200 received)', `${sh.replays.sent} / ${sh.replays.taken}`);
  info('shopify', 'replay answers', statusList(sh.replays.statuses));
  mustBeZero('shopify', 'plan changes caused by replays (finding 1: billing replay)', sh.planChanges.length);
  mustBeZero('shopify', 'erasures caused by replays (finding 2: topic confusion)', sh.erasures.length);
  mustBeZero('shopify', 'uninstalls caused by replays', sh.uninstalls.length);
  mustBeZero('shopify', 'records written by replays (finding 2: topic confusion; data requests under new ids)', sh.recordsCreated.length);
  for (const fp of sh.floods) {
    const added = Object.values(fp.rowsAdded).reduce((t, n) => t + n, 0);
    const tables = (r: Record<string, number>) =>
      Object.entries(r)
        .map(([k, v]) => `${k}+${v}`)
        .join(' ') || '0';
    info('shopify', `${fp.path}: answers`, statusList(fp.statuses));
    mustBeZero('shopify', `  rows written by its ${fp.sent} requests (${fp.finding})`, added, tables(fp.rowsAdded));
    info('shopify', '  rows kept by the limiter (excluded above)', tables(fp.rowsExcluded));
    info('shopify', '  serve log lines written', fp.logLines);
  }
  mustBeZero('shopify', '5xx (floods and replays)', sh.serverErrors);
}

const meta = {
  mode: a.quick ? 'quick' : 'full',
  seed,
  commit: `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? '+dirty' : ''}`,
  date: new Date().toISOString(),
  durationS: Math.round((Date.now() - started) / 1000),
  partSeconds: seconds,
  bin,
};
if (a.json) {
  process.stdout.write(`${JSON.stringify({ meta, ...results, failures, ok: failures.length === 0 }, null, 2)}\n`);
} else {
  // Numbers line up on the right; a long value (a list of statuses) runs on past the column.
  const w = [8, Math.max(...rows.map((r) => r[1].length)), 14];
  const line = (r: (string | number)[]) =>
    `${String(r[0]).padEnd(w[0]!)}  ${String(r[1]).padEnd(w[1]!)}  ${String(r[3]).padEnd(4)}  ${String(r[2]).padStart(w[2]!)}`.trimEnd();
  const out = [
    `hookrelay torture: ${meta.mode}, seed ${seed}, commit ${meta.commit}, ${meta.date}, ${meta.durationS} s (${Object.entries(seconds)
      .map(([p, n]) => `${p} ${n} s`)
      .join(', ')})`,
    '',
    line(['part', 'figure', 'value', 'check']),
    ...rows.map(line),
  ];
  if (f && !('error' in f) && f.offenders.length) out.push('', 'first undocumented answers (fuzz):', ...f.offenders.map((o) => `  ${o}`));
  if (c && !('error' in c) && c.lostIds.length) out.push('', `lost event ids (first): ${c.lostIds.join(', ')}`);
  if (sh && !('error' in sh)) {
    const effects = [
      ...sh.planChanges.map((e) => `  plan changed (finding 1, billing replay): ${e.replay}: ${e.change}`),
      ...sh.erasures.map((e) => `  erased (finding 2, topic confusion): ${e.replay}: ${e.change}`),
      ...sh.uninstalls.map((e) => `  uninstalled: ${e.replay}: ${e.change}`),
      ...sh.recordsCreated.map((e) => `  records written: ${e.replay}: ${e.change}`),
    ];
    if (effects.length) out.push('', 'what replayed Shopify bodies changed (shopify):', ...effects);
  }
  out.push('', failures.length ? `FAIL: ${failures.join('; ')}` : 'ok: nothing lost, no unexplained repeat, no 5xx, no undocumented shape, no server death');
  process.stdout.write(`${out.join('\n')}\n`);
}
process.exit(failures.length ? 1 : 0);
