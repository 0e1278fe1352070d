/**
 * Backups of a SQLite box (README, "Backups"): one file, a JSON header line followed by the sections it lists.
 *
 *   {"format":"hookrelay-backup","version":1,…,"sections":[{"name":"hookrelay.db","bytes":N,"sha256":"…"},…]}\n
 *   <the N bytes of hookrelay.db><the bytes of secret.key, when the key is included>
 *
 * The database section is a consistent snapshot taken by SQLite itself (`VACUUM INTO`, one read transaction)
 * while serve keeps writing: a plain copy of a WAL database can miss commits still in the -wal file or catch a
 * checkpoint half done. A restore checks every section's size and SHA-256, and the snapshot's integrity, before
 * it replaces anything. The key is in the file only when asked for; otherwise the header holds its fingerprint,
 * so a restore can tell whether the key it is given is the one that seals the box's secrets.
 */
import { SETTINGS_FILE } from '../settings.ts';
import { Database } from 'bun:sqlite';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fstatSync, fsyncSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { AuditLog } from '../../db/repo.ts';
import { migrations as sqliteMigrations } from '../../db/migrations/sqlite/index.ts';
import { openSqliteDatabase, type SqliteRepo, sqliteRepo } from '../../db/sqlite/repo.ts';
import { databasePath } from '../boot.ts';
import { AppError } from '../contract/errors.ts';
import { parseSecretKey, SecretBox } from '../lib/crypto.ts';
import { SEALED_SAMPLES } from '../../db/areas/settings.ts';
import { opens } from './box-key.ts';
import { VERSION } from '../version.ts';
import { adminAuditDeps, type AuditDeps } from './human-audit.ts';

export const BACKUP_FORMAT = 'hookrelay-backup';
export const BACKUP_VERSION = 1;
/** The header line is small (a few hundred bytes); anything longer is not a backup of ours. */
const HEADER_MAX_BYTES = 64 * 1024;
const CHUNK_BYTES = 1 << 20;
const KEY_FILE = 'secret.key';

export type SectionName = 'hookrelay.db' | 'secret.key' | 'hookrelay.toml';

export interface BackupSection {
  name: SectionName;
  bytes: number;
  sha256: string;
}

export interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  version: typeof BACKUP_VERSION;
  /** RFC 3339: when the snapshot was taken. */
  createdAt: string;
  /** The hookrelay that took it. */
  hookrelayVersion: string;
  dialect: 'sqlite';
  /** Migration tags applied in the snapshot: a restore refuses a box newer than its own binary. */
  migrations: string[];
  counts: { stores: number; endpoints: number; events: number };
  /** Whether the key is a section, and the fingerprint of the key that seals the box's secrets (null: none found). */
  key: { included: boolean; fingerprint: string | null };
  /** In file order, right after the header line. */
  sections: BackupSection[];
}

/** Where a box's key comes from, as serve finds it: HOOKRELAY_SECRET_KEY, else the data directory's secret.key. */
export type BoxKey = { source: 'HOOKRELAY_SECRET_KEY'; key: Uint8Array } | { source: 'file'; file: string; key: Uint8Array };

/**
 * A short name for a key, safe to print and store: a SHA-256 of the key (32 random bytes, so nothing to guess
 * back from it) under a label of its own, so it matches no other digest of the key.
 */
export function keyFingerprint(key: Uint8Array): string {
  return `sha256:${createHash('sha256').update('hookrelay key fingerprint v1\0').update(key).digest('hex').slice(0, 16)}`;
}

/** The key serve would use on this data directory, or null when there is none yet. */
function boxKey(dataDir: string, env: Record<string, string | undefined> = process.env): BoxKey | null {
  const fromEnv = envKey(env);
  if (fromEnv) return { source: 'HOOKRELAY_SECRET_KEY', key: fromEnv };
  const file = join(dataDir, KEY_FILE);
  return existsSync(file) ? { source: 'file', file, key: readKeyFile(file) } : null;
}

function envKey(env: Record<string, string | undefined>): Uint8Array | null {
  if (!env.HOOKRELAY_SECRET_KEY) return null;
  const key = parseSecretKey(env.HOOKRELAY_SECRET_KEY);
  if (!key) throw new AppError('invalid_input', 'HOOKRELAY_SECRET_KEY must be 64 hex characters or base64 of 32 bytes.');
  return key;
}

