/** `hookrelay console`: a single-use sign-in link to the store's console, printed as JSON, audited as the person. */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { admin, adminBox } from './admin-run.ts';

setDefaultTimeout(60_000);

const box = adminBox('hookrelay-console-');
afterAll(() => rmSync(box.root, { recursive: true, force: true }));
const cwd = box.dir('work');
const data = ['--data-dir', join(box.root, 'data')];
const run = (...args: string[]) => admin(box, cwd, [...args, ...data]);

describe('hookrelay console', () => {
  it('prints a link for the only store, bound to --actor and --ttl; refuses a second store without --shop; audits the person', () => {
    expect(run('init', '--shop', 'one.myshopify.com').code).toBe(0);
    const link = run('console', '--actor', 'Jane Ops', '--ttl', '5m');
    expect(link.code).toBe(0);
    expect(link.json).toMatchObject({ shopDomain: 'one.myshopify.com', actor: 'Jane Ops' });
    expect(link.json.url).toMatch(/\/console\/sign-in\?token=hrc_[0-9A-Za-z]{32}$/);
    expect(Date.parse(link.json.expiresAt) - Date.now()).toBeLessThanOrEqual(5 * 60_000);
    expect(run('console', '--ttl', '2h').code).toBe(2);
    expect(run('init', '--shop', 'two.myshopify.com').code).toBe(0);
    expect(run('console').code).toBe(2);
    expect(run('console', '--shop', 'two.myshopify.com').code).toBe(0);
    const rows = run('audit', '--since', '1h').json.entries as { operationId: string; actorLabel: string; transition: string | null }[];
    const issued = rows.filter((r) => r.operationId === 'issueConsoleLink');
    expect(issued.length).toBe(2);
    expect(issued.map((r) => r.actorLabel)).toContain('Jane Ops');
    expect(JSON.stringify(rows)).not.toContain(new URL(link.json.url).searchParams.get('token')!);
  });
});
