/**
 * serve runs with its JavaScriptCore options (src/server/runtime-env.ts): it re-executes itself with them as it
 * starts, in the same process, and leaves an option the operator set alone.
 */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingJscEnv, SERVE_JSC_ENV } from '../../src/server/runtime-env.ts';
import { closedPort } from './harness.ts';
import { spawnServe, type ServeProcess } from '../fixtures/serve-process.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const root = mkdtempSync(join(tmpdir(), 'hookrelay-jsc-env-'));
const running: ServeProcess[] = [];
afterAll(async () => {
  for (const s of running) s.proc.kill('SIGTERM');
  await Promise.all(running.map((s) => s.proc.exited));
  rmSync(root, { recursive: true, force: true });
});

const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');

describe('serve and its JavaScriptCore options', () => {
  it('names FTL off and a smaller heap, and only what the environment does not name', () => {
    expect(SERVE_JSC_ENV).toEqual({ BUN_JSC_useFTLJIT: '0', BUN_JSC_heapGrowthMaxIncrease: '1.0', BUN_JSC_largeHeapSize: '1048576' });
    expect(missingJscEnv({})).toEqual(SERVE_JSC_ENV);
    expect(missingJscEnv({ BUN_JSC_useFTLJIT: '1' })).toEqual({ BUN_JSC_heapGrowthMaxIncrease: '1.0', BUN_JSC_largeHeapSize: '1048576' });
    expect(missingJscEnv({ BUN_JSC_useFTLJIT: '', BUN_JSC_heapGrowthMaxIncrease: '2', BUN_JSC_largeHeapSize: '33554432' })).toEqual({});
  });

  it('serve re-executes itself with them: the same pid, its arguments kept, serving', async () => {
    const s = await spawnServe(join(root, 'a'), closedPort());
    running.push(s);
    expect(environ(s.proc.pid)).toEqual(expect.arrayContaining(Object.entries(SERVE_JSC_ENV).map(([k, v]) => `${k}=${v}`)));
    // The arguments survived the re-execution: the data dir it logs is the one it was given.
    expect(s.stderr()).toContain(`data directory ${join(root, 'a')}`);
    expect((await fetch(`${s.url}/status`)).status).toBe(200);
  });

  it("keeps the operator's own setting", async () => {
    const s = await spawnServe(join(root, 'b'), closedPort(), { env: { BUN_JSC_useFTLJIT: '1' } });
    running.push(s);
    const env = environ(s.proc.pid);
    expect(env).toContain('BUN_JSC_useFTLJIT=1');
    expect(env).not.toContain('BUN_JSC_useFTLJIT=0');
    // What the operator did not set is still added.
    expect(env).toContain('BUN_JSC_heapGrowthMaxIncrease=1.0');
  });
});
