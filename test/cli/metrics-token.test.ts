/**
 * `hookrelay metrics-token issue|list|revoke` on the local database (SQLite, and PostgreSQL when
 * HOOKRELAY_TEST_DATABASE_URL is set): the token printed once and working on /metrics until revoked, audited with a
 * human actor, never in a list, an audit row or the database's bytes.
 */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import parse from 'parse-prometheus-text-format';
import { openCore } from '../../src/boot.ts';
import type { Core } from '../../src/core.ts';
import { newSecretKey } from '../../src/lib/crypto.ts';
import { createApp } from '../../src/server/app.ts';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';
import { CANARY, dropCreated, freshDatabase } from './pg-db.ts';
import { runnerOf } from '../../db/runner.ts';

// These tests spawn the CLI: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const box = adminBox('hookrelay-metrics-token-');
const cwd = box.dir('work');
afterAll(async () => {
  rmSync(box.root, { recursive: true, force: true });
  await dropCreated();
}, 60_000);

const SHOP = 'mt.myshopify.com';

type Target = { flags: string[]; env: Record<string, string> };
type Entry = {
  operationId: string;
  actorKind: string;
  actorLabel: string;
  storeId: string | null;
  targetId: string | null;
  outcome: string;
  errorCode: string | null;
  transition: string | null;
};

