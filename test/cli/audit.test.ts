import { describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCore } from '../../src/boot.ts';
import { createApp } from '../../src/server/app.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const ROOT = new URL('../../', import.meta.url).pathname;
const cli = (dir: string, ...args: string[]) => {
  const r = Bun.spawnSync(['bun', 'commands/index.ts', ...args, '--data-dir', dir], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' } });
  return { code: r.exitCode, json: JSON.parse(r.stdout.toString() || 'null'), out: r.stdout.toString() };
};

describe('hookrelay audit', () => {
  it('lists one row per call with actor, scopes, outcome and refusal, never the token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookrelay-audit-'));
    cli(dir, 'init', '--shop', 'a.myshopify.com');
    const { token } = cli(dir, 'grant', 'issue', '--shop', 'a.myshopify.com', '--tier', 'observer', '--ttl', '1h').json;
    const core = await openCore({ dataDir: dir });
    const app = createApp(core);
    const auth = { authorization: `Bearer ${token}` };
    await app.fetch(new Request('http://x/agent/v1/grant', { headers: auth }));
    await app.fetch(
      new Request('http://x/agent/v1/endpoints', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"triggerVariant":"generic"}',
      }),
    );
    await app.fetch(new Request('http://x/agent/v1/grant', { headers: { authorization: 'Bearer hrg_wrong' } }));
    await core.repo.close();

    const r = cli(dir, 'audit', '--since', '1h');
    expect(r.code).toBe(0);
    expect(r.out).not.toContain(token);
    const rows = r.json.entries as { operationId: string; outcome: string; refusalCategory: string | null; actorKind: string; status: number }[];
    expect(rows.map((e) => [e.operationId, e.actorKind, e.outcome, e.status])).toEqual([
      ['initStore', 'human', 'ok', 200],
      ['issueGrant', 'human', 'ok', 200],
      ['getCurrentAgentGrant', 'agent', 'ok', 200],
      ['createEndpoint', 'agent', 'refused', 403],
      ['getCurrentAgentGrant', 'anonymous', 'error', 401],
    ]);
    expect(rows[3]!.refusalCategory).toBe('scope');
    expect(cli(dir, 'audit', '--since', 'soon').code).toBe(2);
  });
});

describe('hookrelay audit --limit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-audit-many-'));
  const rows = 3000;

  it('returns the newest N rows, oldest first; --since takes the same durations', async () => {
    // The database without init, whose own audit row would land among these.
    const core = await openCore({ dataDir: dir });
    const now = Date.now();
    for (let i = 0; i < rows; i++) {
      await core.repo.insertAudit({
        id: `aud_${String(i).padStart(6, '0')}`,
        at: now - (rows - i) * 100,
        storeId: null,
        grantId: null,
        actorKind: 'anonymous',
        actorLabel: 'test',
        operationId: `op${i}`,
        scopes: '[]',
        targetId: null,
        intentId: null,
        transition: null,
        outcome: 'ok',
        status: 200,
        errorCode: null,
        refusalCategory: null,
        refusalCode: null,
        requestId: null,
        surface: 'http',
      });
    }
    await core.repo.close();
    const newest = cli(dir, 'audit', '--limit', '2', '--since', '1h');
    expect(newest.code).toBe(0);
    expect(newest.json.entries.map((e: { operationId: string }) => e.operationId)).toEqual([`op${rows - 2}`, `op${rows - 1}`]);
    const recent = cli(dir, 'audit', '--since', '30s', '--limit', '1000');
    expect(recent.json.entries.length).toBeGreaterThan(0);
    expect(recent.json.entries.length).toBeLessThanOrEqual(300);
  }, 60_000);

  it('writes all of a large document into a slow pipe before exiting (was cut at 65,536 bytes)', () => {
    // The reader sleeps first, so the pipe fills and the writer must wait for it to drain.
    const r = Bun.spawnSync(['bash', '-o', 'pipefail', '-c', `bun commands/index.ts audit --limit 100000 --since 1h --data-dir '${dir}' | (sleep 1; cat)`], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(r.exitCode).toBe(0);
    const out = r.stdout.toString();
    expect(out.length).toBeGreaterThan(65_536 * 4);
    expect(JSON.parse(out).entries).toHaveLength(rows);
  }, 60_000);
});
