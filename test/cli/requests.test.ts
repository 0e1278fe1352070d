/**
 * `hookrelay requests list/show`: what agents filed, read from the local database (SQLite, and PostgreSQL when
 * HOOKRELAY_TEST_DATABASE_URL is set), newest first, filtered, redacted, never a token; reads write no audit row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openCore } from '../../src/boot.ts';
import type { Core } from '../../src/core.ts';
import { newSecretKey } from '../../src/lib/crypto.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { initStore } from '../../src/ops/stores.ts';
import { createApp } from '../../src/server/app.ts';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';
import { CANARY, dropCreated, freshDatabase } from './pg-db.ts';
import { runnerOf } from '../../db/runner.ts';

const box = adminBox('hookrelay-requests-');
const cwd = box.dir('work');
afterAll(async () => {
  rmSync(box.root, { recursive: true, force: true });
  await dropCreated();
}, 60_000);

const HOUR = 3600_000;
const PLANTED = 'whsec_plantedSecret0123456789';
const OLD_SECRET = 'shpat_0123456789abcdef0123456789abcdef';

interface Filed {
  token: string;
  ids: { support: string; feature: string; expansion: string; diagnostics: string; old: string; otherStore: string };
}

/**
 * Files one request of each kind through the API (in process, on the database the CLI then reads), another store's
 * support request, and a record stored raw as an older version might have kept it (a token in its text).
 */
