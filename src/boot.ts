/** Opens a deployment: data directory, secret key, database (migrated), and the runtime core. */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { isPostgresUrl, openStorage } from '../db/open.ts';
import { AppError } from './contract/errors.ts';
import { createCore, defaultConfig, type Config, type Core } from './core.ts';
import { lockDataDir } from './lib/dir-lock.ts';
import { newSecretKey, parseSecretKey, SecretBox } from './lib/crypto.ts';
import type { Log } from './lib/log.ts';
import { describePg, pgOpenError, pgTarget } from './lib/pg-target.ts';
import { urlPasswords } from './lib/redact.ts';

export interface BootOptions {
  dataDir?: string;
  log?: Log;
  config?: Partial<Config>;
  synchronous?: 'FULL' | 'NORMAL';
  /** `postgres://…` (--database-url); else HOOKRELAY_DATABASE_URL; else SQLite in the data directory. */
  databaseUrl?: string;
  /** Take the data directory's serve lock before opening a SQLite database (`serve` only; see lockDataDir). */
  serveLock?: boolean;
  /** Create the data directory and database when missing (serve, init; default). False: fail, saying where it looked. */
  create?: boolean;
}

/** Where the data directory came from: every command resolves it the same way (README, "Configuration"). */
export interface DataDir {
  path: string;
  source: '--data-dir' | 'HOOKRELAY_DATA_DIR' | 'default';
}

/** The per-user default: `$XDG_DATA_HOME/hookrelay`, else `~/.local/share/hookrelay` — never the current directory. */
export function defaultDataDir(env: Record<string, string | undefined> = process.env): string {
  const xdg = env.XDG_DATA_HOME;
  const base = xdg && isAbsolute(xdg) ? xdg : join(env.HOME || homedir(), '.local', 'share');
  return join(base, 'hookrelay');
}

/** Flag > HOOKRELAY_DATA_DIR > the per-user default. */
export function locateDataDir(flag?: string, env: Record<string, string | undefined> = process.env): DataDir {
  if (flag) return { path: resolve(flag), source: '--data-dir' };
  if (env.HOOKRELAY_DATA_DIR) return { path: resolve(env.HOOKRELAY_DATA_DIR), source: 'HOOKRELAY_DATA_DIR' };
  return { path: defaultDataDir(env), source: 'default' };
}

/** Before the per-user default, the data directory was `./.hookrelay`: point an upgrading operator at it. */
function legacyDataDirHint(dir: DataDir, cwd = process.cwd()): string {
  const legacy = join(cwd, '.hookrelay');
  if (dir.source !== 'default' || legacy === dir.path || !existsSync(databasePath(legacy))) return '';
  return ` A database from an older version is in ${legacy} (the former default): pass --data-dir ${legacy} to keep using it.`;
}

/** The stderr line serve, init and migrate print, so nobody wonders which database they are on. */
export function describeDataDir(dir: DataDir): string {
  return `data directory ${dir.path} (from ${dir.source}; choose another with --data-dir or HOOKRELAY_DATA_DIR).${legacyDataDirHint(dir)}`;
}

function resolveDataDir(flag?: string): string {
  return locateDataDir(flag).path;
}

/** The database file of a data directory. */
export const databasePath = (dataDir: string) => join(dataDir, 'hookrelay.db');

/**
 * Admin commands other than init, migrate and serve must never create a database: one made in the wrong place
 * answers `{"grants":[]}` and sends the user off to init a second store. They fail here instead, saying where.
 */
export function requireDatabase(flag?: string): string {
  const dir = locateDataDir(flag);
  if (existsSync(databasePath(dir.path))) return dir.path;
  throw new AppError(
    'not_found',
    `No hookrelay database in ${dir.path} (data directory from ${dir.source}). Create it with hookrelay init --shop your-store.myshopify.com, or choose another with --data-dir DIR or HOOKRELAY_DATA_DIR.${legacyDataDirHint(dir)}`,
    { dataDir: dir.path, source: dir.source },
  );
}

/**
 * The box sealing endpoint secrets, with where its key came from: HOOKRELAY_SECRET_KEY, else a 0600 key file made
 * once in the data dir.
 */
function loadSecretBox(dataDir: string): SecretBox {
  const fromEnv = process.env.HOOKRELAY_SECRET_KEY;
  if (fromEnv) {
    const key = parseSecretKey(fromEnv);
    if (!key) throw new AppError('invalid_input', 'HOOKRELAY_SECRET_KEY must be 64 hex characters or base64 of 32 bytes.');
    return new SecretBox(key, 'HOOKRELAY_SECRET_KEY');
  }
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) {
    const key = parseSecretKey(readFileSync(file, 'utf8'));
    if (!key) throw new AppError('invalid_input', `${file} is not a valid key file.`);
    return new SecretBox(key, file);
  }
  const key = newSecretKey();
  writeFileSync(file, Buffer.from(key).toString('hex'), { mode: 0o600 });
  chmodSync(file, 0o600);
  return new SecretBox(key, file);
}

