/**
 * `bun run bench --only=…` refuses a part it does not know (exit 2, naming the parts it has) instead of measuring
 * nothing and exiting 0 as if it had; the stores part refuses a bad flag the same way. Both exit before any work.
 */
import { describe, expect, it } from 'bun:test';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;

function run(script: string, ...args: string[]) {
  const r = Bun.spawnSync(['bun', join(ROOT, script), ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe('bench --only', () => {
  it('an unknown part exits 2 and names the parts there are; nothing is measured', () => {
    const r = run('scripts/bench/index.ts', '--only=ingest,storez');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no part named 'storez'");
    expect(r.stderr).toContain('ingest, durability, handoff, budget, reads, resources, stores');
    expect(r.stdout).toBe('');
  });

  it('an empty list is refused too', () => {
    expect(run('scripts/bench/index.ts', '--only=').code).toBe(2);
  });

  it('the stores part refuses a store count or backend it cannot run', () => {
    for (const bad of ['--stores=5', '--backends=mysql', '--quiet-minutes=0', '--nope']) {
      const r = run('scripts/bench/stores.ts', bad);
      expect({ bad, code: r.code }).toEqual({ bad, code: 2 });
      expect(r.stderr).toContain('usage: bun run bench --only=stores');
    }
  });
});
