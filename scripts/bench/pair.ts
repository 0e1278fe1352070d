/**
 * `bun run bench:pair --b <checkout> [--a <checkout>] [--runs 3] [--a-env K=V] [--b-env K=V]`: compares two trees
 * by running both relay servers at once on core 0, each loaded by its own load generator on core 1 (32
 * connections each), and reports B's server CPU per receipt relative to A's.
 *
 * Why paired: this host's speed drifts. The same tree measured 33 to 54 µs of CPU per receipt within an hour,
 * so runs one after the other cannot resolve a 5% change. Two servers sharing the core in the same seconds see
 * the same host; A against A gives ratios within 1%. A checkout is any directory holding this repository
 * (`git worktree add /tmp/base main`, with node_modules linked or installed); A defaults to this one.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuSeconds, createHookEndpoint, hookLoad, log, median, ROOT, round, spawnReady, stop, type Child } from './_lib.ts';
import type { LoadResult } from './load.ts';

const { values: a } = parseArgs({
  options: {
    a: { type: 'string', default: ROOT },
    b: { type: 'string' },
    runs: { type: 'string', default: '3' },
    'a-env': { type: 'string', multiple: true, default: [] },
    'b-env': { type: 'string', multiple: true, default: [] },
    seconds: { type: 'string', default: '8' },
    serial: { type: 'boolean', default: false },
  },
});
if (!a.b) {
  process.stderr.write('usage: bun run bench:pair --b <checkout> [--a <checkout>] [--runs 3] [--a-env K=V] [--b-env K=V] [--serial]\n');
  process.exit(2);
}
const envOf = (pairs: string[]) => Object.fromEntries(pairs.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));

/** Bytes the process wrote through system calls (WAL, database, sockets, logs). */
function writtenBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/io`, 'utf8').split('\n').find((l) => l.startsWith('wchar:'));
  return Number(line?.split(':')[1] ?? 0);
}

interface Side {
  server: Child;
  dir: string;
  spec: string;
}

async function start(label: string, checkout: string, env: Record<string, string>, connections = 32): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `hookrelay-pair-${label}-`));
  const server = await spawnReady(0, ['bun', join(resolve(checkout), 'scripts/bench/server.ts'), 'relay', '--data-dir', dir], { stderrTo: join(dir, 'log'), env });
  const { url, secret } = await createHookEndpoint(server.ready.url, server.ready.token, `pair ${label}`);
  const spec = hookLoad(url, secret, { connections, warmupS: 2, durationS: Number(a.seconds) });
  writeFileSync(join(dir, 'spec.json'), JSON.stringify(spec));
  return { server, dir, spec: join(dir, 'spec.json') };
}

async function once() {
  const sides: Side[] = [];
  try {
    sides.push(await start('a', a.a!, envOf(a['a-env']!)));
    sides.push(await start('b', a.b!, envOf(a['b-env']!)));
    const pids = sides.map((s) => s.server.pid);
    const cpu0 = pids.map((p) => cpuSeconds(p) ?? 0);
    const io0 = pids.map(writtenBytes);
    const loaders = await Promise.all(sides.map((s) => spawnReady(1, ['bun', join(ROOT, 'scripts/bench/load.ts'), `@${s.spec}`], { timeoutMs: 60_000 })));
    const results = (await Promise.all(loaders.map((l) => l.rest))).map((out) => JSON.parse(out.trim().split('\n').pop()!) as LoadResult);
    // CPU and bytes over the whole load (warm-up included), per request answered in it.
    const per = pids.map((p, i) => {
      const answered = results[i]!.requests + results[i]!.warmupOk;
      return { rps: results[i]!.rps, cpuUs: (((cpuSeconds(p) ?? 0) - cpu0[i]!) / answered) * 1e6, bytes: (writtenBytes(p) - io0[i]!) / answered };
    });
    return { a: per[0]!, b: per[1]!, cpuRatio: per[1]!.cpuUs / per[0]!.cpuUs, rpsRatio: per[1]!.rps / per[0]!.rps };
  } finally {
    await Promise.all(sides.map((s) => stop(s.server)));
    for (const s of sides) rmSync(s.dir, { recursive: true, force: true });
  }
}

interface Measured {
  rps: number;
  cpuUs: number;
  bytes: number;
}

/** One tree alone on core 0 with the bench's 64 connections: what `bun run bench` measures. */
async function alone(label: string, checkout: string, env: Record<string, string>): Promise<Measured> {
  const side = await start(label, checkout, env, 64);
  try {
    const pid = side.server.pid;
    const cpu0 = cpuSeconds(pid) ?? 0;
    const io0 = writtenBytes(pid);
    const loader = await spawnReady(1, ['bun', join(ROOT, 'scripts/bench/load.ts'), `@${side.spec}`], { timeoutMs: 60_000 });
    const result = JSON.parse((await loader.rest).trim().split('\n').pop()!) as LoadResult;
    const answered = result.requests + result.warmupOk;
    return { rps: result.rps, cpuUs: (((cpuSeconds(pid) ?? 0) - cpu0) / answered) * 1e6, bytes: (writtenBytes(pid) - io0) / answered };
  } finally {
    await stop(side.server);
    rmSync(side.dir, { recursive: true, force: true });
  }
}

/**
 * --serial: A alone, then B alone (B first on every second run). Idle time (fsync waits) counts here, which a
 * shared core hides: while one server waits, the other runs. Adjacent runs drift less than an hour does.
 */
async function serial(i: number) {
  const runA = () => alone('a', a.a!, envOf(a['a-env']!));
  const runB = () => alone('b', a.b!, envOf(a['b-env']!));
  let ra: Measured, rb: Measured;
  if (i % 2 === 0) {
    ra = await runA();
    rb = await runB();
  } else {
    rb = await runB();
    ra = await runA();
  }
  return { a: ra, b: rb, cpuRatio: rb.cpuUs / ra.cpuUs, rpsRatio: rb.rps / ra.rps };
}

const runs = [];
for (let i = 0; i < Number(a.runs); i++) {
  const r = a.serial ? await serial(i) : await once();
  log(`run ${i + 1}: A ${round(r.a.cpuUs)} µs, B ${round(r.b.cpuUs)} µs per receipt (B/A ${round(r.cpuRatio, 3)}); req/s B/A ${round(r.rpsRatio, 3)}; bytes written ${round(r.a.bytes, 0)} / ${round(r.b.bytes, 0)}`);
  runs.push(r);
}
const summary = {
  runs: runs.length,
  cpuRatioMedian: round(median(runs.map((r) => r.cpuRatio)), 3),
  rpsRatioMedian: round(median(runs.map((r) => r.rpsRatio)), 3),
  bytesRatioMedian: round(median(runs.map((r) => r.b.bytes / r.a.bytes)), 3),
  runsDetail: runs.map((r) => ({ aCpuUs: round(r.a.cpuUs), bCpuUs: round(r.b.cpuUs), aRps: round(r.a.rps, 0), bRps: round(r.b.rps, 0) })),
};
process.stdout.write(`${JSON.stringify(summary)}\n`);