function readKeyFile(file: string): Uint8Array {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new AppError('invalid_input', `Cannot read the key file ${file}.`);
  }
  const key = parseSecretKey(text);
  if (!key) throw new AppError('invalid_input', `${file} is not a valid key file (64 hex characters or base64 of 32 bytes).`);
  return key;
}

/**
 * Whether a serve holds the data directory's lock (src/lib/dir-lock.ts) right now: the same exclusive
 * transaction on serve.lock, tried without waiting and given back at once. Never creates the file.
 */
export function serveRunning(dataDir: string): boolean {
  const file = join(dataDir, 'serve.lock');
  if (!existsSync(file)) return false;
  const db = new Database(file, { readwrite: true, create: false });
  try {
    db.exec('PRAGMA busy_timeout = 0');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('ROLLBACK');
    return false;
  } catch {
    return true;
  } finally {
    db.close();
  }
}

/**
 * The audit log of whatever box the data directory holds when a row is written: backup's row lands in the box it
 * copied; restore's in the restored box, or, when it is refused, in the box it would have replaced (none: no row).
 */
export function boxAuditDeps(dataDir: string): AuditDeps {
  const withRepo = async <T>(fn: (repo: SqliteRepo) => Promise<T>): Promise<T> => {
    const path = databasePath(dataDir);
    if (!existsSync(path)) throw new AppError('not_found', `No hookrelay database in ${dataDir} to write the audit row in.`);
    const sqlite = openSqliteDatabase({ path });
    try {
      return await fn(sqliteRepo(sqlite));
    } finally {
      sqlite.close();
    }
  };
  const log: AuditLog = { insertAudit: (row) => withRepo((r) => r.insertAudit(row)), listAudit: (f) => withRepo((r) => r.listAudit(f)) };
  return adminAuditDeps(log);
}

export interface BackupResult {
  file: string;
  bytes: number;
  header: BackupHeader;
  key: BoxKey | null;
  /** Said on stderr and in the answer: what a restore of this file will lack. */
  warnings: string[];
}

/**
 * Writes a backup of the box in `dataDir` to `to` (0600, through a temporary file renamed into place). A key
 * that does not open the box's endpoint secrets is refused: a backup naming or holding the wrong key would
 * restore a box whose every signature check fails.
 */