async function fileRequests(core: Core): Promise<Filed> {
  await initStore(core, { shopDomain: 'a.myshopify.com' });
  await initStore(core, { shopDomain: 'b.myshopify.com' });
  const { token } = await issueGrant(core, { shopDomain: 'a.myshopify.com', tier: 'admin_assistant', ttlMs: HOUR });
  const other = await issueGrant(core, { shopDomain: 'b.myshopify.com', tier: 'operator', ttlMs: HOUR });
  const app = createApp(core);
  const post = async (t: string, path: string, body: unknown, key: string) => {
    const res = await app.fetch(
      new Request(`http://x${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json', 'Idempotency-Key': key },
        body: JSON.stringify(body),
      }),
    );
    const json = (await res.json()) as any;
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    // Each request in a millisecond of its own: the listing's order is the order they were filed.
    await Bun.sleep(3);
    return json.data;
  };
  const support = (t: string, summary: string, key: string) =>
    post(t, '/agent/v1/support-request-intents', { mode: 'submit', consent: true, input: { category: 'delivery', urgency: 'critical', summary } }, key);
  const feature = await post(token, '/agent/v1/feature-requests', { capability: 'CSV export', problem: 'monthly audit' }, 'f1');
  const expansion = await post(token, '/agent/v1/expansion-requests', { kind: 'multi_store', summary: 'three stores' }, 'x1');
  const endpoint = await post(token, '/agent/v1/endpoints', { triggerVariant: 'order', resourceIdPath: 'order.id' }, 'e1');
  const diagPreview = await post(
    token,
    '/agent/v1/diagnostics-share-intents',
    { mode: 'preview', input: { endpointIds: [endpoint.endpoint.id], note: 'see this' } },
    'd0',
  );
  const diag = await post(
    token,
    '/agent/v1/diagnostics-share-intents',
    { mode: 'execute', intentId: diagPreview.intent.id, confirmationToken: diagPreview.intent.confirmation.token },
    'd1',
  );
  const sup = await support(token, `Events stuck\nsince noon; key ${PLANTED} and ops@example.com`, 's1');
  const otherSup = await support(other.token, 'the other store', 's2');
  await app.writer.close();
  const store = (await core.repo.getStoreByShop('a.myshopify.com'))!;
  // Before the redactor learnt a shape: stored as typed, two days ago.
  await core.repo.insertRecord({
    id: 'feat_old',
    storeId: store.id,
    kind: 'feature_request',
    body: JSON.stringify({ capability: 'old one', problem: `token ${OLD_SECRET}` }),
    createdAt: Date.now() - 48 * HOUR,
    expiresAt: null,
  });
  return {
    token,
    ids: {
      support: sup.intent.result.resourceId,
      feature: feature.request.id,
      expansion: expansion.request.id,
      diagnostics: diag.intent.result.resourceId,
      old: 'feat_old',
      otherStore: otherSup.intent.result.resourceId,
    },
  };
}

/** The same checks on either backend: `target` is the flags and environment that name the database. */
function checks(target: () => { flags: string[]; env: Record<string, string> }, filed: () => Filed, auditRows: () => Promise<number>) {
  const run = (...args: string[]) => {
    const t = target();
    const r = admin(box, cwd, [...args, ...t.flags], t.env);
    const out = JSON.stringify(r.json) + r.stderr;
    for (const leak of [filed().token, PLANTED, OLD_SECRET, 'ops@example.com', CANARY]) expect(out).not.toContain(leak);
    return r;
  };

  it(
    'lists every request newest first, one line each, redacted',
    () => {
      const r = run('requests', 'list');
      expect(r.code).toBe(0);
      const list = r.json.requests as { id: string; kind: string; shop: string; summary: string; urgency: string | null; createdAt: string }[];
      const { ids } = filed();
      expect(list.map((x) => x.id)).toEqual([ids.otherStore, ids.support, ids.diagnostics, ids.expansion, ids.feature, ids.old]);
      expect(r.json.since).toBeNull();
      const sup = list.find((x) => x.id === ids.support)!;
      expect(sup).toMatchObject({ kind: 'support', shop: 'a.myshopify.com', urgency: 'critical' });
      expect(sup.summary).toStartWith('delivery: Events stuck since noon; key [redacted secret] and [redacted email]');
      expect(list.find((x) => x.id === ids.diagnostics)!.summary).toBe('0 events, 1 endpoints, window 24h: see this');
      expect(list.find((x) => x.id === ids.old)!.summary).toBe('old one: token [redacted platform token]');
      expect(list.find((x) => x.id === ids.feature)).toMatchObject({ kind: 'feature', urgency: null, summary: 'CSV export: monthly audit' });
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'filters by --shop, --kind (one or several), --since and --limit',
    () => {
      const { ids } = filed();
      const idsOf = (...args: string[]) => {
        const r = run('requests', 'list', ...args);
        expect(r.code).toBe(0);
        return (r.json.requests as { id: string }[]).map((x) => x.id);
      };
      expect(idsOf('--shop', 'b.myshopify.com')).toEqual([ids.otherStore]);
      expect(idsOf('--shop', 'a.myshopify.com', '--kind', 'support')).toEqual([ids.support]);
      expect(idsOf('--kind', 'feature,expansion')).toEqual([ids.expansion, ids.feature, ids.old]);
      expect(idsOf('--kind', 'feature', '--since', '24h')).toEqual([ids.feature]);
      expect(idsOf('--limit', '2')).toEqual([ids.otherStore, ids.support]);
      expect(run('requests', 'list', '--since', '1h').json.since).toMatch(/^\d{4}-\d\d-\d\dT/);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'refuses a bad --kind, --limit or --since (exit 2) and an unknown --shop (exit 6)',
    () => {
      for (const args of [
        ['--kind', 'bug'],
        ['--kind', ''],
        ['--limit', '0'],
        ['--limit', '1001'],
        ['--since', 'soon'],
      ]) {
        const r = run('requests', 'list', ...args);
        expect(r.code, args.join(' ')).toBe(2);
        expect(r.json.error.code).toBe('invalid_input');
      }
      expect(run('requests', 'list', '--shop', 'nobody.myshopify.com').code).toBe(6);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'shows one request with its whole redacted body; an unknown id exits 6',
    () => {
      const { ids } = filed();
      const sup = run('requests', 'show', ids.support);
      expect(sup.code).toBe(0);
      expect(sup.json.request).toMatchObject({
        id: ids.support,
        kind: 'support',
        shop: 'a.myshopify.com',
        expiresAt: null,
        body: { category: 'delivery', urgency: 'critical', consent: true, links: { eventIds: [], endpointIds: [], diagnosticsShareId: null } },
      });
      expect(sup.json.request.body.summary).toBe('Events stuck\nsince noon; key [redacted secret] and [redacted email]');
      const diag = run('requests', 'show', ids.diagnostics);
      expect(diag.json.request.kind).toBe('diagnostics');
      expect(diag.json.request.expiresAt).toMatch(/^\d{4}-/);
      expect(diag.json.request.body.endpoints).toHaveLength(1);
      expect(run('requests', 'show', ids.old).json.request.body.problem).toBe('token [redacted platform token]');
      const none = run('requests', 'show', 'sup_nope');
      expect(none.code).toBe(6);
      expect(none.json.error.code).toBe('not_found');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'writes no audit row: reading changes nothing',
    async () => {
      const before = await auditRows();
      run('requests', 'list');
      run('requests', 'show', filed().ids.support);
      expect(await auditRows()).toBe(before);
    },
    SPAWN_TIMEOUT_MS,
  );
}

describe('hookrelay requests on SQLite', () => {
  const dir = join(box.root, 'data');
  let filed: Filed;
  beforeAll(async () => {
    const core = await openCore({ dataDir: dir });
    try {
      filed = await fileRequests(core);
    } finally {
      await core.repo.close();
    }
  }, SPAWN_TIMEOUT_MS);
  const count = async () => {
    const core = await openCore({ dataDir: dir, create: false });
    try {
      return (await runnerOf(core.repo).all<{ n: number }>('SELECT COUNT(*) AS "n" FROM audit_log', []))[0]!.n;
    } finally {
      await core.repo.close();
    }
  };
  checks(
    () => ({ flags: ['--data-dir', dir], env: {} }),
    () => filed,
    count,
  );

  it(
    'exits 6 where there is no database, saying where it looked',
    () => {
      const r = admin(box, cwd, ['requests', 'list', '--data-dir', join(box.root, 'empty')]);
      expect(r.code).toBe(6);
      expect(r.json.error.message).toContain('No hookrelay database');
    },
    SPAWN_TIMEOUT_MS,
  );
});

describe.if(!!TEST_DATABASE_URL)('hookrelay requests on PostgreSQL', () => {
  const key = Buffer.from(newSecretKey()).toString('hex');
  let url = '';
  let filed: Filed;
  const withPg = async <T>(fn: (core: Core) => Promise<T>): Promise<T> => {
    const saved = process.env.HOOKRELAY_SECRET_KEY;
    process.env.HOOKRELAY_SECRET_KEY = key;
    try {
      const core = await openCore({ databaseUrl: url });
      try {
        return await fn(core);
      } finally {
        await core.repo.close();
      }
    } finally {
      if (saved === undefined) delete process.env.HOOKRELAY_SECRET_KEY;
      else process.env.HOOKRELAY_SECRET_KEY = saved;
    }
  };
  beforeAll(async () => {
    url = (await freshDatabase()).url;
    filed = await withPg(fileRequests);
  }, SPAWN_TIMEOUT_MS);
  const count = () => withPg(async (core) => (await runnerOf(core.repo).all<{ n: number }>('SELECT COUNT(*) AS "n" FROM audit_log', []))[0]!.n);
  checks(
    () => ({ flags: [], env: { HOOKRELAY_DATABASE_URL: url, HOOKRELAY_SECRET_KEY: key } }),
    () => filed,
    count,
  );
});
