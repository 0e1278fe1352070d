import { describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const ROOT = new URL('../../', import.meta.url).pathname;
const cli = (dir: string, ...args: string[]) => {
  const r = Bun.spawnSync(['bun', 'commands/index.ts', ...args, '--data-dir', dir], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' } });
  return { code: r.exitCode, json: JSON.parse(r.stdout.toString() || 'null') };
};

describe('hookrelay plan set', () => {
  it("changes the store's plan on the local database; a bad plan is a usage error, an unknown shop is not found", () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookrelay-plan-'));
    expect(cli(dir, 'init', '--shop', 'p.myshopify.com').json.store.plan).toBe('unlimited');
    const set = cli(dir, 'plan', 'set', '--shop', 'p.myshopify.com', '--plan', 'growth');
    expect(set.code).toBe(0);
    expect(set.json).toMatchObject({ previousPlan: 'unlimited', store: { shopDomain: 'p.myshopify.com', plan: 'growth' } });
    expect(cli(dir, 'init', '--shop', 'p.myshopify.com').json.store.plan).toBe('growth');
    const bad = cli(dir, 'plan', 'set', '--shop', 'p.myshopify.com', '--plan', 'platinum');
    expect(bad.code).toBe(2);
    expect(bad.json.error.code).toBe('invalid_input');
    expect(cli(dir, 'plan', 'set', '--shop', 'nope.myshopify.com', '--plan', 'growth').code).toBe(6);
  });
});
