/**
 * Issue 35's measure of GET /auth/install under a flood (findings 3 and 6): one `serve` of this checkout (or `--bin`,
 * a compiled hookrelay) on a fresh SQLite box, loopback only. First a quiet run: signed receipts posted at a steady
 * pace (open loop, one every `--pace-ms`) for `--quiet-seconds`; then the same pace while `--requests` GET
 * /auth/install come from one address (127.0.0.1) with `--concurrency` in flight. Prints one JSON document: the
 * flood's answers, rows in oauth_states and stores afterwards, serve's CPU seconds and log lines during the flood,
 * and the receipts' p50/p99 in each run with their ratio. With `--forged N`, N forged requests (a wrong HMAC) then go
 * to each route Shopify signs (webhooks, the install callback, Flow's action runs and lifecycle callbacks), with their
 * answers and log lines. `--rate N` paces the install flood at N requests a second (default: as fast as it goes).
 * `--baseline` floods GET /no-such-route instead of installs: the floor, what answering any
 * request at that rate costs on this machine. Bounded: at most 50,000 requests a flood, each at most 120 s.
 *
 *   bun scripts/torture/install-flood.ts [--requests 20000] [--concurrency 32] [--quiet-seconds 10] [--pace-ms 10] [--rate N] [--forged N] [--baseline] [--bin PATH] [--keep]
 */
import { Database } from 'bun:sqlite';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuSeconds, createHookEndpoint, flood, freePort, HOOK_BODY, hookHeaders, ROOT, round } from '../bench/_lib.ts';

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

const { values: a } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '32' },
    'quiet-seconds': { type: 'string', default: '10' },
    'pace-ms': { type: 'string', default: '10' },
    forged: { type: 'string', default: '0' },
    baseline: { type: 'boolean', default: false },
    'flood-child': { type: 'string' },
    rate: { type: 'string', default: '0' },
    bin: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const requests = Math.min(50_000, Math.max(1, Number(a.requests)));
const concurrency = Math.min(256, Math.max(1, Number(a.concurrency)));
const quietMs = Math.min(120, Math.max(1, Number(a['quiet-seconds']))) * 1000;
const paceMs = Math.max(1, Number(a['pace-ms']));
const forgedCount = Math.min(50_000, Math.max(0, Number(a.forged)));
/** The install flood's requests a second; 0: as fast as `concurrency` connections go. */
const rate = Math.max(0, Number(a.rate));
const RUN_CAP_MS = 120_000;
const say = (m: string) => process.stderr.write(`[install-flood] ${m}\n`);

const hookrelay = a.bin ? [a.bin] : ['bun', '--smol', join(ROOT, 'commands/index.ts')];
const env: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HOOKRELAY_')) env[k] = v;
Object.assign(env, { NO_COLOR: '1', HOOKRELAY_SHOPIFY_APP_SECRET: 'install-flood-app-secret', HOOKRELAY_SHOPIFY_CLIENT_ID: 'install-flood-client' });

