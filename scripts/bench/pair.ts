/**
 * `bun run bench:pair --b <checkout> [--a <checkout>] [--runs 3] [--a-env K=V] [--b-env K=V] [--a-bun PATH]
 * [--b-bun PATH]`: compares two trees, or one tree under two Bun runtimes, by running both relay servers at once on
 * core 0, each loaded by its own load generator on core 1 (32 connections each), and reports B's server CPU per
 * receipt relative to A's. The load generators run on the `bun` of PATH, the same for both sides.
 *
 * Why paired: this host's speed drifts. The same tree measured 33 to 54 µs of CPU per receipt within an hour,
 * so runs one after the other cannot resolve a 5% change. Two servers sharing the core in the same seconds see
 * the same host; A against A gives ratios within 1%. A checkout is any directory holding this repository
 * (`git worktree add /tmp/base main`, with node_modules linked or installed); A defaults to this one, and B to A.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuSeconds, createHookEndpoint, hookLoad, log, median, ROOT, round, spawnReady, stop, type Child } from './_lib.ts';
import type { LoadResult } from './load.ts';
import { RUNTIME_FLAGS } from '../build.ts';

const { values: a } = parseArgs({
  options: {
    a: { type: 'string', default: ROOT },
    b: { type: 'string' },
    runs: { type: 'string', default: '3' },
    'a-env': { type: 'string', multiple: true, default: [] },
    'b-env': { type: 'string', multiple: true, default: [] },
    'a-bun': { type: 'string', default: 'bun' },
    'b-bun': { type: 'string', default: 'bun' },
    seconds: { type: 'string', default: '8' },
    serial: { type: 'boolean', default: false },
  },
});
if (!a.b && a['a-bun'] === a['b-bun']) {
  process.stderr.write(
    'usage: bun run bench:pair --b <checkout> [--a <checkout>] [--runs 3] [--a-env K=V] [--b-env K=V] [--a-bun PATH] [--b-bun PATH] [--serial]\n',
  );
  process.exit(2);
}
a.b ??= a.a;
const envOf = (pairs: string[]) => Object.fromEntries(pairs.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));

/** Bytes the process wrote through system calls (WAL, database, sockets, logs). */
function writtenBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/io`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('wchar:'));
  return Number(line?.split(':')[1] ?? 0);
}

/**
 * A side's runtime: `bun` from PATH, or a path to another Bun. A path also goes first in the side's PATH, so
 * anything its server starts with `bun` runs on the same one.
 */
function runtime(bun: string): { bin: string; version: string; env: Record<string, string> } {
  const bin = bun.includes('/') ? resolve(bun) : bun;
  const version = Bun.spawnSync([bin, '--version']).stdout.toString().trim();
  if (!version) throw new Error(`${bun}: not a Bun runtime`);
  return { bin, version, env: bin === bun ? {} : { PATH: `${dirname(bin)}${delimiter}${process.env.PATH ?? ''}` } };
}
const bunA = runtime(a['a-bun']!);
const bunB = runtime(a['b-bun']!);
log(`A: ${resolve(a.a!)} on Bun ${bunA.version}; B: ${resolve(a.b)} on Bun ${bunB.version}`);

interface Side {
  server: Child;
  dir: string;
  spec: string;
}

async function start(label: string, checkout: string, env: Record<string, string>, bun: ReturnType<typeof runtime>, connections: number): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `hookrelay-pair-${label}-`));
  const cmd = [bun.bin, ...RUNTIME_FLAGS, join(resolve(checkout), 'scripts/bench/server.ts'), 'relay', '--data-dir', dir];
  const server = await spawnReady(0, cmd, { stderrTo: join(dir, 'log'), env: { ...bun.env, ...env } });
  const { url, secret } = await createHookEndpoint(server.ready.url, server.ready.token, `pair ${label}`);
  const spec = hookLoad(url, secret, { connections, warmupS: 2, durationS: Number(a.seconds) });
  writeFileSync(join(dir, 'spec.json'), JSON.stringify(spec));
  return { server, dir, spec: join(dir, 'spec.json') };
}

interface Measured {
  rps: number;
  cpuUs: number;
  bytes: number;
}

/**
 * Loads the started sides at once, each with its own load generator on core 1, and stops them. CPU and bytes
 * are over the whole load (warm-up included), per request answered in it.
 */
async function measure(sides: Side[]): Promise<Measured[]> {
  try {
    const pids = sides.map((s) => s.server.pid);
    const cpu0 = pids.map((p) => cpuSeconds(p) ?? 0);
    const io0 = pids.map(writtenBytes);
    const loaders = await Promise.all(sides.map((s) => spawnReady(1, ['bun', join(ROOT, 'scripts/bench/load.ts'), `@${s.spec}`], { timeoutMs: 60_000 })));
    const results = (await Promise.all(loaders.map((l) => l.rest))).map((out) => JSON.parse(out.trim().split('\n').pop()!) as LoadResult);
    return pids.map((p, i) => {
      const answered = results[i]!.requests + results[i]!.warmupOk;
      return { rps: results[i]!.rps, cpuUs: (((cpuSeconds(p) ?? 0) - cpu0[i]!) / answered) * 1e6, bytes: (writtenBytes(p) - io0[i]!) / answered };
    });
  } finally {
    await release(sides);
  }
}

async function release(sides: Side[]): Promise<void> {
  await Promise.all(sides.map((s) => stop(s.server)));
  for (const s of sides) rmSync(s.dir, { recursive: true, force: true });
}

const compare = (ra: Measured, rb: Measured) => ({ a: ra, b: rb, cpuRatio: rb.cpuUs / ra.cpuUs, rpsRatio: rb.rps / ra.rps });
const startA = (connections: number) => start('a', a.a!, envOf(a['a-env']!), bunA, connections);
const startB = (connections: number) => start('b', a.b!, envOf(a['b-env']!), bunB, connections);

/** Both trees at once on core 0, 32 connections each. */
async function once() {
  const sides: Side[] = [];
  try {
    sides.push(await startA(32), await startB(32));
  } catch (err) {
    await release(sides); // A started, B did not
    throw err;
  }
  const [ra, rb] = await measure(sides);
  return compare(ra!, rb!);
}

/**
 * --serial: A alone, then B alone (B first on every second run), each with the bench's 64 connections, as
 * `bun run bench` measures. Idle time (fsync waits) counts here, which a shared core hides: while one server
 * waits, the other runs. Adjacent runs drift less than an hour does.
 */
async function serial(i: number) {
  const alone = async (side: Promise<Side>) => (await measure([await side]))[0]!;
  if (i % 2 === 0) {
    const ra = await alone(startA(64));
    return compare(ra, await alone(startB(64)));
  }
  const rb = await alone(startB(64));
  return compare(await alone(startA(64)), rb);
}

const runs = [];
for (let i = 0; i < Number(a.runs); i++) {
  const r = a.serial ? await serial(i) : await once();
  log(
    `run ${i + 1}: A ${round(r.a.cpuUs)} µs, B ${round(r.b.cpuUs)} µs per receipt (B/A ${round(r.cpuRatio, 3)}); req/s B/A ${round(r.rpsRatio, 3)}; bytes written ${round(r.a.bytes, 0)} / ${round(r.b.bytes, 0)}`,
  );
  runs.push(r);
}
const summary = {
  bun: { a: bunA.version, b: bunB.version },
  runs: runs.length,
  cpuRatioMedian: round(median(runs.map((r) => r.cpuRatio)), 3),
  rpsRatioMedian: round(median(runs.map((r) => r.rpsRatio)), 3),
  bytesRatioMedian: round(median(runs.map((r) => r.b.bytes / r.a.bytes)), 3),
  runsDetail: runs.map((r) => ({ aCpuUs: round(r.a.cpuUs), bCpuUs: round(r.b.cpuUs), aRps: round(r.a.rps, 0), bRps: round(r.b.rps, 0) })),
};
process.stdout.write(`${JSON.stringify(summary)}\n`);
