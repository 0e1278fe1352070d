/**
 * `bun scripts/bench/code-mode.ts --b <checkout> [--a <checkout>] [--c <checkout>] [--calls 20] [--op getSetupState]
 * [--rounds 15] [--runs 4] [--sync FULL] [--cold] [--gap 0]`: what one `api.call` of MCP code mode costs, in two or three trees side by
 * side. Each tree's relay server (scripts/bench/server.ts, rate limits out of reach) runs on core 0 with its sandbox
 * processes; this driver, on core 1, opens an MCP session on each and sends `execute` runs of `--calls` calls of
 * `--op`, and runs that make no call, taking the trees in turn every `--runs` runs for `--rounds` rounds so that all
 * see the same host. A call's cost is what a run of calls costs beyond a run of none, divided by the calls: the
 * server process's CPU (the host's side of a call), its sandbox processes' CPU (those that ended and those still
 * running; where a process serves one run, a run of none carries a whole process: its start, QuickJS's load and any
 * warm-up), and the run's time on the clock (median). All runs of a tree are one grant's, so where a sandbox process
 * serves a grant's next run this is its warm path; `--cold` makes every run its grant's first (a grant issued per run
 * with the tree's own `hookrelay grant issue` before the rounds, and an MCP session opened for it before the run).
 * A checkout is any directory holding this repository (`git worktree add /tmp/before <commit>`, with node_modules
 * linked); A defaults to this one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuSeconds, log, median, PINNED, ROOT, round, spawnReady, stop, type Child } from './_lib.ts';

const { values: a } = parseArgs({
  options: {
    a: { type: 'string', default: ROOT },
    b: { type: 'string' },
    c: { type: 'string' },
    calls: { type: 'string', default: '20' },
    op: { type: 'string', default: 'getSetupState' },
    rounds: { type: 'string', default: '15' },
    gap: { type: 'string', default: '0' },
    runs: { type: 'string', default: '4' },
    /** SQLite's synchronous setting for both servers: FULL as serve runs, NORMAL to leave the fsyncs out. */
    sync: { type: 'string', default: 'FULL' },
    cold: { type: 'boolean', default: false },
  },
});
if (!a.b) {
  process.stderr.write(
    'usage: bun scripts/bench/code-mode.ts --b <checkout> [--a <checkout>] [--c <checkout>] [--calls 20] [--op getSetupState] [--rounds 15] [--runs 4] [--sync FULL] [--cold] [--gap 0]\n',
  );
  process.exit(2);
}
const CALLS = Number(a.calls);
const ROUNDS = Number(a.rounds);
const RUNS = Number(a.runs);
/** `--gap`: ms of quiet before each run (not timed), so a pool drained by back-to-back first runs can refill. */
const GAP_MS = Number(a.gap);

interface Side {
  label: string;
  server: Child;
  dir: string;
  mcp: string;
  headers: Record<string, string>;
  id: number;
  /** `--cold`: a grant's token for each run still to come. */
  tokens: string[];
}