export function createBackup(opts: {
  dataDir: string;
  to: string;
  includeKey: boolean;
  force: boolean;
  now: number;
  env?: Record<string, string | undefined>;
}): BackupResult {
  const to = resolve(opts.to);
  if (existsSync(to) && !opts.force) throw new AppError('conflict', `${to} exists: give another --to, or --force to replace it.`, { file: to });
  if (!existsSync(dirname(to))) throw new AppError('invalid_input', `The directory of --to does not exist: ${dirname(to)}.`);
  const key = boxKey(opts.dataDir, opts.env);
  if (opts.includeKey && !key) {
    throw new AppError('invalid_input', `--include-key: this box has no key to include (no ${join(opts.dataDir, KEY_FILE)} and no HOOKRELAY_SECRET_KEY).`);
  }
  const partial = join(dirname(to), `.${basename(to)}.${process.pid}.partial`);
  const snapshot = `${partial}.db`;
  try {
    snapshotDatabase(databasePath(opts.dataDir), snapshot);
    const facts = describeSnapshot(snapshot);
    if (key && facts.sealed) checkKeyOpens(key, facts.sealed);
    const keyBytes = opts.includeKey && key ? Buffer.from(Buffer.from(key.key).toString('hex')) : null;
    // The operator's settings travel with the box: a restored box keeps its retention, limits and public URL.
    const settingsPath = join(opts.dataDir, SETTINGS_FILE);
    const settingsBytes = existsSync(settingsPath) ? readFileSync(settingsPath) : null;
    const sections: BackupSection[] = [{ name: 'hookrelay.db', ...digestFile(snapshot) }];
    if (keyBytes) sections.push({ name: 'secret.key', bytes: keyBytes.length, sha256: sha256(keyBytes) });
    if (settingsBytes) sections.push({ name: 'hookrelay.toml', bytes: settingsBytes.length, sha256: sha256(settingsBytes) });
    const header: BackupHeader = {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      createdAt: new Date(opts.now).toISOString(),
      hookrelayVersion: VERSION,
      dialect: 'sqlite',
      migrations: facts.migrations,
      counts: facts.counts,
      key: { included: keyBytes !== null, fingerprint: key ? keyFingerprint(key.key) : null },
      sections,
    };
    const fd = openSync(partial, 'w', 0o600);
    try {
      writeAll(fd, Buffer.from(`${JSON.stringify(header)}\n`));
      copyInto(fd, snapshot);
      if (keyBytes) writeAll(fd, keyBytes);
      if (settingsBytes) writeAll(fd, settingsBytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(partial, to);
    syncDir(dirname(to));
    const warnings =
      !key && facts.sealed
        ? [
            `No key found (no ${join(opts.dataDir, KEY_FILE)}, no HOOKRELAY_SECRET_KEY) though the box holds sealed endpoint secrets: keep the key serve runs with beside this backup, or its endpoints will not verify after a restore.`,
          ]
        : [];
    return { file: to, bytes: statSync(to).size, header, key, warnings };
  } finally {
    rmSync(snapshot, { force: true });
    rmSync(partial, { force: true });
  }
}

/** `VACUUM INTO`: one read transaction, so the copy holds exactly the commits made before it began. */
function snapshotDatabase(dbPath: string, out: string): void {
  if (!existsSync(dbPath)) throw new AppError('not_found', `No hookrelay database at ${dbPath}.`);
  const db = new Database(dbPath, { readwrite: true, create: false, strict: true });
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    db.query('VACUUM INTO ?').run(out);
  } finally {
    db.close();
  }
}

interface SnapshotFacts {
  migrations: string[];
  counts: BackupHeader['counts'];
  /** One sealed endpoint secret, to check a key against. */
  sealed: string | null;
}

function describeSnapshot(path: string): SnapshotFacts {
  const db = new Database(path, { readonly: true });
  try {
    const tables = tablesOf(db);
    if (!tables.has('__hookrelay_migrations')) throw new AppError('invalid_input', 'This database is not a hookrelay box (no migrations table).');
    const count = (t: string) => (tables.has(t) ? (db.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${t}`).get()?.n ?? 0) : 0);
    const sealed = sealedIn(db, tables);
    return {
      migrations: db
        .query<{ tag: string }, []>('SELECT tag FROM __hookrelay_migrations ORDER BY tag')
        .all()
        .map((r) => r.tag),
      counts: { stores: count('stores'), endpoints: count('endpoints'), events: count('events') },
      sealed,
    };
  } finally {
    db.close();
  }
}

const tablesOf = (db: Database) =>
  new Set(
    db
      .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .all()
      .map((r) => r.name),
  );

/** A sealed value of a snapshot (the queries serve proves its key with, src/ops/box-key.ts), or null when none. */
function sealedIn(db: Database, tables: Set<string>): string | null {
  for (const q of SEALED_SAMPLES) {
    if (!tables.has(q.table)) continue;
    const s = db.query<{ s: string | null }, []>(q.sql).get()?.s ?? null;
    if (s !== null) return q.json ? (JSON.parse(s) as string) : s;
  }
  return null;
}

function snapshotSealed(path: string): string | null {
  const db = new Database(path, { readonly: true });
  try {
    return sealedIn(db, tablesOf(db));
  } finally {
    db.close();
  }
}

function checkKeyOpens(key: BoxKey, sealed: string): void {
  try {
    new SecretBox(key.key).open(sealed);
  } catch {
    const name = key.source === 'file' ? key.file : 'HOOKRELAY_SECRET_KEY';
    throw new AppError(
      'invalid_input',
      `${name} does not open this box's endpoint secrets: run backup with the key serve runs with (HOOKRELAY_SECRET_KEY as serve has it, or unset to use the data directory's ${KEY_FILE}).`,
    );
  }
}

/** Reads and checks the header line; `offset` is where the first section starts. */
function readBackupHeader(file: string): { header: BackupHeader; offset: number; size: number } {
  const path = resolve(file);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    throw new AppError('not_found', `No backup file at ${path}.`, { file: path });
  }
  try {
    const size = fstatSync(fd).size;
    const head = Buffer.alloc(Math.min(HEADER_MAX_BYTES, size));
    readSync(fd, head, 0, head.length, 0);
    const end = head.indexOf(0x0a);
    const notOurs = () => new AppError('invalid_input', `${path} is not a hookrelay backup (made by hookrelay backup --to FILE).`, { file: path });
    if (end < 0) throw notOurs();
    let header: BackupHeader;
    try {
      header = JSON.parse(head.subarray(0, end).toString('utf8')) as BackupHeader;
    } catch {
      throw notOurs();
    }
    if (header?.format !== BACKUP_FORMAT) throw notOurs();
    if (header.version !== BACKUP_VERSION) {
      throw new AppError(
        'invalid_input',
        `${path} is a hookrelay backup of format version ${String(header.version)}; this hookrelay reads version ${BACKUP_VERSION}. Restore it with the hookrelay that made it (${String(header.hookrelayVersion)}) or newer.`,
      );
    }
    const sections = Array.isArray(header.sections) ? header.sections : [];
    const valid = (s: BackupSection) =>
      ['hookrelay.db', 'secret.key', 'hookrelay.toml'].includes(s.name) && Number.isSafeInteger(s.bytes) && s.bytes >= 0 && /^[0-9a-f]{64}$/.test(s.sha256);
    if (
      header.dialect !== 'sqlite' ||
      sections[0]?.name !== 'hookrelay.db' ||
      !sections.every(valid) ||
      !Array.isArray(header.migrations) ||
      typeof header.key !== 'object' ||
      header.key === null
    )
      throw notOurs();
    if (new Set(sections.map((s) => s.name)).size !== sections.length || header.key.included !== sections.some((s) => s.name === 'secret.key')) throw notOurs();
    const expected = end + 1 + sections.reduce((n, s) => n + s.bytes, 0);
    if (expected !== size) {
      throw new AppError(
        'invalid_input',
        `${path} is damaged: ${size} bytes where its header announces ${expected} (truncated or appended to). Nothing was restored.`,
        { file: path },
      );
    }
    return { header, offset: end + 1, size };
  } finally {
    closeSync(fd);
  }
}

export interface RestoreResult {
  header: BackupHeader;
  dataDir: string;
  /** What the data directory held before, replaced (only with force). */
  replaced: string[];
  /** Where the box's key now comes from. */
  key: 'backup' | '--key-file' | 'HOOKRELAY_SECRET_KEY' | 'secret.key already in the data directory' | 'none needed';
}

/**
 * Restores a backup into `dataDir`. The caller holds the data directory's serve lock (no serve may run on it, or
 * start, meanwhile). Everything is checked before anything is replaced: the header, the box's migrations
 * against this binary's, the key, every section's size and SHA-256, the snapshot's integrity.
 */
export function restoreBackup(opts: {
  from: string;
  dataDir: string;
  force: boolean;
  keyFile?: string;
  env?: Record<string, string | undefined>;
}): RestoreResult {
  const env = opts.env ?? process.env;
  const from = resolve(opts.from);
  const { header, offset } = readBackupHeader(from);
  const known = new Set(sqliteMigrations.map((m) => m.tag));
  const newer = header.migrations.filter((t) => !known.has(t));
  if (newer.length > 0) {
    throw new AppError(
      'invalid_input',
      `This backup was taken by a newer hookrelay (${header.hookrelayVersion}; migrations ${newer.join(', ')} unknown here): restore it with that version or newer.`,
    );
  }

  const dbFile = databasePath(opts.dataDir);
  const keyPath = join(opts.dataDir, KEY_FILE);
  const withSettings = header.sections.some((s) => s.name === 'hookrelay.toml');
  const present = ['hookrelay.db', 'hookrelay.db-wal', KEY_FILE, ...(withSettings ? [SETTINGS_FILE] : [])].filter((f) => existsSync(join(opts.dataDir, f)));
  // A key file that is already this backup's key is no box of its own: restoring beside it replaces nothing.
  const sameKeyFile = () => header.key.fingerprint !== null && keyFingerprint(readKeyFile(keyPath)) === header.key.fingerprint;
  const replaced = present.filter((f) => f !== KEY_FILE || !sameKeyFile());
  if (replaced.length > 0 && !opts.force) {
    throw new AppError(
      'conflict',
      `The data directory ${opts.dataDir} already holds a box (${replaced.join(', ')}): restore into an empty directory, or give --force to replace it.`,
      { dataDir: opts.dataDir, present: replaced },
    );
  }

  const plan = keyPlan(header, opts.keyFile, env, existsSync(keyPath) ? keyPath : null);
  const staged = join(opts.dataDir, `.hookrelay.db.${process.pid}.restoring`);
  const stagedKey = join(opts.dataDir, `.${KEY_FILE}.${process.pid}.restoring`);
  try {
    let keyFromBackup: Buffer | null = null;
    let settingsFromBackup: Buffer | null = null;
    const fd = openSync(from, 'r');
    try {
      let at = offset;
      for (const s of header.sections) {
        if (s.name === 'hookrelay.db') extractTo(fd, at, s, staged, from);
        else if (s.name === 'hookrelay.toml') settingsFromBackup = readSection(fd, at, s, from);
        else keyFromBackup = readSection(fd, at, s, from);
        at += s.bytes;
      }
    } finally {
      closeSync(fd);
    }
    checkIntegrity(staged, from);
    let keyToWrite = plan.write;
    if (plan.source === 'backup') {
      const key = keyFromBackup ? parseSecretKey(keyFromBackup.toString('utf8')) : null;
      if (!key || (header.key.fingerprint !== null && keyFingerprint(key) !== header.key.fingerprint)) throw damaged(from, 'secret.key');
      keyToWrite = key;
    }
    // The header's fingerprint is only what the file says: the key must open a secret sealed in the snapshot.
    provenKey(snapshotSealed(staged), plan.source === 'backup' ? keyToWrite : (plan.key ?? null), plan.source, plan.name);
    if (keyToWrite) writePrivate(stagedKey, Buffer.from(Buffer.from(keyToWrite).toString('hex')));
    // Replace: a -wal or -shm left by the box before would be read as part of the restored database.
    for (const f of [`${dbFile}-wal`, `${dbFile}-shm`, `${dbFile}-journal`]) rmSync(f, { force: true });
    renameSync(staged, dbFile);
    if (keyToWrite) renameSync(stagedKey, keyPath);
    if (settingsFromBackup) writePrivate(join(opts.dataDir, SETTINGS_FILE), settingsFromBackup);
    syncDir(opts.dataDir);
    return { header, dataDir: opts.dataDir, replaced, key: plan.source };
  } finally {
    rmSync(staged, { force: true });
    rmSync(stagedKey, { force: true });
  }
}

/**
 * Which key the restored box will be served with, decided before anything is written: the backup's own, a
 * `--key-file`, HOOKRELAY_SECRET_KEY, or the data directory's secret.key; each must have the backup's
 * fingerprint. HOOKRELAY_SECRET_KEY, when set, is what serve will use, so it must match even beside a key file.
 */
function keyPlan(
  header: BackupHeader,
  keyFile: string | undefined,
  env: Record<string, string | undefined>,
  existing: string | null,
): { source: RestoreResult['key']; write: Uint8Array | null; key?: Uint8Array; name?: string } {
  const want = header.key.fingerprint;
  const fromEnv = envKey(env);
  const mismatch = (what: string, key: Uint8Array) =>
    new AppError(
      'invalid_input',
      `${what} is not the key of this backup (fingerprint ${keyFingerprint(key)}; the backup's is ${want}): its endpoint secrets would not open. Nothing was restored.`,
    );
  if (fromEnv && want && keyFingerprint(fromEnv) !== want) throw mismatch('HOOKRELAY_SECRET_KEY (which serve would use)', fromEnv);
  if (header.key.included) {
    if (keyFile) throw new AppError('invalid_input', 'This backup holds its key: --key-file is for a backup taken without --include-key.');
    return { source: 'backup', write: null };
  }
  if (keyFile) {
    const key = readKeyFile(resolve(keyFile));
    if (want && keyFingerprint(key) !== want) throw mismatch(`--key-file ${resolve(keyFile)}`, key);
    return { source: '--key-file', write: key, key, name: `--key-file ${resolve(keyFile)}` };
  }
  if (fromEnv) return { source: 'HOOKRELAY_SECRET_KEY', write: null, key: fromEnv, name: 'HOOKRELAY_SECRET_KEY' };
  if (!want) return { source: 'none needed', write: null };
  if (existing) {
    const key = readKeyFile(existing);
    if (keyFingerprint(key) !== want) throw mismatch(existing, key);
    return { source: 'secret.key already in the data directory', write: null, key, name: existing };
  }
  throw new AppError(
    'invalid_input',
    `This backup was taken without its key (fingerprint ${want}): give --key-file PATH (the secret.key kept beside the backup) or set HOOKRELAY_SECRET_KEY to it. Nothing was restored.`,
  );
}

/**
 * Refuses the restore (nothing written yet) unless `key` opens `sealed`, a secret of the snapshot: a header edited to
 * carry another key's fingerprint, or a backup whose key section is another key's, would restore a box whose every
 * signature check fails. A snapshot holding no sealed value needs no key.
 */
function provenKey(sealed: string | null, key: Uint8Array | null, source: RestoreResult['key'], name: string | undefined): void {
  if (sealed === null) return;
  const what = source === 'backup' ? "the backup's own key section" : (name ?? 'no key');
  if (key && opens(new SecretBox(key, what), sealed)) return;
  throw new AppError(
    'secret_key_mismatch',
    key
      ? `${what} does not open the secrets sealed in this backup, whatever its header says: it is not the key that sealed them, and the restored box would answer every signed receipt with an error. Give the box's own key (--key-file, or HOOKRELAY_SECRET_KEY). Nothing was restored.`
      : "This backup's header names no key, but the box holds sealed secrets: give the key that sealed them (--key-file PATH, or HOOKRELAY_SECRET_KEY). Nothing was restored.",
  );
}

const damaged = (file: string, section: string) =>
  new AppError('invalid_input', `${file} is damaged: its ${section} section does not match the checksum in its header. Nothing was restored.`, {
    file,
    section,
  });

/** Copies one section to `out` (0600), checking its SHA-256 on the way. */
function extractTo(fd: number, at: number, s: BackupSection, out: string, from: string): void {
  const hash = createHash('sha256');
  const outFd = openSync(out, 'w', 0o600);
  try {
    const buf = Buffer.alloc(CHUNK_BYTES);
    for (let done = 0; done < s.bytes; ) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, s.bytes - done), at + done);
      if (n <= 0) throw damaged(from, s.name);
      hash.update(buf.subarray(0, n));
      writeAll(outFd, buf.subarray(0, n));
      done += n;
    }
    fsyncSync(outFd);
  } finally {
    closeSync(outFd);
  }
  if (hash.digest('hex') !== s.sha256) throw damaged(from, s.name);
}

