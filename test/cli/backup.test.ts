/**
 * `hookrelay backup` and `restore` on SQLite: one checksummed file, the key in it only when asked; a restore that
 * checks the file, the key and the target before it replaces anything; one audit row each; nothing for PostgreSQL
 * but the way to pg_dump. The round trip under load with a running serve is test/e2e/backup-under-load.test.ts.
 */
import { Database } from 'bun:sqlite';
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteDatabase, sqliteRepo } from '../../db/sqlite/repo.ts';
import { keyFingerprint } from '../../src/ops/backup.ts';
import { proveBoxKey } from '../../src/ops/box-key.ts';
import { parseSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';

// These tests spawn the CLI: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const box = adminBox('hookrelay-backup-');
afterAll(() => rmSync(box.root, { recursive: true, force: true }));
const cwd = box.dir('work');
const SHOP = 'bk.myshopify.com';
const run = (...args: string[]) => admin(box, cwd, args);
const dir = (name: string) => join(box.root, name);
const file = (name: string) => join(cwd, name);

const source = dir('source');
expect(run('init', '--shop', SHOP, '--data-dir', source).code).toBe(0);
const keyText = readFileSync(join(source, 'secret.key'), 'utf8');

const rows = (dataDir: string, sql: string) => {
  const db = new Database(join(dataDir, 'hookrelay.db'), { readonly: true });
  try {
    return db.query(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
};
const grantIds = (dataDir: string) => rows(dataDir, 'SELECT id FROM grants ORDER BY id').map((r) => r.id);
const auditOf = (dataDir: string, op: string) =>
  rows(
    dataDir,
    `SELECT actor_kind AS actorKind, actor_label AS actorLabel, outcome, error_code AS errorCode, transition FROM audit_log WHERE operation_id = '${op}' ORDER BY at, id`,
  );
/** The header line of a backup and its sections, as the README describes the format. */
const parse = (path: string) => {
  const bytes = readFileSync(path);
  const end = bytes.indexOf(0x0a);
  return { header: JSON.parse(bytes.subarray(0, end).toString()), bytes, offset: end + 1 };
};

describe('backup', () => {
  it(
    '--include-key: one 0600 file, a JSON header line, the database and the key; the answer never prints the key; restore brings the box back as it was',
    () => {
      const grant = run('grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '1h', '--data-dir', source);
      expect(grant.code).toBe(0);
      const r = run('backup', '--to', file('with-key.hrbk'), '--include-key', '--data-dir', source, '--actor', 'Backup Bot');
      expect(r.code).toBe(0);
      expect(r.json).toMatchObject({
        dialect: 'sqlite',
        file: file('with-key.hrbk'),
        serveRunning: false,
        counts: { stores: 1, endpoints: 0, events: 0 },
        key: { included: true },
      });
      expect(JSON.stringify(r.json) + r.stderr).not.toContain(keyText);
      expect(statSync(file('with-key.hrbk')).mode & 0o777).toBe(0o600);

      const { header, bytes, offset } = parse(file('with-key.hrbk'));
      expect(header).toMatchObject({
        format: 'hookrelay-backup',
        version: 1,
        dialect: 'sqlite',
        key: { included: true, fingerprint: keyFingerprint(parseSecretKey(keyText)!) },
      });
      expect(header.sections.map((s: { name: string }) => s.name)).toEqual(['hookrelay.db', 'secret.key']);
      const db = header.sections[0];
      expect(db.sha256).toBe(r.json.database.sha256);
      expect(new Bun.CryptoHasher('sha256').update(bytes.subarray(offset, offset + db.bytes)).digest('hex')).toBe(db.sha256);
      expect(bytes.length).toBe(offset + db.bytes + header.sections[1].bytes);
      expect(auditOf(source, 'backup')).toEqual([
        { actorKind: 'human', actorLabel: 'Backup Bot', outcome: 'ok', errorCode: null, transition: 'backup of 0 events, key included' },
      ]);

      const target = dir('restored-with-key');
      const restored = run('restore', '--from', file('with-key.hrbk'), '--data-dir', target);
      expect(restored.code).toBe(0);
      expect(restored.json).toMatchObject({ dialect: 'sqlite', dataDir: target, key: { source: 'backup' }, replaced: [], applied: [] });
      expect(JSON.stringify(restored.json) + restored.stderr).not.toContain(keyText);
      expect(readFileSync(join(target, 'secret.key'), 'utf8')).toBe(keyText);
      expect(statSync(join(target, 'secret.key')).mode & 0o777).toBe(0o600);
      expect(statSync(join(target, 'hookrelay.db')).mode & 0o777).toBe(0o600);
      expect(grantIds(target)).toEqual(grantIds(source));
      expect(auditOf(target, 'restore')).toMatchObject([
        { actorKind: 'human', outcome: 'ok', transition: expect.stringMatching(/^restored a backup of .* \(0 events, key from backup\)$/) },
      ]);
      // What the box held at the backup, its own backup row not yet written, and no staging file left behind.
      expect(auditOf(target, 'backup')).toEqual([]);
      expect(readdirSync(target).filter((f) => f.includes('restoring'))).toEqual([]);
      expect(readdirSync(cwd).filter((f) => f.includes('partial'))).toEqual([]);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'without --include-key the key stays out of the file and the answer names it; restore wants the right key before it writes anything',
    () => {
      const r = run('backup', '--to', file('no-key.hrbk'), '--data-dir', source);
      expect(r.code).toBe(0);
      expect(r.json.key).toEqual({ included: false, fingerprint: keyFingerprint(parseSecretKey(keyText)!), file: join(source, 'secret.key') });
      expect(readFileSync(file('no-key.hrbk')).includes(keyText)).toBe(false);
      expect(parse(file('no-key.hrbk')).header.sections.map((s: { name: string }) => s.name)).toEqual(['hookrelay.db']);

      const target = dir('restored-no-key');
      const noKey = run('restore', '--from', file('no-key.hrbk'), '--data-dir', target);
      expect(noKey.code).toBe(2);
      expect(noKey.json.error.message).toContain('--key-file');
      expect(existsSync(join(target, 'hookrelay.db'))).toBe(false);

      writeFileSync(file('other.key'), 'ab'.repeat(32));
      const wrong = run('restore', '--from', file('no-key.hrbk'), '--data-dir', target, '--key-file', file('other.key'));
      expect(wrong.code).toBe(2);
      expect(wrong.json.error.message).toContain('is not the key of this backup');
      expect(JSON.stringify(wrong.json)).not.toContain('ab'.repeat(32));
      const wrongEnv = admin(box, cwd, ['restore', '--from', file('no-key.hrbk'), '--data-dir', target], { HOOKRELAY_SECRET_KEY: 'ab'.repeat(32) });
      expect(wrongEnv.code).toBe(2);
      expect(existsSync(join(target, 'hookrelay.db'))).toBe(false);

      const ok = run('restore', '--from', file('no-key.hrbk'), '--data-dir', target, '--key-file', join(source, 'secret.key'));
      expect(ok.code).toBe(0);
      expect(ok.json.key.source).toBe('--key-file');
      expect(readFileSync(join(target, 'secret.key'), 'utf8')).toBe(keyText);
      expect(grantIds(target)).toEqual(grantIds(source));

      // The key as serve may hold it, in the environment: nothing written beside the box.
      const envTarget = dir('restored-env-key');
      const env = admin(box, cwd, ['restore', '--from', file('no-key.hrbk'), '--data-dir', envTarget], { HOOKRELAY_SECRET_KEY: keyText });
      expect(env.code).toBe(0);
      expect(env.json.key.source).toBe('HOOKRELAY_SECRET_KEY');
      expect(existsSync(join(envTarget, 'secret.key'))).toBe(false);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'refuses to overwrite --to unless --force; refuses a data directory without a database (exit 6)',
    () => {
      writeFileSync(file('taken.hrbk'), 'keep me');
      const taken = run('backup', '--to', file('taken.hrbk'), '--data-dir', source);
      expect(taken.code).toBe(4);
      expect(readFileSync(file('taken.hrbk'), 'utf8')).toBe('keep me');
      expect(run('backup', '--to', file('taken.hrbk'), '--data-dir', source, '--force').code).toBe(0);
      expect(parse(file('taken.hrbk')).header.format).toBe('hookrelay-backup');
      const none = run('backup', '--to', file('none.hrbk'), '--data-dir', dir('no-box-here'));
      expect(none.code).toBe(6);
      expect(existsSync(file('none.hrbk'))).toBe(false);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'on PostgreSQL refuses (exit 4) with the way to back it up: pg_dump and the key; the URL is never echoed',
    () => {
      const url = 'postgres://backup_user:Sup3rSecretPw@127.0.0.1:1/hookrelay';
      const r = run('backup', '--to', file('pg.hrbk'), '--database-url', url);
      expect(r.code).toBe(4);
      expect(r.json.error.code).toBe('action_refused');
      expect(r.json.error.message).toContain('pg_dump');
      expect(r.json.error.message).toContain('HOOKRELAY_SECRET_KEY');
      expect(JSON.stringify(r.json) + r.stderr).not.toContain('Sup3rSecretPw');
      expect(existsSync(file('pg.hrbk'))).toBe(false);
      const restore = admin(box, cwd, ['restore', '--from', file('with-key.hrbk')], { HOOKRELAY_DATABASE_URL: url });
      expect(restore.code).toBe(4);
      expect(restore.json.error.message).toContain('pg_restore');
    },
    SPAWN_TIMEOUT_MS,
  );
});

describe('restore', () => {
  it(
    'refuses a damaged, truncated, foreign or newer backup (exit 2) and leaves the target as it was',
    () => {
      const good = readFileSync(file('with-key.hrbk'));
      const { header, offset } = parse(file('with-key.hrbk'));
      const flipped = Buffer.from(good);
      flipped[offset + 5000] = flipped[offset + 5000]! ^ 0xff;
      writeFileSync(file('flipped.hrbk'), flipped);
      writeFileSync(file('truncated.hrbk'), good.subarray(0, good.length - 10));
      writeFileSync(file('foreign.hrbk'), 'SQLite format 3\0 not ours');
      const future = { ...header, migrations: [...header.migrations, '9999_from_the_future'] };
      writeFileSync(file('newer.hrbk'), Buffer.concat([Buffer.from(`${JSON.stringify(future)}\n`), good.subarray(offset)]));

      const target = dir('refusals');
      for (const [name, says] of [
        ['flipped.hrbk', 'does not match the checksum'],
        ['truncated.hrbk', 'truncated'],
        ['foreign.hrbk', 'is not a hookrelay backup'],
        ['newer.hrbk', 'newer hookrelay'],
      ] as const) {
        const r = run('restore', '--from', file(name), '--data-dir', target);
        expect({ name, code: r.code }).toEqual({ name, code: 2 });
        expect(r.json.error.message).toContain(says);
        expect(readdirSync(target).filter((f) => !f.startsWith('serve.'))).toEqual([]);
      }
      expect(run('restore', '--from', file('missing.hrbk'), '--data-dir', target).code).toBe(6);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'refuses a data directory holding a box unless --force; --force puts the box back as it was at the backup',
    () => {
      const target = dir('restored-with-key');
      const before = grantIds(target);
      const later = run('grant', 'issue', '--shop', SHOP, '--tier', 'observer', '--ttl', '1h', '--data-dir', target);
      expect(later.code).toBe(0);
      const refused = run('restore', '--from', file('with-key.hrbk'), '--data-dir', target);
      expect(refused.code).toBe(4);
      expect(refused.json.error.message).toContain('--force');
      expect(grantIds(target)).toContain(later.json.grantId);
      // The refusal is in the audit trail of the box it would have replaced.
      expect(auditOf(target, 'restore').at(-1)).toMatchObject({ outcome: 'refused', errorCode: 'conflict' });

      const forced = run('restore', '--from', file('with-key.hrbk'), '--data-dir', target, '--force');
      expect(forced.code).toBe(0);
      // The same key stays; the database goes, with the -wal a box left (it would be read as part of the restored one).
      expect(forced.json.replaced).toContain('hookrelay.db');
      expect(forced.json.replaced).not.toContain('secret.key');
      expect(grantIds(target)).toEqual(before);
      expect(auditOf(target, 'restore').map((r) => r.outcome)).toEqual(['ok']);
    },
    SPAWN_TIMEOUT_MS,
  );
});

describe('restore and the key that opens the box', () => {
  it(
    'refuses a key that matches an edited header but does not open a secret sealed in the backup (exit 2 secret_key_mismatch); the right key restores it',
    async () => {
      const sealedBox = dir('sealed');
      expect(run('init', '--shop', SHOP, '--data-dir', sealedBox).code).toBe(0);
      const ownKey = readFileSync(join(sealedBox, 'secret.key'), 'utf8');
      // What serve's first start leaves in a box (src/ops/box-key.ts): a check sealed with the box's key.
      const sqlite = openSqliteDatabase({ path: join(sealedBox, 'hookrelay.db') });
      try {
        await proveBoxKey(sqliteRepo(sqlite), new SecretBox(parseSecretKey(ownKey)!), 'this box', Date.now());
      } finally {
        sqlite.close();
      }
      expect(run('backup', '--to', file('sealed.hrbk'), '--data-dir', sealedBox).code).toBe(0);
      expect(run('backup', '--to', file('sealed-key.hrbk'), '--include-key', '--data-dir', sealedBox).code).toBe(0);

      const wrong = 'ef'.repeat(32);
      writeFileSync(file('wrong.key'), wrong);
      const wrongPrint = keyFingerprint(parseSecretKey(wrong)!);
      // The header edited to carry the wrong key's fingerprint: the fingerprint check alone lets that key through.
      const plain = parse(file('sealed.hrbk'));
      plain.header.key.fingerprint = wrongPrint;
      writeFileSync(file('edited.hrbk'), Buffer.concat([Buffer.from(`${JSON.stringify(plain.header)}\n`), plain.bytes.subarray(plain.offset)]));
      // A backup holding its key, the key section swapped for another key with its checksum and fingerprint to match.
      const keyed = parse(file('sealed-key.hrbk'));
      const [dbSection, keySection] = keyed.header.sections;
      keyed.header.key.fingerprint = wrongPrint;
      keyed.header.sections = [dbSection, { ...keySection, bytes: wrong.length, sha256: new Bun.CryptoHasher('sha256').update(wrong).digest('hex') }];
      const dbBytes = keyed.bytes.subarray(keyed.offset, keyed.offset + dbSection.bytes);
      writeFileSync(file('swapped.hrbk'), Buffer.concat([Buffer.from(`${JSON.stringify(keyed.header)}\n`), dbBytes, Buffer.from(wrong)]));

      const target = dir('restored-sealed');
      for (const r of [
        run('restore', '--from', file('edited.hrbk'), '--data-dir', target, '--key-file', file('wrong.key')),
        admin(box, cwd, ['restore', '--from', file('edited.hrbk'), '--data-dir', target], { HOOKRELAY_SECRET_KEY: wrong }),
        run('restore', '--from', file('swapped.hrbk'), '--data-dir', target),
      ]) {
        expect(r.code).toBe(2);
        expect(r.json.error.code).toBe('secret_key_mismatch');
        expect(r.json.error.message).toContain('Nothing was restored');
        expect(JSON.stringify(r.json) + r.stderr).not.toContain(wrong);
        expect(readdirSync(target).filter((f) => !f.startsWith('serve.'))).toEqual([]);
      }

      const ok = run('restore', '--from', file('sealed.hrbk'), '--data-dir', target, '--key-file', join(sealedBox, 'secret.key'));
      expect(ok.code).toBe(0);
      expect(readFileSync(join(target, 'secret.key'), 'utf8')).toBe(ownKey);
    },
    SPAWN_TIMEOUT_MS,
  );
});

describe('the settings file', () => {
  it(
    'travels with the box: backed up as a section, restored beside the database; a different one in the target is replaced only with --force',
    () => {
      const settings = '[retention]\nevents = "30d"\n';
      const withSettings = dir('with-settings');
      expect(run('init', '--shop', SHOP, '--data-dir', withSettings).code).toBe(0);
      writeFileSync(join(withSettings, 'hookrelay.toml'), settings);
      expect(run('backup', '--to', file('settings.hrbk'), '--include-key', '--data-dir', withSettings).code).toBe(0);
      const { header } = parse(file('settings.hrbk'));
      expect(header.sections.map((s: { name: string }) => s.name)).toEqual(['hookrelay.db', 'secret.key', 'hookrelay.toml']);

      const target = dir('restored-settings');
      expect(run('restore', '--from', file('settings.hrbk'), '--data-dir', target).code).toBe(0);
      expect(readFileSync(join(target, 'hookrelay.toml'), 'utf8')).toBe(settings);

      const other = dir('other-settings');
      mkdirSync(other);
      writeFileSync(join(other, 'hookrelay.toml'), 'public_url = "https://elsewhere.example"\n');
      const refused = run('restore', '--from', file('settings.hrbk'), '--data-dir', other);
      expect(refused.code).toBe(4);
      expect(refused.json.error.details.present).toEqual(['hookrelay.toml']);
      expect(run('restore', '--from', file('settings.hrbk'), '--data-dir', other, '--force').code).toBe(0);
      expect(readFileSync(join(other, 'hookrelay.toml'), 'utf8')).toBe(settings);
    },
    SPAWN_TIMEOUT_MS,
  );
});