const JSON_RPC = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function rpc(side: Side, body: Record<string, unknown>): Promise<Response> {
  const res = await fetch(side.mcp, { method: 'POST', headers: side.headers, body: JSON.stringify({ jsonrpc: '2.0', ...body }) });
  if (res.status >= 300) throw new Error(`${side.label}: ${body.method} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return res;
}

async function start(label: string, checkout: string): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `hookrelay-code-mode-${label}-`));
  const cmd = ['bun', join(resolve(checkout), 'scripts/bench/server.ts'), 'relay', '--data-dir', dir, '--worker', '0', '--request-log', '0', '--sync', a.sync!];
  const server = await spawnReady(0, cmd, { stderrTo: join(dir, 'log') });
  const side: Side = { label, server, dir, mcp: `${server.ready.url}/agent/v1/mcp`, headers: {}, id: 0, tokens: [] };
  await session(side, server.ready.token);
  if (a.cold) for (let i = 0; i < ROUNDS * RUNS * 2; i++) side.tokens.push(issueGrant(checkout, dir));
  return side;
}

/** An MCP session as the grant of `token`, for the runs that follow. */
async function session(side: Side, token: string): Promise<void> {
  side.headers = { ...JSON_RPC, authorization: `Bearer ${token}` };
  const init = await rpc(side, {
    id: ++side.id,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  });
  side.headers['mcp-session-id'] = init.headers.get('mcp-session-id')!;
  side.headers['mcp-protocol-version'] = '2025-06-18';
  await rpc(side, { method: 'notifications/initialized' });
}

/** A new grant's token, issued by the tree's own CLI on the server's data dir (the bench server's store). */
function issueGrant(checkout: string, dir: string): string {
  const cli = [join(resolve(checkout), 'commands/index.ts'), 'grant', 'issue', '--shop', 'bench.myshopify.com', '--tier', 'admin_assistant'];
  const r = Bun.spawnSync(['bun', ...cli, '--ttl', '6h', '--label', 'bench cold', '--data-dir', dir], { stdout: 'pipe', stderr: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`grant issue failed: ${r.stderr.toString().slice(0, 300)}`);
  return (JSON.parse(r.stdout.toString()) as { token: string }).token;
}

/** One `execute` run; its time on the clock, ms. */
async function execute(side: Side, code: string, expected: number): Promise<number> {
  const started = performance.now();
  const res = await rpc(side, { id: ++side.id, method: 'tools/call', params: { name: 'execute', arguments: { code } } });
  const ms = performance.now() - started;
  const out = (await res.json()) as { result?: { isError?: boolean; structuredContent?: { result?: unknown; error?: unknown } } };
  const doc = out.result?.structuredContent;
  if (out.result?.isError || doc?.result !== expected) throw new Error(`${side.label}: the run failed: ${JSON.stringify(out).slice(0, 400)}`);
  return ms;
}

const WITH_CALLS = `for (let i = 0; i < ${CALLS}; i++) await api.call(${JSON.stringify(a.op)}); return ${CALLS};`;
const WITHOUT = 'return 0;';

interface Tally {
  cpu: number;
  sandboxCpu: number;
  ms: number[];
}
const tally = (): Tally => ({ cpu: 0, sandboxCpu: 0, ms: [] });
/** Time for the server to reap the last run's sandbox process, so that its CPU counts in its own batch. */
const REAPED_MS = 100;

/** `RUNS` runs of `code` on `side`, added to `t`. */
async function batch(side: Side, code: string, expected: number, t: Tally): Promise<void> {
  const before = cpuSeconds(side.server.pid)!;
  const sandboxBefore = cpuSeconds(side.server.pid, { children: true })!;
  for (let i = 0; i < RUNS; i++) {
    if (a.cold) await session(side, side.tokens.pop()!); // a run of calls and one of none alike: it cancels out
    if (GAP_MS > 0) await Bun.sleep(GAP_MS);
    t.ms.push(await execute(side, code, expected));
  }
  t.cpu += cpuSeconds(side.server.pid)! - before;
  await Bun.sleep(REAPED_MS);
  t.sandboxCpu += cpuSeconds(side.server.pid, { children: true })! - sandboxBefore;
}

const sides: Side[] = [];
try {
  const trees = [a.a!, a.b, a.c].filter((t): t is string => t !== undefined);
  for (const [i, tree] of trees.entries()) sides.push(await start('ABC'[i]!, tree));
  const named = sides.map((s, i) => `${s.label}: ${resolve(trees[i]!)}`).join('; ');
  log(
    `${named}; ${CALLS} × ${a.op} per run; ${ROUNDS} rounds of ${RUNS} runs each${a.cold ? ", each its grant's first" : ''}${PINNED ? '' : ' (not pinned: no taskset)'}`,
  );
  // Warm all: the first runs load MCP, the contract and the sandbox.
  for (const s of sides) for (let i = 0; i < 3; i++) await execute(s, WITH_CALLS, CALLS);
  const results = sides.map(() => ({ calls: tally(), none: tally() }));
  for (let r = 0; r < ROUNDS; r++) {
    // Each round starts with the next tree, so none always follows the same one.
    for (let k = 0; k < sides.length; k++) {
      const i = (r + k) % sides.length;
      await batch(sides[i]!, WITH_CALLS, CALLS, results[i]!.calls);
      await batch(sides[i]!, WITHOUT, 0, results[i]!.none);
    }
  }
  const n = ROUNDS * RUNS;
  const perCall = sides.map((s, i) => {
    const { calls, none } = results[i]!;
    return {
      tree: s.label,
      serverUs: round(((calls.cpu - none.cpu) / n / CALLS) * 1e6, 0),
      sandboxUs: round(((calls.sandboxCpu - none.sandboxCpu) / n / CALLS) * 1e6, 0),
      wallUs: round(((median(calls.ms) - median(none.ms)) / CALLS) * 1000, 0),
      runMs: round(median(calls.ms), 1),
      emptyRunMs: round(median(none.ms), 1),
      emptySandboxMs: round((none.sandboxCpu / n) * 1000, 1),
    };
  });
  const first = perCall[0]!;
  const ratio = (x: number | null, y: number | null) => (x === null || y === null ? null : round(x / y, 2));
  process.stdout.write(
    [
      `| tree | server CPU per call, µs | sandbox CPU per call, µs | time per call, µs | run of ${CALLS}, ms (median) | run of none, ms (median) | sandbox CPU per run of none, ms |`,
      '|---|---:|---:|---:|---:|---:|---:|',
      ...perCall.map((p) => `| ${p.tree} | ${p.serverUs} | ${p.sandboxUs} | ${p.wallUs} | ${p.runMs} | ${p.emptyRunMs} | ${p.emptySandboxMs} |`),
      ...perCall
        .slice(1)
        .map(
          (p) =>
            `| ${p.tree}/A | ${ratio(p.serverUs, first.serverUs)} | ${ratio(p.sandboxUs, first.sandboxUs)} | ${ratio(p.wallUs, first.wallUs)} | ${ratio(p.runMs, first.runMs)} | ${ratio(p.emptyRunMs, first.emptyRunMs)} | ${ratio(p.emptySandboxMs, first.emptySandboxMs)} |`,
        ),
      '',
    ].join('\n'),
  );
} finally {
  await Promise.all(sides.map((s) => stop(s.server)));
  for (const s of sides) rmSync(s.dir, { recursive: true, force: true });
}
