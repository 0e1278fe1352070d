/**
 * `bun scripts/bench/invoke.ts --b <checkout> [--a <checkout>] [--op getSetupState] [--n 3000] [--rounds 6]
 * [--sync FULL] [--database-url postgres://…]`: what one call of the pipeline costs in process, as MCP code mode
 * makes it (`invoke` with the grant already authenticated), in two trees side by side. Each round runs a fresh
 * process per tree on core 0 (A then B, then B then A): a new SQLite database in a temporary directory with `--sync`
 * (FULL, as serve runs), serve's JavaScriptCore options, a store and a grant, rate limits out of reach, 500 calls
 * to warm up, then `--n` calls one after another (`--database-url`: on that PostgreSQL database instead, which
 * keeps each process's store; the process's CPU leaves PostgreSQL's out). It prints the process's CPU and the time
 * on the clock per call, the medians over the rounds, and the median of the rounds' B/A (each round's two processes
 * ran back to back). A checkout is any directory holding this repository at a commit with `createInvoke` (`git
 * worktree add --detach /tmp/before <commit>`, node_modules linked); A defaults to this one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { log, median, pinned, ROOT, round } from './_lib.ts';

const { values: a } = parseArgs({
  options: {
    a: { type: 'string', default: ROOT },
    b: { type: 'string' },
    op: { type: 'string', default: 'getSetupState' },
    n: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '6' },
    sync: { type: 'string', default: 'FULL' },
    /** A PostgreSQL database to run on instead (each process adds its own store to it). */
    'database-url': { type: 'string' },
    child: { type: 'string' },
  },
});

interface Sample {
  cpuUs: number;
  wallUs: number;
}

if (a.child) {
  console.log(JSON.stringify(await child(resolve(a.child))));
  process.exit(0);
}
if (!a.b) {
  process.stderr.write('usage: bun scripts/bench/invoke.ts --b <checkout> [--a <checkout>] [--op getSetupState] [--n 3000] [--rounds 6] [--sync FULL]\n');
  process.exit(2);
}

const trees = { A: resolve(a.a!), B: resolve(a.b) };
const samples: Record<'A' | 'B', Sample[]> = { A: [], B: [] };
for (let r = 0; r < Number(a.rounds); r++) {
  for (const side of r % 2 ? (['B', 'A'] as const) : (['A', 'B'] as const)) {
    const url = a['database-url'] ? ['--database-url', a['database-url']] : [];
    const cmd = pinned(0, ['bun', import.meta.path, '--child', trees[side], '--op', a.op!, '--n', a.n!, '--sync', a.sync!, ...url]);
    const p = Bun.spawnSync(cmd, { stderr: 'inherit' });
    if (p.exitCode !== 0) throw new Error(`${side}: the probe exited ${p.exitCode}`);
    const s = JSON.parse(p.stdout.toString()) as Sample;
    samples[side].push(s);
    log(`round ${r + 1} ${side}: ${s.cpuUs} µs CPU, ${s.wallUs} µs on the clock per call`);
  }
}
const cpu = (side: 'A' | 'B') => median(samples[side].map((s) => s.cpuUs));
const wall = (side: 'A' | 'B') => median(samples[side].map((s) => s.wallUs));
console.log(
  JSON.stringify(
    {
      op: a.op,
      n: Number(a.n),
      rounds: Number(a.rounds),
      sync: a.sync,
      a: { tree: trees.A, cpuUsPerCall: cpu('A'), wallUsPerCall: wall('A') },
      b: { tree: trees.B, cpuUsPerCall: cpu('B'), wallUsPerCall: wall('B') },
      // Each round's B over its A (the two ran back to back), the median of those.
      cpuBOverA: round(median(samples.B.map((b, i) => b.cpuUs / samples.A[i]!.cpuUs)), 2),
      wallBOverA: round(median(samples.B.map((b, i) => b.wallUs / samples.A[i]!.wallUs)), 2),
    },
    null,
    2,
  ),
);

/** One tree's process: its own modules, a fresh database, the calls. */
async function child(tree: string): Promise<Sample> {
  const { reexecWithJscEnv } = await import(`${tree}/src/server/runtime-env.ts`);
  reexecWithJscEnv();
  const { openCore } = await import(`${tree}/src/boot.ts`);
  const { issueGrant, authenticateBearer } = await import(`${tree}/src/ops/grants.ts`);
  const { initStore } = await import(`${tree}/src/ops/stores.ts`);
  const { createInvoke } = await import(`${tree}/src/server/pipeline.ts`);
  const { RateLimiter } = await import(`${tree}/src/server/rate-limit.ts`);
  const { AuthFailureLimiter } = await import(`${tree}/src/lib/auth-failures.ts`);
  const { operations } = await import(`${tree}/src/contract/operations.ts`);
  const { DEFAULT_RATE_LIMITS } = await import(`${tree}/src/contract/limits.ts`);
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-invoke-'));
  try {
    const quiet = { info() {}, warn() {}, error: (m: string) => process.stderr.write(`${m}\n`) };
    process.env.HOOKRELAY_SECRET_KEY ??= 'ab'.repeat(32);
    const core = await openCore({ dataDir: dir, log: quiet, synchronous: a.sync, databaseUrl: a['database-url'] });
    const shopDomain = `bench-${process.pid}-${Date.now()}.myshopify.com`;
    await initStore(core, { shopDomain, plan: 'scale' });
    const grant = await issueGrant(core, { shopDomain, tier: 'admin_assistant', ttlMs: 3600_000, label: 'bench' });
    const principal = await authenticateBearer(core, `Bearer ${grant.token}`);
    const unlimited = Object.fromEntries(Object.keys(DEFAULT_RATE_LIMITS).map((k) => [k, { grant: 1e9, store: 1e9 }]));
    const invoke = createInvoke({
      core,
      endpointChanged() {},
      limiter: new RateLimiter(core.repo, core.clock, unlimited),
      authFailures: new AuthFailureLimiter(core.clock),
      inflight: new Map(),
    });
    const op = operations[a.op!];
    if (!op) throw new Error(`no operation ${a.op}`);
    const call = { principal, expected: new Headers(), params: {}, idempotencyKey: null, requestId: 'req_bench', client: () => null, surface: 'mcp' };
    for (let i = 0; i < 500; i++) {
      const answer = await invoke(op, call);
      if (answer.status !== 200) throw new Error(`${a.op} answered ${answer.status}`);
    }
    const n = Number(a.n);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await invoke(op, call);
    const wallUs = ((performance.now() - t0) * 1000) / n;
    const cpu = process.cpuUsage(cpu0);
    await core.repo.close();
    return { cpuUs: Math.round((cpu.user + cpu.system) / n), wallUs: Math.round(wallUs) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
