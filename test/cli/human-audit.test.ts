/** The admin commands in the audit trail: one row per run, the actor a person (`--actor`, else user@host), never a secret. */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';

// These tests spawn the CLI: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const box = adminBox('hookrelay-human-audit-');
afterAll(() => rmSync(box.root, { recursive: true, force: true }));
const cwd = box.dir('work');
const data = ['--data-dir', join(box.root, 'data')];
const SHOP = 'ha.myshopify.com';
/** The value of the variable store set names: it must never reach a row. */
const SECRET_CANARY = 'Canary_Client_Secret_7Hq2Zx9';
const run = (...args: string[]) => admin(box, cwd, [...args, ...data], { HR_TEST_CLIENT_SECRET: SECRET_CANARY });

type Entry = {
  operationId: string;
  actorKind: string;
  actorLabel: string;
  storeId: string | null;
  targetId: string | null;
  outcome: string;
  errorCode: string | null;
  transition: string | null;
  surface: string;
};
const entries = (...args: string[]) => run('audit', '--since', '1h', ...args).json.entries as Entry[];

describe('admin commands in the audit trail', () => {
  it(
    'init, grant issue and revoke, plan set, store set and migrate each write one row with a human actor; audit prints them; no secret',
    () => {
      const init = run('init', '--shop', SHOP);
      expect(init.code).toBe(0);
      const storeId = init.json.store.storeId as string;
      const issued = run('grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '1h', '--actor', 'Jane Ops');
      expect(issued.code).toBe(0);
      expect(run('grant', 'revoke', issued.json.grantId).code).toBe(0);
      expect(run('grant', 'revoke', 'gr_unknown').code).toBe(6);
      expect(run('plan', 'set', '--shop', SHOP, '--plan', 'growth').code).toBe(0);
      const set = run(
        'store',
        'set',
        '--shop',
        SHOP,
        '--destination',
        'shopify',
        '--auth',
        'client-credentials',
        '--client-id',
        'client-id-123',
        '--client-secret-env',
        'HR_TEST_CLIENT_SECRET',
      );
      expect(set.code).toBe(0);
      expect(run('migrate').code).toBe(0);

      const audit = run('audit', '--since', '1h');
      expect(audit.code).toBe(0);
      const rows = audit.json.entries as Entry[];
      const me = rows[0]!.actorLabel;
      expect(me).toEndWith(`@${hostname()}`);
      expect(rows.map((r) => [r.operationId, r.actorKind, r.actorLabel, r.storeId, r.outcome, r.errorCode])).toEqual([
        ['initStore', 'human', me, storeId, 'ok', null],
        ['issueGrant', 'human', 'Jane Ops', storeId, 'ok', null],
        ['revokeGrant', 'human', me, storeId, 'ok', null],
        ['revokeGrant', 'human', me, null, 'error', 'not_found'],
        ['setPlan', 'human', me, storeId, 'ok', null],
        ['setStoreSettings', 'human', me, storeId, 'ok', null],
        ['migrate', 'human', me, null, 'ok', null],
      ]);
      expect(rows.every((r) => r.surface === 'cli')).toBe(true);
      expect(rows[1]!.targetId).toBe(issued.json.grantId);
      expect(rows[1]!.transition).toBe(
        'issued operator (setup:read, event:read, endpoint:write, endpoint:test, support:request, expansion:request) for 3600 s',
      );
      expect(rows[4]!.transition).toBe('plan unlimited -> growth');
      expect(rows[5]!.transition).toBe('changed destination, auth, clientId, clientSecretEnv');
      expect(JSON.stringify(audit.json)).not.toContain(issued.json.token);
      expect(JSON.stringify(audit.json)).not.toContain(SECRET_CANARY);

      // Reads count them as any row: the store's reads hold its rows (not the box-wide migrate), --limit the newest.
      expect(entries('--shop', SHOP).map((r) => r.operationId)).toEqual(['initStore', 'issueGrant', 'revokeGrant', 'setPlan', 'setStoreSettings']);
      expect(entries('--limit', '2').map((r) => r.operationId)).toEqual(['setStoreSettings', 'migrate']);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    '--actor names the person; one that is empty, too long, unprintable or shaped like a credential is refused unechoed and writes nothing',
    () => {
      const before = entries().length;
      for (const actor of ['', 'x'.repeat(65), 'line\nbreak', 'hrg_0123456789abcdefABCDEF0123456789', 'ci shpat_0123456789abcdef', 'postgres://u:pw@db/x']) {
        const r = run('plan', 'set', '--shop', SHOP, '--plan', 'starter', '--actor', actor);
        expect(r.code, JSON.stringify(actor)).toBe(2);
        if (actor) expect(JSON.stringify(r.json)).not.toContain(actor);
      }
      expect(entries().length).toBe(before);
      expect(run('plan', 'set', '--shop', SHOP, '--plan', 'starter', '--actor', '  María Lopez (on call, Team 2)  ').code).toBe(0);
      expect(entries().at(-1)).toMatchObject({
        operationId: 'setPlan',
        actorKind: 'human',
        actorLabel: 'María Lopez (on call, Team 2)',
        transition: 'plan growth -> starter',
      });
      expect(run('init', '--shop', SHOP, '--actor', 'ops-bot').code).toBe(0);
      expect(entries().at(-1)).toMatchObject({ operationId: 'initStore', actorLabel: 'ops-bot', outcome: 'ok', transition: 'unchanged' });
    },
    SPAWN_TIMEOUT_MS,
  );
});
