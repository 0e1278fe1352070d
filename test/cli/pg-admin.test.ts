/**
 * The admin commands on PostgreSQL behave as on SQLite (init, grant issue/list/revoke, plan set, store show/set,
 * audit, migrate, and the audit rows of those that change something), create nothing before init, and never print
 * the database URL: not in output, logs, errors or audit rows, including when the database cannot be reached.
 */
import { afterAll, describe, expect, it } from 'bun:test';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { newSecretKey } from '../../src/lib/crypto.ts';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS, type AdminResult } from './admin-run.ts';
import { closedPort } from './harness.ts';
import { CANARY, canaryUrl, dropCreated, freshDatabase, limitedRole, query } from './pg-db.ts';

const box = adminBox('hookrelay-pgadmin-');
const cwd = box.dir('work');
const SHOP = 'pga.myshopify.com';
const KEY = Buffer.from(newSecretKey()).toString('hex');
afterAll(async () => {
  rmSync(box.root, { recursive: true, force: true });
  await dropCreated(); // dropping a database waits for a checkpoint: seconds on a loaded machine
}, 60_000);

/** Every document and log line a run produced, for the canary check. */
const seen: string[] = [];
function run(args: string[], env: Record<string, string> = {}): AdminResult {
  const r = admin(box, cwd, args, env);
  seen.push(JSON.stringify(r.json), r.stderr);
  return r;
}

/** Where the data lives, and the error texts that say so: the only fields that differ between the backends. */
const WHERE = new Set(['dataDir', 'database', 'dialect', 'message', 'details']);

/** A document with ids, tokens and times blanked: what must be equal between the backends. */
function shape(doc: unknown): unknown {
  if (Array.isArray(doc)) return doc.map(shape);
  if (doc && typeof doc === 'object')
    return Object.fromEntries(
      Object.entries(doc)
        .filter(([k]) => !WHERE.has(k))
        .map(([k, v]) => [k, shape(v)]),
    );
  if (typeof doc === 'string' && /^(gr|st|aud|ep)_|^hrg_|^\d{4}-\d\d-\d\dT/.test(doc)) return '<id>';
  return doc;
}

