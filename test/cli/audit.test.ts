import { describe, expect, it } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCore } from '../../src/boot.ts';
import { createApp } from '../../src/server/app.ts';

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
    await app.fetch(new Request('http://x/agent/v1/endpoints', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"triggerVariant":"generic"}' }));
    await app.fetch(new Request('http://x/agent/v1/grant', { headers: { authorization: 'Bearer hrg_wrong' } }));
    await core.repo.close();

    const r = cli(dir, 'audit', '--since', '1h');
    expect(r.code).toBe(0);
    expect(r.out).not.toContain(token);
    const rows = r.json.entries as { operationId: string; outcome: string; refusalCategory: string | null; actorKind: string; status: number }[];
    expect(rows.map((e) => [e.operationId, e.outcome, e.status])).toEqual([
      ['getCurrentAgentGrant', 'ok', 200],
      ['createEndpoint', 'refused', 403],
      ['getCurrentAgentGrant', 'error', 401],
    ]);
    expect(rows[1]!.refusalCategory).toBe('scope');
    expect(rows[2]!.actorKind).toBe('anonymous');
    expect(cli(dir, 'audit', '--since', 'soon').code).toBe(2);
  });
});