/** Creates the data dir; everything this process creates from now on is owner-only (retained bodies live there). */
export function prepareDataDir(flag?: string): string {
  process.umask(0o077);
  const dataDir = resolveDataDir(flag);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return dataDir;
}

/** Where the database URL came from: flag > HOOKRELAY_DATABASE_URL > none (SQLite in the data directory). */
export function locateDatabaseUrl(
  flag?: string,
  env: Record<string, string | undefined> = process.env,
): { url: string; source: '--database-url' | 'HOOKRELAY_DATABASE_URL' } | null {
  if (flag) return { url: flag, source: '--database-url' };
  if (env.HOOKRELAY_DATABASE_URL) return { url: env.HOOKRELAY_DATABASE_URL, source: 'HOOKRELAY_DATABASE_URL' };
  return null;
}

/** The stderr line saying which storage a command uses: the data directory, or the PostgreSQL database (never its URL). */
export function describeStorage(dir: DataDir, databaseUrlFlag?: string): string {
  const db = locateDatabaseUrl(databaseUrlFlag);
  if (!db) return describeDataDir(dir);
  checkPostgresUrl(db.url);
  return `${describePg(db.url)} (from ${db.source}); the data directory is not used.`;
}

/** invalid_input (never echoing the URL) unless it is a parseable postgres:// or postgresql:// URL. */
export function checkPostgresUrl(url: string): void {
  if (!isPostgresUrl(url)) throw new AppError('invalid_input', 'HOOKRELAY_DATABASE_URL / --database-url must be a postgres:// or postgresql:// URL.');
  pgTarget(url);
}

/**
 * The PostgreSQL twin of requireDatabase: admin commands other than init and migrate must not create the schema
 * in whatever database a URL names. Fails unless hookrelay's migrations table is there.
 */
async function requirePgDatabase(url: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  let found = false;
  try {
    await client.connect();
    const r = await client.query<{ t: string | null }>("SELECT to_regclass('__hookrelay_migrations')::text AS t");
    found = !!r.rows[0]?.t;
  } catch (err) {
    throw pgOpenError(err, url);
  } finally {
    await client.end().catch(() => {});
  }
  if (!found) {
    throw new AppError(
      'not_found',
      `No hookrelay database in the ${describePg(url)}. Create it with hookrelay init --shop your-store.myshopify.com (or hookrelay migrate) with the same database URL.`,
    );
  }
}

export async function openCore(opts: BootOptions = {}): Promise<Core> {
  const url = locateDatabaseUrl(opts.databaseUrl)?.url ?? null;
  if (url) return openPgCore(url, opts);
  if (opts.create === false) requireDatabase(opts.dataDir);
  const dataDir = prepareDataDir(opts.dataDir);
  // One serve per SQLite file; instances on PostgreSQL are peers and take no lock.
  if (opts.serveLock) lockDataDir(dataDir);
  const box = loadSecretBox(dataDir);
  const repo = await openStorage({ url: null, sqlitePath: databasePath(dataDir), synchronous: opts.synchronous });
  return createCore({ repo, box, log: opts.log, config: defaultConfig(opts.config) });
}

/** PostgreSQL holds everything: no data directory is made or read, and errors name the database, never the URL. */
async function openPgCore(url: string, opts: BootOptions): Promise<Core> {
  checkPostgresUrl(url);
  // Every instance on one database must seal and open endpoint secrets with the same key: a key file made by
  // one instance in its own data directory would leave the others unable to verify any signature.
  if (!process.env.HOOKRELAY_SECRET_KEY) {
    throw new AppError(
      'invalid_input',
      'With a PostgreSQL database, set HOOKRELAY_SECRET_KEY (64 hex characters, e.g. from openssl rand -hex 32), the same on every instance.',
    );
  }
  const key = parseSecretKey(process.env.HOOKRELAY_SECRET_KEY);
  if (!key) throw new AppError('invalid_input', 'HOOKRELAY_SECRET_KEY must be 64 hex characters or base64 of 32 bytes.');
  process.umask(0o077);
  if (opts.create === false) await requirePgDatabase(url);
  const repo = await openStorage({ url, sqlitePath: '' }).catch((err: unknown) => {
    throw pgOpenError(err, url);
  });
  const config = defaultConfig({ ...opts.config, heldSecrets: [...(opts.config?.heldSecrets ?? []), ...urlPasswords(url)] });
  return createCore({ repo, box: new SecretBox(key, 'HOOKRELAY_SECRET_KEY'), log: opts.log, config });
}
