/** Opens a deployment: data directory, secret key, database (migrated), and the runtime core. */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isPostgresUrl, openStorage } from '../db/open.ts';
import { AppError } from './contract/errors.ts';
import { createCore, defaultConfig, type Config, type Core } from './core.ts';
import { newSecretKey, parseSecretKey, SecretBox } from './lib/crypto.ts';
import type { Log } from './lib/log.ts';

export interface BootOptions {
  dataDir?: string;
  log?: Log;
  config?: Partial<Config>;
  synchronous?: 'FULL' | 'NORMAL';
  /** `postgres://…` (--database-url); else HOOKRELAY_DATABASE_URL; else SQLite in the data directory. */
  databaseUrl?: string;
}

export function resolveDataDir(flag?: string): string {
  return resolve(flag ?? process.env.HOOKRELAY_DATA_DIR ?? '.hookrelay');
}

/** The 32-byte key sealing endpoint secrets: HOOKRELAY_SECRET_KEY, else a 0600 key file made once in the data dir. */
export function loadSecretKey(dataDir: string): Uint8Array {
  const fromEnv = process.env.HOOKRELAY_SECRET_KEY;
  if (fromEnv) {
    const key = parseSecretKey(fromEnv);
    if (!key) throw new AppError('invalid_input', 'HOOKRELAY_SECRET_KEY must be 64 hex characters or base64 of 32 bytes.');
    return key;
  }
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) {
    const key = parseSecretKey(readFileSync(file, 'utf8'));
    if (!key) throw new AppError('invalid_input', `${file} is not a valid key file.`);
    return key;
  }
  const key = newSecretKey();
  writeFileSync(file, Buffer.from(key).toString('hex'), { mode: 0o600 });
  chmodSync(file, 0o600);
  return key;
}

/** Creates the data dir; everything this process creates from now on is owner-only (retained bodies live there). */
export function prepareDataDir(flag?: string): string {
  process.umask(0o077);
  const dataDir = resolveDataDir(flag);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return dataDir;
}

export async function openCore(opts: BootOptions = {}): Promise<Core> {
  const dataDir = prepareDataDir(opts.dataDir);
  const url = opts.databaseUrl ?? process.env.HOOKRELAY_DATABASE_URL ?? null;
  if (url && !isPostgresUrl(url)) throw new AppError('invalid_input', 'HOOKRELAY_DATABASE_URL / --database-url must be a postgres:// or postgresql:// URL.');
  // Every instance on one database must seal and open endpoint secrets with the same key: a key file made by
  // one instance in its own data directory would leave the others unable to verify any signature.
  if (url && !process.env.HOOKRELAY_SECRET_KEY) {
    throw new AppError('invalid_input', 'With a PostgreSQL database, set HOOKRELAY_SECRET_KEY (64 hex characters), the same on every instance.');
  }
  const box = new SecretBox(loadSecretKey(dataDir));
  const repo = await openStorage({ url, sqlitePath: join(dataDir, 'hookrelay.db'), synchronous: opts.synchronous });
  return createCore({ repo, box, log: opts.log, config: defaultConfig(opts.config) });
}