/** The same checks on either backend: `target` names the database, `withCore` opens it in this process. */
function checks(target: () => Target, withCore: <T>(fn: (core: Core) => Promise<T>) => Promise<T>) {
  /** Everything printed, so a test can check no output holds the token. */
  const printed: string[] = [];
  const run = (...args: string[]) => {
    const t = target();
    const r = admin(box, cwd, [...args, ...t.flags], t.env);
    printed.push(JSON.stringify(r.json), r.stderr);
    expect(JSON.stringify(r.json) + r.stderr).not.toContain(CANARY);
    return r;
  };
  const scrape = (token: string) =>
    withCore(async (core) => {
      const res = await createApp(core).fetch(new Request('http://local/metrics', { headers: { authorization: `Bearer ${token}` } }));
      return { status: res.status, text: await res.text() };
    });
  let issued: { tokenId: string; token: string; storeId: string };

  it(
    'issue prints the token once (hrm_…), for the only store; it scrapes /metrics; list shows it without the token',
    async () => {
      expect(run('init', '--shop', SHOP).code).toBe(0);
      const r = run('metrics-token', 'issue', '--label', 'prometheus', '--actor', 'Jane Ops');
      expect(r.code).toBe(0);
      issued = r.json;
      expect(r.json).toMatchObject({ shopDomain: SHOP, label: 'prometheus', state: 'active' });
      expect(issued.token).toMatch(/^hrm_[0-9A-Za-z]{43}$/);
      expect(r.json.note).toContain('shown this once');

      const ok = await scrape(issued.token);
      expect(ok.status).toBe(200);
      expect(parse(ok.text).some((f) => f.name === 'hookrelay_handoff_backlog')).toBe(true);

      const list = run('metrics-token', 'list');
      expect(list.code).toBe(0);
      expect(list.json.metricsTokens).toEqual([
        {
          tokenId: issued.tokenId,
          storeId: issued.storeId,
          shopDomain: SHOP,
          label: 'prometheus',
          createdAt: expect.any(String),
          revokedAt: null,
          state: 'active',
        },
      ]);
      expect(JSON.stringify(list.json)).not.toContain(issued.token);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'refuses a token as the id to revoke and a label shaped like one, unechoed (exit 2)',
    () => {
      const asId = run('metrics-token', 'revoke', issued.token);
      expect(asId.code).toBe(2);
      expect(asId.json.error.code).toBe('invalid_input');
      const label = run('metrics-token', 'issue', '--label', issued.token);
      expect(label.code).toBe(2);
      expect(run('metrics-token', 'revoke', 'mtk_0000000000000000').code).toBe(6);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'revoke makes the next scrape 401; issue and revoke are audited with a human actor, never the token',
    async () => {
      const r = run('metrics-token', 'revoke', issued.tokenId);
      expect(r.code).toBe(0);
      expect(r.json).toMatchObject({ tokenId: issued.tokenId, state: 'revoked', alreadyRevoked: false });
      expect((await scrape(issued.token)).status).toBe(401);

      const audit = run('audit', '--since', '1h');
      const rows = (audit.json.entries as Entry[]).filter((e) => e.operationId.endsWith('MetricsToken'));
      const me = rows.find((e) => e.actorLabel !== 'Jane Ops')!.actorLabel;
      expect(rows.map((e) => [e.operationId, e.actorKind, e.actorLabel, e.outcome, e.errorCode, e.targetId, e.transition])).toEqual([
        ['issueMetricsToken', 'human', 'Jane Ops', 'ok', null, issued.tokenId, 'issued'],
        ['revokeMetricsToken', 'human', me, 'error', 'invalid_input', null, null],
        ['issueMetricsToken', 'human', me, 'error', 'invalid_input', null, null],
        ['revokeMetricsToken', 'human', me, 'error', 'not_found', null, null],
        ['revokeMetricsToken', 'human', me, 'ok', null, issued.tokenId, 'revoked'],
      ]);
      expect(rows.filter((e) => e.outcome === 'ok').every((e) => e.storeId === issued.storeId)).toBe(true);
      // Every output after issue's: lists, refusals, revoke, audit.
      for (const out of printed.slice(4)) expect(out).not.toContain(issued.token);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'needs --shop on a box with several stores (exit 2, naming them)',
    () => {
      expect(run('init', '--shop', 'second.myshopify.com').code).toBe(0);
      const r = run('metrics-token', 'issue');
      expect(r.code).toBe(2);
      expect(r.json.error.message).toContain('second.myshopify.com');
      expect(run('metrics-token', 'issue', '--shop', 'second.myshopify.com').code).toBe(0);
      expect((run('metrics-token', 'list', '--shop', SHOP).json.metricsTokens as unknown[]).length).toBe(1);
    },
    SPAWN_TIMEOUT_MS,
  );

  return () => issued;
}

describe('hookrelay metrics-token on SQLite', () => {
  const dir = join(box.root, 'data');
  const withCore = async <T>(fn: (core: Core) => Promise<T>): Promise<T> => {
    const core = await openCore({ dataDir: dir, create: false });
    try {
      return await fn(core);
    } finally {
      await core.repo.close();
    }
  };
  const issued = checks(() => ({ flags: ['--data-dir', dir], env: {} }), withCore);

  it('the database file (and its WAL) never holds the token, nor its random part: only its SHA-256', () => {
    const { token } = issued();
    // Booleans, not the bytes: a failure must not print the database.
    const bytes = ['hookrelay.db', 'hookrelay.db-wal']
      .map((name) => join(dir, name))
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file).toString('latin1'))
      .join('');
    expect(bytes.includes(token)).toBe(false);
    expect(bytes.includes(token.slice(4, 24))).toBe(false);
    expect(bytes.includes(`metrics-token:${new Bun.CryptoHasher('sha256').update(token).digest('hex')}`)).toBe(true);
  });
});

describe.if(!!TEST_DATABASE_URL)('hookrelay metrics-token on PostgreSQL', () => {
  const key = Buffer.from(newSecretKey()).toString('hex');
  let url = '';
  const withCore = async <T>(fn: (core: Core) => Promise<T>): Promise<T> => {
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
  }, SPAWN_TIMEOUT_MS);
  const issued = checks(() => ({ flags: [], env: { HOOKRELAY_DATABASE_URL: url, HOOKRELAY_SECRET_KEY: key } }), withCore);

  it('no table holds the token', async () => {
    const { token } = issued();
    await withCore(async (core) => {
      const tables = await runnerOf(core.repo).all<{ name: string }>(
        'SELECT table_name AS "name" FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = \'BASE TABLE\'',
        [],
      );
      expect(tables.length).toBeGreaterThan(5);
      for (const { name } of tables) expect(JSON.stringify(await runnerOf(core.repo).all(`SELECT * FROM "${name}"`, []))).not.toContain(token.slice(4, 24));
    });
  });
});