function readSection(fd: number, at: number, s: BackupSection, from: string): Buffer {
  const buf = Buffer.alloc(s.bytes);
  if (readSync(fd, buf, 0, s.bytes, at) !== s.bytes || sha256(buf) !== s.sha256) throw damaged(from, s.name);
  return buf;
}

/** A snapshot whose bytes match can still be no database (a backup forged by hand): SQLite checks it. */
function checkIntegrity(path: string, from: string): void {
  let ok = false;
  try {
    const db = new Database(path, { readonly: true });
    try {
      ok = db.query<{ quick_check: string }, []>('PRAGMA quick_check').get()?.quick_check === 'ok';
      ok &&= !!db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__hookrelay_migrations'").get();
    } finally {
      db.close();
    }
  } catch {
    ok = false;
  }
  if (!ok)
    throw new AppError('invalid_input', `${from} holds no sound hookrelay database (SQLite's quick_check failed). Nothing was restored.`, { file: from });
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function digestFile(path: string): { bytes: number; sha256: string } {
  const hash = createHash('sha256');
  let bytes = 0;
  forEachChunk(path, (chunk) => {
    hash.update(chunk);
    bytes += chunk.length;
  });
  return { bytes, sha256: hash.digest('hex') };
}

function copyInto(fd: number, path: string): void {
  forEachChunk(path, (chunk) => writeAll(fd, chunk));
}

function forEachChunk(path: string, fn: (chunk: Buffer) => void): void {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(CHUNK_BYTES);
    for (let n: number; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) fn(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
}

function writePrivate(path: string, bytes: Uint8Array): void {
  const fd = openSync(path, 'w', 0o600);
  try {
    writeAll(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A rename is durable once its directory is synced. */
function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not every filesystem lets a directory be opened or synced; the files themselves are.
  }
}