/** The admin sequence an operator runs; returns each step's exit code and document shape. */
function sequence(target: { flag: string[]; env: Record<string, string> }) {
  const steps: Record<string, unknown> = {};
  const step = (name: string, args: string[], expectCode = 0) => {
    const r = run([...args, ...target.flag], target.env);
    expect(r.code, `${name}: ${JSON.stringify(r.json)} ${r.stderr}`).toBe(expectCode);
    steps[name] = { code: r.code, doc: shape(r.json) };
    return r;
  };
  expect(step('list before init', ['grant', 'list'], 6).json.error.code).toBe('not_found');
  const init = step('init', ['init', '--shop', SHOP]);
  expect(init.json.created).toBe(true);
  const issued = step('grant issue', ['grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '1h', '--label', 'ci']);
  expect(issued.json.token).toStartWith('hrg_');
  expect(step('grant list', ['grant', 'list']).json.grants.map((g: { state: string }) => g.state)).toEqual(['active']);
  step('grant revoke', ['grant', 'revoke', issued.json.grantId]);
  expect(step('grant list revoked', ['grant', 'list', '--shop', SHOP]).json.grants[0].state).toBe('revoked');
  step('plan set', ['plan', 'set', '--shop', SHOP, '--plan', 'growth']);
  step('store set', ['store', 'set', '--public-url', 'https://relay.example.com']);
  const shown = step('store show', ['store', 'show', '--shop', SHOP]);
  expect(JSON.stringify(shown.json)).toContain('https://relay.example.com');
  expect(JSON.stringify(shown.json)).toContain('growth');
  const audit = step('audit', ['audit', '--since', '1h']);
  type Entry = { operationId: string; actorKind: string; actorLabel: string; storeId: string | null; outcome: string; transition: string | null };
  const entries = audit.json.entries as Entry[];
  expect(entries.map((e) => [e.operationId, e.actorKind, e.storeId, e.outcome])).toEqual([
    ['initStore', 'human', init.json.store.storeId, 'ok'],
    ['issueGrant', 'human', init.json.store.storeId, 'ok'],
    ['revokeGrant', 'human', init.json.store.storeId, 'ok'],
    ['setPlan', 'human', init.json.store.storeId, 'ok'],
    ['setStoreSettings', 'human', null, 'ok'],
  ]);
  const me = entries[0]!.actorLabel;
  step('init again', ['init', '--shop', SHOP]);
  const migrated = step('migrate', ['migrate', '--actor', 'dba on call']);
  expect(migrated.json.applied).toEqual([]);
  const last = step('audit after migrate', ['audit', '--since', '1h', '--limit', '2']);
  expect(last.json.entries.map((e: Entry) => [e.operationId, e.actorLabel, e.transition])).toEqual([
    ['initStore', me, 'unchanged'],
    ['migrate', 'dba on call', 'applied 0 migrations'],
  ]);
  return { steps, init, migrated };
}

describe.if(!!TEST_DATABASE_URL)('admin commands on PostgreSQL', () => {
  it(
    'run as on SQLite, create nothing before init, and name the database without its URL',
    async () => {
      const sqliteDir = join(box.root, 'sqlite-data');
      const onSqlite = sequence({ flag: ['--data-dir', sqliteDir], env: {} });
      expect(onSqlite.migrated.json.dialect).toBe('sqlite');

      const db = await freshDatabase();
      const pgDataDir = join(box.root, 'pg-data');
      // --database-url for some, HOOKRELAY_DATABASE_URL for others: both paths are used by the sequence's steps.
      const onPg = sequence({ flag: ['--database-url', db.url, '--data-dir', pgDataDir], env: { HOOKRELAY_SECRET_KEY: KEY } });
      expect(onPg.steps).toEqual(onSqlite.steps);
      expect(onPg.migrated.json.dialect).toBe('postgres');
      expect(onPg.init.json.database).toEqual({
        dialect: 'postgres',
        name: db.name,
        host: '127.0.0.1',
        port: Number(new URL(TEST_DATABASE_URL!).port || 5432),
      });
      expect(onPg.init.stderr).toContain(`PostgreSQL database ${db.name} on 127.0.0.1:`);
      expect(onPg.init.stderr).toContain('(from --database-url); the data directory is not used');
      expect(existsSync(pgDataDir)).toBe(false);

      const viaEnv = run(['grant', 'list'], { HOOKRELAY_SECRET_KEY: KEY, HOOKRELAY_DATABASE_URL: db.url });
      expect(viaEnv.code).toBe(0);
      expect(viaEnv.json.grants).toHaveLength(1);
      const stores = await query<{ plan: string }>(db.url, 'SELECT plan FROM stores');
      expect(stores).toEqual([{ plan: 'growth' }]);
      expect(seen.join('\n')).not.toContain(CANARY);
    },
    SPAWN_TIMEOUT_MS * 2,
  );

  it(
    'leaves an uninitialised database untouched: admin commands other than init and migrate refuse it',
    async () => {
      const db = await freshDatabase();
      const env = { HOOKRELAY_SECRET_KEY: KEY, HOOKRELAY_DATABASE_URL: db.url };
      for (const args of [['grant', 'list'], ['audit'], ['store', 'show'], ['plan', 'set', '--shop', SHOP, '--plan', 'growth']]) {
        const r = run(args, env);
        expect(r.code).toBe(6);
        expect(r.json.error.message).toContain(`No hookrelay database in the PostgreSQL database ${db.name} on 127.0.0.1:`);
      }
      expect(await query(db.url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")).toEqual([]);
      expect(seen.join('\n')).not.toContain(CANARY);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'answers an unreachable or misnamed database with a stable error that holds no URL',
    async () => {
      const port = closedPort();
      const refused = canaryUrl('hr_nowhere', `127.0.0.1:${port}`);
      const noHost = canaryUrl('hr_nowhere', 'no-such-host.invalid:5432');
      const env = { HOOKRELAY_SECRET_KEY: KEY };
      for (const url of [refused, noHost]) {
        for (const args of [['grant', 'list'], ['init', '--shop', SHOP], ['migrate'], ['serve', '--port', '0'], ['audit']]) {
          const r = run([...args, '--database-url', url], env);
          expect(r.code).toBe(1);
          expect(r.json.error.code).toBe('storage_unavailable');
          expect(r.json.error.message).toStartWith('Cannot reach the database (PostgreSQL database hr_nowhere on ');
          expect(r.json.error.message).toContain(url === refused ? 'connection refused' : 'host not found');
        }
      }
      const missing = run(['grant', 'list', '--database-url', canaryUrl('hr_no_such_database_x')], env);
      expect(missing.code).toBe(6);
      expect(missing.json.error.message).toContain('PostgreSQL database hr_no_such_database_x on 127.0.0.1');

      // A server-side refusal (no right to create the schema) keeps the server's words, still without the URL.
      const db = await freshDatabase();
      const role = await limitedRole();
      const limited = new URL(db.url);
      limited.username = role;
      const refusedSetup = run(['init', '--shop', SHOP, '--database-url', limited.toString()], env);
      expect(refusedSetup.code).toBe(1);
      expect(refusedSetup.json.error.message).toContain(`The PostgreSQL database ${db.name} on 127.0.0.1:`);
      expect(refusedSetup.json.error.message).toContain('permission denied');

      const malformed = run(['grant', 'list', '--database-url', `postgres://u:${CANARY}@[bad/x`], env);
      expect(malformed.json.error.code).toBe('invalid_input');
      const noKey = run(['init', '--shop', SHOP, '--database-url', refused]);
      expect(noKey.json.error.message).toContain('set HOOKRELAY_SECRET_KEY');
      // A URL typed where the group expects a command is masked too.
      const misplaced = run(['grant', '--database-url', refused, 'list'], env);
      expect(misplaced.code).toBe(2);
      const wrongScheme = run(['grant', 'list', '--database-url', `mysql://u:${CANARY}@h/x`], env);
      expect(wrongScheme.json.error.code).toBe('invalid_input');

      const all = seen.join('\n');
      expect(all).not.toContain(CANARY);
      expect(all.match(/.{0,80}postgres(ql)?:\/\/\w.{0,80}/)?.[0] ?? null).toBeNull();
    },
    SPAWN_TIMEOUT_MS * 3,
  );
});