function cli(args: string[]): any {
  const r = Bun.spawnSync([...hookrelay, ...args, '--data-dir', dataDir], { cwd: dir, env, stdout: 'pipe', stderr: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`hookrelay ${args[0]} exited ${r.exitCode}: ${r.stderr.toString().slice(0, 400)}`);
  return JSON.parse(r.stdout.toString());
}

const logLines = () => {
  try {
    return readFileSync(logPath, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

/** Signed receipts posted every `paceMs` until `stop` resolves (open loop: a slow answer does not delay the next). */
interface Paced {
  /** Each receipt's latency, with when it was sent (Date.now). */
  samples: { at: number; ms: number }[];
  statuses: Record<string, number>;
}

async function paced(url: string, secret: string, stop: Promise<void>): Promise<Paced> {
  const samples: Paced['samples'] = [];
  const statuses: Record<string, number> = {};
  const inFlight = new Set<Promise<void>>();
  const headers = hookHeaders(secret);
  let done = false;
  void stop.then(() => (done = true));
  let next = performance.now();
  while (!done) {
    const t0 = performance.now();
    const at = Date.now();
    const p = fetch(url, { method: 'POST', headers, body: HOOK_BODY })
      .then(async (res) => {
        await res.arrayBuffer();
        samples.push({ at, ms: performance.now() - t0 });
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      })
      .catch(() => void (statuses.network = (statuses.network ?? 0) + 1))
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
    next += paceMs;
    await Bun.sleep(Math.max(0, next - performance.now()));
  }
  await Promise.all(inFlight);
  return { samples, statuses };
}

/** A forged request to each route Shopify signs: a wrong HMAC, as anyone can send. */
const FORGED: Record<string, (base: string, i: number) => Promise<Response>> = {
  '/shopify/webhooks': (base, i) =>
    fetch(`${base}/shopify/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-shopify-hmac-sha256': 'Zm9yZ2VkIGhtYWMgdmFsdWUgZm9yIHRoZSB0b3J0dXJl',
        'x-shopify-topic': 'shop/redact',
        'x-shopify-shop-domain': 'install-flood.myshopify.com',
        'x-shopify-webhook-id': `forged-${i}`,
      },
      body: '{"shop_domain":"install-flood.myshopify.com"}',
    }),
  '/auth/callback': (base, i) => fetch(`${base}/auth/callback?code=c${i}&shop=install-flood.myshopify.com&state=s&timestamp=1&hmac=${'0'.repeat(64)}`),
  '/flow/actions/confirm': (base, i) =>
    fetch(`${base}/flow/actions/confirm`, { method: 'POST', headers: { 'x-shopify-hmac-sha256': 'AAAA' }, body: `{"action_run_id":"${i}"}` }),
  '/flow/lifecycle': (base) => fetch(`${base}/flow/lifecycle`, { method: 'POST', headers: { 'x-shopify-hmac-sha256': 'AAAA' }, body: '{}' }),
};

/** Percentiles of the receipts sent within [from, to] (all by default). */
const summary = (r: Paced, from = 0, to = Number.POSITIVE_INFINITY) => {
  const s = r.samples
    .filter((x) => x.at >= from && x.at <= to)
    .map((x) => x.ms)
    .sort((x, y) => x - y);
  return { receipts: s.length, statuses: r.statuses, p50Ms: round(percentile(s, 50), 2), p99Ms: round(percentile(s, 99), 2), maxMs: round(s.at(-1), 2) };
};

/** What the flood asks for: an install of one of 500 shops, or with --baseline a route that does nothing. */
const target = (base: string, i: number) => (a.baseline ? `${base}/no-such-route/${i % 500}` : `${base}/auth/install?shop=flood-${i % 500}.myshopify.com`);

// The flood runs in a process of its own (`--flood-child BASE`), so its fetches never delay the receipts' timing here.
if (a['flood-child']) {
  const base = a['flood-child'];
  const from = Date.now();
  const result = await flood(requests, concurrency, (i) => fetch(target(base, i), { redirect: 'manual' }), { perSecond: rate, capMs: RUN_CAP_MS });
  process.stdout.write(JSON.stringify({ ...result, from, to: Date.now() }));
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'hookrelay-install-flood-'));
const dataDir = join(dir, 'data');
const logPath = join(dir, 'serve.log');
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
let serve: ReturnType<typeof Bun.spawn> | null = null;
try {
  cli(['init', '--shop', 'install-flood.myshopify.com', '--plan', 'scale']);
  const token = cli(['grant', 'issue', '--shop', 'install-flood.myshopify.com', '--tier', 'admin_assistant', '--ttl', '1h', '--label', 'install-flood'])
    .token as string;
  serve = Bun.spawn([...hookrelay, 'serve', '--port', String(port), '--data-dir', dataDir], {
    cwd: dir,
    env,
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: Bun.file(logPath),
  });
  const ready = Date.now() + 20_000;
  while (
    !(await fetch(`${base}/status`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > ready || serve.exitCode !== null) throw new Error(`serve did not start: ${logLines().slice(-5).join(' | ')}`);
    await Bun.sleep(50);
  }
  const hook = await createHookEndpoint(base, token, 'install flood receipts');

  say(`quiet run: a signed receipt every ${paceMs} ms for ${quietMs / 1000} s`);
  const quietCpuBefore = cpuSeconds(serve.pid);
  const quiet = summary(await paced(hook.url, hook.secret, Bun.sleep(quietMs)));
  const quietCpu = quietCpuBefore !== null ? (cpuSeconds(serve.pid) ?? Number.NaN) - quietCpuBefore : null;

  say(`flood: ${requests} GET ${a.baseline ? '/no-such-route' : '/auth/install'} from 127.0.0.1, ${concurrency} in flight, receipts at the same pace`);
  const linesBefore = logLines().length;
  const cpuBefore = cpuSeconds(serve.pid);
  const child = Bun.spawn(
    [
      'bun',
      import.meta.path,
      '--flood-child',
      base,
      '--requests',
      String(requests),
      '--concurrency',
      String(concurrency),
      '--rate',
      String(rate),
      ...(a.baseline ? ['--baseline'] : []),
    ],
    { stdin: 'ignore', stdout: 'pipe', stderr: 'inherit' },
  );
  const flooding = new Response(child.stdout).text();
  const receipts = await paced(
    hook.url,
    hook.secret,
    child.exited.then(() => {}),
  );
  // The receipts sent while the flood ran (the child's start-up aside); statuses are of all of them.
  const { sent, answers, from, to } = JSON.parse(await flooding) as { sent: number; answers: Record<string, number>; from: number; to: number };
  const during = summary(receipts, from, to);
  const floodSeconds = (to - from) / 1000;
  const cpuAfter = cpuSeconds(serve.pid);
  await Bun.sleep(1500); // the log's buffered lines reach the file
  const floodLines = logLines().slice(linesBefore);

  const forged: Record<string, { answers: Record<string, number>; logLines: number }> = {};
  for (const [path, send] of Object.entries(FORGED)) {
    if (!forgedCount) break;
    say(`forged: ${forgedCount} to ${path} from 127.0.0.1`);
    const before = logLines().length;
    const { answers } = await flood(forgedCount, concurrency, (i) => send(base, i), { capMs: RUN_CAP_MS });
    await Bun.sleep(1500);
    forged[path] = { answers, logLines: logLines().length - before };
  }

  serve.kill('SIGTERM');
  await serve.exited;
  serve = null;
  const db = new Database(join(dataDir, 'hookrelay.db'), { readonly: true });
  const rows = (table: string) => db.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${table}`).get()!.n;
  // stores: the one `init` made.
  const kept = { oauthStates: rows('oauth_states'), stores: rows('stores'), shopifyWebhooks: rows('shopify_webhooks') };
  db.close();

  const result = {
    command: `bun scripts/torture/install-flood.ts --requests ${requests} --concurrency ${concurrency} --quiet-seconds ${quietMs / 1000} --pace-ms ${paceMs}${forgedCount ? ` --forged ${forgedCount}` : ''}${a.baseline ? ' --baseline' : ''}${rate ? ` --rate ${rate}` : ''}${a.bin ? ` --bin ${a.bin}` : ''}`,
    flood: {
      sent,
      answers,
      seconds: round(floodSeconds, 1),
      serveCpuSeconds: cpuBefore !== null && cpuAfter !== null ? round(cpuAfter - cpuBefore, 2) : null,
      // serve's CPU a second with the receipts alone (the quiet run), and during the flood with them.
      serveCpuPerSecondQuiet: quietCpu !== null ? round(quietCpu / (quietMs / 1000), 3) : null,
      serveCpuPerSecondFlood: cpuBefore !== null && cpuAfter !== null ? round((cpuAfter - cpuBefore) / floodSeconds, 3) : null,
      logLines: floodLines.length,
      installLogLines: floodLines.filter((l) => l.includes('/auth/install') || l.includes('app install')).length,
    },
    rowsKept: kept,
    ...(forgedCount ? { forged } : {}),
    receipts: { quiet, during, p99Ratio: quiet.p99Ms && during.p99Ms ? round(during.p99Ms / quiet.p99Ms, 2) : null },
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  if (serve) {
    serve.kill('SIGKILL');
    await serve.exited;
  }
  if (a.keep) say(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
