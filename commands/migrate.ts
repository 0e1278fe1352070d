import { defineCommand } from 'citty';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type pg from 'pg';
import { migrateSqlite, openSqliteDatabase, sqliteRepo } from '../db/sqlite/repo.ts';
import { checkPostgresUrl, databasePath, describeStorage, locateDataDir, locateDatabaseUrl, prepareDataDir } from '../src/boot.ts';
import { AppError } from '../src/contract/errors.ts';
import { defaultConfig } from '../src/core.ts';
import { parseSecretKey, SecretBox } from '../src/lib/crypto.ts';
import { lockDataDir } from '../src/lib/dir-lock.ts';
import { stderrLog, type Log } from '../src/lib/log.ts';
import { describePg, pgOpenError, pgTarget } from '../src/lib/pg-target.ts';
import { adminAuditDeps, auditAdmin, humanActor, recordAdminAction, type AuditDeps } from '../src/ops/human-audit.ts';
import { describeMovedTo, markMoved, movedFile, movedMarker, movedRefusal, unmarkMoved, type MovedTo } from '../src/ops/moved-box.ts';
import { actorArg, storageArgs } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'migrate',
    description: 'Apply database migrations (serve also applies them at start); with --from, copy a SQLite box into an empty PostgreSQL database',
    examples: [
      'hookrelay migrate --data-dir /var/lib/hookrelay',
      'HOOKRELAY_DATABASE_URL=postgres://… hookrelay migrate --from sqlite:/var/lib/hookrelay/hookrelay.db',
      'hookrelay migrate --data-dir /var/lib/hookrelay --unmark-moved  # serve and change a moved SQLite box again',
    ],
  },
  args: {
    ...storageArgs,
    from: {
      type: 'string',
      description: 'sqlite:PATH — a SQLite box (its hookrelay.db or data directory) to copy into the PostgreSQL database; the box is then marked moved',
    },
    'unmark-moved': {
      type: 'boolean',
      description: 'Take the moved marker off the SQLite box in --data-dir: serve runs on it and admin commands change it again',
    },
    ...actorArg,
  },
  async run({ args }) {
    const actor = humanActor(args.actor);
    const log = stderrLog();
    const db = locateDatabaseUrl(args['database-url']);
    if (args['unmark-moved'] && (args.from || db)) {
      throw new AppError(
        'invalid_input',
        '--unmark-moved takes the moved marker off the SQLite box in --data-dir; it goes without --from and without a PostgreSQL database.',
      );
    }
    if (args.from) return copyFrom(args.from, db?.url, log, actor);
    log.info(describeStorage(locateDataDir(args['data-dir']), args['database-url']));
    if (db) return migratePostgres(db.url, log, actor);
    const dir = prepareDataDir(args['data-dir']);
    const moved = movedMarker(dir, databasePath(dir));
    if (moved && !args['unmark-moved']) throw movedRefusal(moved, dir, 'change');
    const sqlite = openSqliteDatabase({ path: databasePath(dir) });
    try {
      const applied = await migrateSqlite(sqlite);
      const repo = sqliteRepo(sqlite);
      if (moved) {
        await unmarkMoved(repo, dir, Date.now());
        log.warn(`this box is no longer marked moved to ${describeMovedTo(moved.to)}: serve runs on it again, so run only one of the two.`);
      }
      const unmarked = moved ? '; took the moved marker off' : '';
      await recordAdminAction(adminAuditDeps(repo), actor, 'migrate', { storeId: null, transition: `${appliedSummary(applied)}${unmarked}` });
      const stores = sqlite.query('SELECT shop_domain AS shop, destination FROM stores ORDER BY id').all() as { shop: string; destination: string }[];
      for (const s of stores) log.info(`store ${s.shop}: destination ${s.destination}`);
      printJson({ dialect: 'sqlite', applied, dataDir: dir, ...(moved ? { unmarkedMoved: moved.to ?? true } : {}) });
    } finally {
      sqlite.close();
    }
  },
});

