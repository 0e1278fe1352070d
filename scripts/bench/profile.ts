/**
 * `bun scripts/bench/profile.ts [--seconds 10] [--no-smol]`: a CPU profile of serve under the bench's ingest load
 * (64 connections of signed 1 KiB posts, server pinned to core 0, loader to core 1), written by Bun's
 * `--cpu-prof --cpu-prof-md` to bench/profile/ when the server stops. Samples are wall-clock on the server's thread:
 * the group commit's fsync shows as bun:sqlite `run`, and a collection as whatever allocated when it started.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { RUNTIME_FLAGS } from '../build.ts';
import { createHookEndpoint, hookLoad, ROOT, spawnReady, stop } from './_lib.ts';

const { values: a } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, 'no-smol': { type: 'boolean', default: false } } });
const flags = a['no-smol'] ? RUNTIME_FLAGS.filter((f) => f !== '--smol') : [...RUNTIME_FLAGS];
const out = join(ROOT, 'bench/profile');
const dir = mkdtempSync(join(tmpdir(), 'hookrelay-profile-'));
try {
  const server = await spawnReady(
    0,
    ['bun', ...flags, '--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${out}`, 'scripts/bench/server.ts', 'relay', '--data-dir', dir],
    { stderrTo: join(dir, 'log') },
  );
  const { url, secret } = await createHookEndpoint(server.ready.url, server.ready.token, 'profile');
  const spec = join(dir, 'spec.json');
  writeFileSync(spec, JSON.stringify(hookLoad(url, secret, { connections: 64, warmupS: 2, durationS: Number(a.seconds) })));
  const gen = await spawnReady(1, ['bun', 'scripts/bench/load.ts', `@${spec}`], { timeoutMs: (Number(a.seconds) + 60) * 1000 });
  const result = JSON.parse((await gen.rest).trim().split('\n').pop()!) as { rps: number; p99Ms: number };
  await stop(server);
  process.stderr.write(`${Math.round(result.rps)} req/s, p99 ${result.p99Ms.toFixed(1)} ms under the profiler; profile in ${out}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
