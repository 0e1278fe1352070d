/**
 * A SQLite box marked moved (what `migrate --from` leaves behind, see pg-moved.test.ts): serve refuses it with the
 * new location unless --force-moved, admin changes are refused while reads work, and `migrate --unmark-moved`
 * takes the marker off.
 */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { migrateSqlite, openSqliteDatabase, sqliteRepo } from '../../db/sqlite/repo.ts';
import { markMoved } from '../../src/ops/moved-box.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';
import { startServe, type Served } from './pg-db.ts';

setDefaultTimeout(60_000);

const box = adminBox('hookrelay-mv-');
const cwd = box.dir('work');
const SHOP = 'mv.myshopify.com';
const running: Served[] = [];
afterAll(async () => {
  for (const s of running) await s.stop();
  rmSync(box.root, { recursive: true, force: true });
});

const WHERE = 'the PostgreSQL database hookrelay_prod on db.internal:5432';

/** A box with a store, marked moved as migrate --from marks it. */
async function movedBox(name: string): Promise<string> {
  const dataDir = join(box.root, name);
  expect(admin(box, cwd, ['init', '--shop', SHOP, '--data-dir', dataDir]).code).toBe(0);
  const db = openSqliteDatabase({ path: join(dataDir, 'hookrelay.db') });
  try {
    await migrateSqlite(db);
    await markMoved(sqliteRepo(db), dataDir, { name: 'hookrelay_prod', host: 'db.internal', port: 5432 }, Date.now());
  } finally {
    db.close();
  }
  return dataDir;
}

async function serve(dataDir: string, ...args: string[]) {
  const s = await startServe(['--data-dir', dataDir, ...args], { cwd, env: box.env });
  running.push(s);
  return s;
}

describe('a box marked moved', () => {
  it(
    'serve refuses it (exit 4) naming where it went and how past it; --force-moved serves it with a warning',
    async () => {
      const dataDir = await movedBox('box-serve');
      const refused = admin(box, cwd, ['serve', '--port', '0', '--data-dir', dataDir]);
      expect(refused.code).toBe(4);
      expect(refused.json.error.code).toBe('conflict');
      expect(refused.json.error.message).toContain(`was moved to ${WHERE}`);
      expect(refused.json.error.message).toContain('--force-moved');
      expect(refused.json.error.message).toContain(`hookrelay migrate --data-dir ${dataDir} --unmark-moved`);
      expect(refused.json.error.details.movedTo).toMatchObject({ dialect: 'postgres', name: 'hookrelay_prod', host: 'db.internal', port: 5432 });
      expect(refused.stderr).not.toContain('listening');

      const forced = await serve(dataDir, '--force-moved');
      expect(forced.log).toContain(`--force-moved: serving this box although it was moved to ${WHERE}`);
      expect((await fetch(`${forced.url}/status`)).status).toBe(200);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'refuses admin changes (exit 4, nothing written) while reads still answer, with a warning',
    async () => {
      const dataDir = await movedBox('box-admin');
      const run = (...args: string[]) => admin(box, cwd, [...args, '--data-dir', dataDir]);
      const set = run('store', 'set', '--public-url', 'https://relay.example.com');
      expect(set.code).toBe(4);
      expect(set.json.error.message).toContain(`was moved to ${WHERE}`);
      expect(set.json.error.message).toContain('make changes there');
      const show = run('store', 'show');
      expect(show.code).toBe(0);
      expect(show.json).toMatchObject({ stores: [{ shopDomain: SHOP }], settings: { publicUrl: null } });
      expect(show.stderr).toContain(`This box was moved to ${WHERE}`);
      expect(run('migrate').code).toBe(4);
      // Every command that changes a box: init, grant issue and revoke, plan set; a read (grant list) still answers.
      for (const args of [
        ['init', '--shop', SHOP],
        ['grant', 'issue', '--shop', SHOP, '--tier', 'observer', '--ttl', '1h'],
        ['grant', 'revoke', 'gr_0000000000000000000000000'],
        ['plan', 'set', '--shop', SHOP, '--plan', 'growth'],
      ]) {
        const r = run(...args);
        expect({ args: args.slice(0, 2), code: r.code, moved: r.json?.error?.message?.includes(`was moved to ${WHERE}`) }).toEqual({
          args: args.slice(0, 2),
          code: 4,
          moved: true,
        });
      }
      expect(run('grant', 'list').code).toBe(0);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'stays marked by its database alone (the file copied without its MOVED note)',
    async () => {
      const dataDir = await movedBox('box-row');
      rmSync(join(dataDir, 'MOVED'));
      const refused = admin(box, cwd, ['serve', '--port', '0', '--data-dir', dataDir]);
      expect(refused.code).toBe(4);
      expect(refused.json.error.message).toContain(`was moved to ${WHERE}`);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'migrate --unmark-moved takes the marker off: serve and store set work again',
    async () => {
      const dataDir = await movedBox('box-unmark');
      const unmarked = admin(box, cwd, ['migrate', '--data-dir', dataDir, '--unmark-moved']);
      expect(unmarked.code).toBe(0);
      expect(unmarked.json).toMatchObject({ dialect: 'sqlite', unmarkedMoved: { name: 'hookrelay_prod' } });
      expect(unmarked.stderr).toContain('no longer marked moved');
      expect(existsSync(join(dataDir, 'MOVED'))).toBe(false);
      expect(admin(box, cwd, ['store', 'set', '--public-url', 'https://relay.example.com', '--data-dir', dataDir]).code).toBe(0);
      const s = await serve(dataDir);
      expect(s.log).not.toContain('--force-moved');
      // The audit row says what was done, never where to.
      const audit = admin(box, cwd, ['audit', '--data-dir', dataDir]).json;
      const row = JSON.stringify(audit).match(/"transition":"[^"]*took the moved marker off[^"]*"/);
      expect(row).not.toBeNull();
      expect(row![0]).not.toContain('db.internal');
    },
    SPAWN_TIMEOUT_MS,
  );
});