/** The audit row's summary of a migration: how many were applied (their names are in the printed answer). */
const appliedSummary = (applied: string[]) => `applied ${applied.length} migration${applied.length === 1 ? '' : 's'}`;

/**
 * A pool on the target, migrated under the advisory lock; connection failures become stable errors without the URL.
 * `audit` writes this command's row there (the URL is never in it).
 */
async function openTarget(url: string): Promise<{ pool: pg.Pool; applied: string[]; audit: AuditDeps }> {
  checkPostgresUrl(url);
  const { migratePg, openPgPool, pgRepo } = await import('../db/pg/repo.ts');
  const pool = openPgPool({ url, max: 2 });
  try {
    return { pool, applied: await migratePg(pool), audit: adminAuditDeps(pgRepo(pool, url)) };
  } catch (err) {
    await pool.end().catch(() => {});
    throw pgOpenError(err, url);
  }
}

async function migratePostgres(url: string, log: Log, actor: string): Promise<void> {
  const { pool, applied, audit } = await openTarget(url);
  try {
    await recordAdminAction(audit, actor, 'migrate', { storeId: null, transition: appliedSummary(applied) });
    const stores = await pool.query<{ shop: string; destination: string }>('SELECT shop_domain AS shop, destination FROM stores ORDER BY id');
    for (const s of stores.rows) log.info(`store ${s.shop}: destination ${s.destination}`);
    printJson({ dialect: 'postgres', applied, database: pgTarget(url) });
  } finally {
    await pool.end();
  }
}

/**
 * `migrate --from sqlite:PATH`: brings the box to the current schema, checks that the key it will be served with
 * opens the box's endpoint secrets, then copies it into the (migrated, empty) PostgreSQL database in one
 * transaction. The key is never printed: the report says where it is and how to export it.
 */
async function copyFrom(from: string, url: string | undefined, log: Log, actor: string): Promise<void> {
  if (!url)
    throw new AppError('invalid_input', 'migrate --from copies a SQLite box into PostgreSQL: give --database-url postgres://… or set HOOKRELAY_DATABASE_URL.');
  checkPostgresUrl(url);
  const path = sourcePath(from);
  const dataDir = dirname(path);
  // A box already moved is not copied again: two databases would each take events as the same box.
  const moved = movedMarker(dataDir, path);
  if (moved) throw movedRefusal(moved, dataDir, 'change');
  const key = boxKey(dataDir);
  // No serve may write to the box while it is copied: an event accepted after the copy would be lost.
  lockDataDir(dataDir);
  const src = openSqliteDatabase({ path });
  try {
    await migrateSqlite(src);
    const sealed = src.query('SELECT secret_sealed AS s FROM endpoints LIMIT 1').get() as { s: string } | null;
    if (sealed) checkKeyOpens(key, sealed.s, dataDir);
  } finally {
    src.close();
  }
  log.info(`copying the SQLite box ${path} into the ${describePg(url)}`);
  const { pool, applied, audit } = await openTarget(url);
  try {
    const report = await auditAdmin(
      audit,
      actor,
      'migrate',
      async () => {
        const held = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM stores');
        if ((held.rows[0]?.n ?? 0) > 0) {
          throw new AppError('conflict', `The ${describePg(url)} already holds a hookrelay store: migrate --from copies into an empty database only.`);
        }
        const { copySqliteToPostgres } = await import('../db/copy.ts');
        return copySqliteToPostgres(path, pool, Date.now() - defaultConfig().dedupeWindowMs);
      },
      // Neither the source's path nor the target's URL: what was done, and how much.
      (r) => ({ storeId: null, transition: `${appliedSummary(applied)}; copied a SQLite box (${Object.values(r.tables).reduce((a, b) => a + b, 0)} rows)` }),
    );
    const marked = await markBox(path, dataDir, url, log);
    const exportKey =
      key?.source === 'file' ? [`export HOOKRELAY_SECRET_KEY="$(cat ${key.file})" on every instance (the key that seals this box's endpoint secrets)`] : [];
    const stop = marked
      ? `the SQLite box is marked moved (${movedFile(dataDir)}): serve refuses to run on it and admin commands to change it`
      : 'stop using the SQLite box (it could not be marked moved)';
    printJson({
      dialect: 'postgres',
      database: pgTarget(url),
      from: path,
      applied,
      copied: report.tables,
      secretKey: key ? (key.source === 'env' ? 'HOOKRELAY_SECRET_KEY' : key.file) : null,
      movedMarker: marked ? movedFile(dataDir) : null,
      next: [...exportKey, `${stop}; start serve with the same HOOKRELAY_DATABASE_URL and HOOKRELAY_SECRET_KEY`],
    });
  } finally {
    await pool.end();
  }
}

