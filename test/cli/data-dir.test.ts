/** Where the database lives: flag > HOOKRELAY_DATA_DIR > a per-user default, the same for every command, never the cwd. */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultDataDir, locateDataDir } from '../../src/boot.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const box = adminBox();
afterAll(() => rmSync(box.root, { recursive: true, force: true }));
const SHOP = 'dd.myshopify.com';

describe('data directory resolution', () => {
  it(
    'is flag > HOOKRELAY_DATA_DIR > $XDG_DATA_HOME/hookrelay > ~/.local/share/hookrelay',
    () => {
      expect(locateDataDir('x', { HOOKRELAY_DATA_DIR: '/env', HOME: '/h' })).toMatchObject({ source: '--data-dir' });
      expect(locateDataDir(undefined, { HOOKRELAY_DATA_DIR: '/env', HOME: '/h' })).toEqual({ path: '/env', source: 'HOOKRELAY_DATA_DIR' });
      expect(locateDataDir(undefined, { XDG_DATA_HOME: '/xdg', HOME: '/h' })).toEqual({ path: '/xdg/hookrelay', source: 'default' });
      expect(defaultDataDir({ HOME: '/h' })).toBe('/h/.local/share/hookrelay');
      expect(defaultDataDir({ XDG_DATA_HOME: 'relative', HOME: '/h' })).toBe('/h/.local/share/hookrelay');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'admin commands other than init/migrate/serve never create a database: they say where they looked (exit 6)',
    () => {
      const cwd = box.dir('somewhere');
      for (const args of [
        ['grant', 'list'],
        ['grant', 'issue', '--shop', SHOP, '--tier', 'observer', '--ttl', '1h'],
        ['plan', 'set', '--shop', SHOP, '--plan', 'growth'],
        ['store', 'show'],
        ['audit'],
      ]) {
        const r = admin(box, cwd, args);
        expect(r.code, args.join(' ')).toBe(6);
        expect(r.json.error.code).toBe('not_found');
        expect(r.json.error.message).toContain(join(box.home, '.local/share/hookrelay'));
        expect(r.json.error.message).toContain('--data-dir');
        expect(r.json.error.message).toContain('HOOKRELAY_DATA_DIR');
        expect(r.json.error.details).toEqual({ dataDir: join(box.home, '.local/share/hookrelay'), source: 'default' });
      }
      expect(existsSync(join(box.home, '.local'))).toBe(false);
      expect(existsSync(join(cwd, '.hookrelay'))).toBe(false);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'init in one folder and grant in another use the same per-user database; init prints where it is',
    () => {
      const a = box.dir('project-a');
      const b = box.dir('project-b');
      const init = admin(box, a, ['init', '--shop', SHOP]);
      expect(init.code).toBe(0);
      const where = join(box.home, '.local/share/hookrelay');
      expect(init.json.dataDir).toBe(where);
      expect(init.stderr).toContain(`data directory ${where} (from default`);
      expect(init.stderr).toContain(`store ${SHOP}: destination log`);
      expect(existsSync(join(where, 'hookrelay.db'))).toBe(true);
      expect(existsSync(join(a, '.hookrelay'))).toBe(false);

      const issued = admin(box, b, ['grant', 'issue', '--shop', SHOP, '--tier', 'observer', '--ttl', '1h']);
      expect(issued.code).toBe(0);
      const listed = admin(box, box.dir('project-c'), ['grant', 'list']);
      expect(listed.json.grants.map((g: { grantId: string }) => g.grantId)).toEqual([issued.json.grantId]);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'points at a ./.hookrelay database left by an older version, without using it',
    () => {
      const cwd = box.dir('upgraded');
      mkdirSync(join(cwd, '.hookrelay'));
      writeFileSync(join(cwd, '.hookrelay', 'hookrelay.db'), '');
      const emptyHome = { HOME: join(box.root, 'other-home') };
      const r = admin(box, cwd, ['grant', 'list'], emptyHome);
      expect(r.code).toBe(6);
      expect(r.json.error.message).toContain(`pass --data-dir ${join(cwd, '.hookrelay')} to keep using it`);
      const migrated = admin(box, cwd, ['migrate'], emptyHome);
      expect(migrated.json.dataDir).toBe(join(box.root, 'other-home/.local/share/hookrelay'));
      expect(migrated.stderr).toContain('A database from an older version is in');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'HOOKRELAY_DATA_DIR and --data-dir choose another; migrate creates and prints it',
    () => {
      const cwd = box.dir('elsewhere');
      const envDir = join(box.root, 'env-data');
      const viaEnv = admin(box, cwd, ['grant', 'list'], { HOOKRELAY_DATA_DIR: envDir });
      expect(viaEnv.code).toBe(6);
      expect(viaEnv.json.error.details).toEqual({ dataDir: envDir, source: 'HOOKRELAY_DATA_DIR' });

      const migrated = admin(box, cwd, ['migrate'], { HOOKRELAY_DATA_DIR: envDir });
      expect(migrated.code).toBe(0);
      expect(migrated.json.dataDir).toBe(envDir);
      expect(migrated.stderr).toContain(`data directory ${envDir} (from HOOKRELAY_DATA_DIR`);
      expect(admin(box, cwd, ['grant', 'list'], { HOOKRELAY_DATA_DIR: envDir }).json).toEqual({ grants: [] });

      const flagDir = join(box.root, 'flag-data');
      const viaFlag = admin(box, cwd, ['grant', 'list', '--data-dir', flagDir], { HOOKRELAY_DATA_DIR: envDir });
      expect(viaFlag.code).toBe(6);
      expect(viaFlag.json.error.details).toEqual({ dataDir: flagDir, source: '--data-dir' });
      expect(existsSync(flagDir)).toBe(false);
    },
    SPAWN_TIMEOUT_MS,
  );
});