/**
 * Marks the copied box moved (its setting row and MOVED note name the database, host and port, never the URL), so
 * that serve refuses to run it beside the new one. The copy has committed by now: a box that cannot be marked is
 * said on stderr and in the report, not an error.
 */
async function markBox(path: string, dataDir: string, url: string, log: Log): Promise<MovedTo | null> {
  try {
    const src = openSqliteDatabase({ path });
    try {
      return await markMoved(sqliteRepo(src), dataDir, pgTarget(url), Date.now());
    } finally {
      src.close();
    }
  } catch (err) {
    log.warn(
      `the copy is done, but the SQLite box could not be marked moved (${err instanceof Error ? err.message : 'error'}): stop its serve for good yourself.`,
    );
    return null;
  }
}

/** `sqlite:PATH`, PATH a database file or the data directory holding hookrelay.db. */
function sourcePath(from: string): string {
  const m = /^sqlite:(.+)$/.exec(from);
  if (!m) throw new AppError('invalid_input', '--from takes sqlite:PATH (a hookrelay.db file or its data directory).');
  let path = resolve(m[1]!);
  if (existsSync(path) && statSync(path).isDirectory()) path = databasePath(path);
  if (!existsSync(path)) throw new AppError('not_found', `No SQLite database at ${path}.`, { path });
  return path;
}

type BoxKey = { source: 'env'; key: Uint8Array } | { source: 'file'; file: string; key: Uint8Array };

/** The key the PostgreSQL instances will use: HOOKRELAY_SECRET_KEY when set, else the box's own key file. */
function boxKey(dataDir: string): BoxKey | null {
  const env = process.env.HOOKRELAY_SECRET_KEY;
  if (env) {
    const key = parseSecretKey(env);
    if (!key) throw new AppError('invalid_input', 'HOOKRELAY_SECRET_KEY must be 64 hex characters or base64 of 32 bytes.');
    return { source: 'env', key };
  }
  const file = join(dataDir, 'secret.key');
  if (!existsSync(file)) return null;
  const key = parseSecretKey(readFileSync(file, 'utf8'));
  if (!key) throw new AppError('invalid_input', `${file} is not a valid key file.`);
  return { source: 'file', file, key };
}

/** Copied secrets sealed with another key would fail every signature check on PostgreSQL: refuse before copying. */
function checkKeyOpens(key: BoxKey | null, sealed: string, dataDir: string): void {
  const file = join(dataDir, 'secret.key');
  if (!key) throw new AppError('invalid_input', `This box's endpoint secrets need their key: set HOOKRELAY_SECRET_KEY to the key the box used (no ${file}).`);
  try {
    new SecretBox(key.key).open(sealed);
  } catch {
    throw new AppError(
      'invalid_input',
      `${key.source === 'env' ? 'HOOKRELAY_SECRET_KEY' : file} does not open this box's endpoint secrets: use the key the box was served with${key.source === 'env' ? ` (${file}, or the HOOKRELAY_SECRET_KEY it ran with)` : ''}.`,
    );
  }
}
