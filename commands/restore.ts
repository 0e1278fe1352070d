import { defineCommand } from 'citty';
import { resolve } from 'node:path';
import { migrateSqlite, openSqliteDatabase } from '../db/sqlite/repo.ts';
import { databasePath, describeDataDir, locateDataDir, locateDatabaseUrl, prepareDataDir } from '../src/boot.ts';
import { AppError, refuse } from '../src/contract/errors.ts';
import { lockDataDir } from '../src/lib/dir-lock.ts';
import { stderrLog } from '../src/lib/log.ts';
import { boxAuditDeps, restoreBackup } from '../src/ops/backup.ts';
import { auditAdmin, humanActor } from '../src/ops/human-audit.ts';
import { actorArg, storageArgs } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'restore',
    description:
      'Restore a backup made by hookrelay backup into a data directory: checksums and the key checked first; refused while serve runs on it, and into a directory holding a box unless --force',
    examples: [
      'hookrelay restore --from box.hrbk --data-dir /var/lib/hookrelay',
      'hookrelay restore --from box.hrbk --key-file secret.key --data-dir /var/lib/hookrelay --force',
    ],
  },
  args: {
    from: { type: 'string', required: true, description: 'The backup file (hookrelay backup --to FILE)' },
    'key-file': {
      type: 'string',
      description: "The box key kept apart (its secret.key), for a backup taken without --include-key; checked against the backup's fingerprint",
    },
    force: { type: 'boolean', description: 'Replace the box the data directory holds (its database, and its key when the backup brings another)' },
    ...actorArg,
    ...storageArgs,
  },
  async run({ args }) {
    const actor = humanActor(args.actor);
    if (locateDatabaseUrl(args['database-url'])) {
      throw refuse({
        category: 'product_boundary',
        code: 'restore_postgres',
        reason:
          'hookrelay restore restores a SQLite box; a PostgreSQL database is restored with pg_restore (README, "Backups"). Unset HOOKRELAY_DATABASE_URL to restore into a data directory.',
        recommendedAction:
          'pg_restore --clean --if-exists --dbname "$HOOKRELAY_DATABASE_URL" hookrelay.dump, with every serve stopped, and HOOKRELAY_SECRET_KEY as it was.',
      });
    }
    const log = stderrLog();
    log.info(describeDataDir(locateDataDir(args['data-dir'])));
    const dataDir = prepareDataDir(args['data-dir']);
    const result = await auditAdmin(
      boxAuditDeps(dataDir),
      actor,
      'restore',
      async () => {
        // Held until this process ends: no serve runs on the directory while its database is replaced, nor starts.
        try {
          lockDataDir(dataDir);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          throw new AppError(
            'conflict',
            `${err.message.replace(/ Stop it first.*$/, '')} Restore replaces its database: stop serve first (systemctl stop hookrelay), then restore.`,
            err.details,
          );
        }
        const restored = restoreBackup({ from: args.from, dataDir, force: !!args.force, keyFile: args['key-file'] });
        // To this binary's schema, as serve would at start (the audit row below goes into a current table).
        const sqlite = openSqliteDatabase({ path: databasePath(dataDir) });
        try {
          return { ...restored, applied: await migrateSqlite(sqlite) };
        } finally {
          sqlite.close();
        }
      },
      (r) => ({
        storeId: null,
        transition: `restored a backup of ${r.header.createdAt} (${r.header.counts.events} events, key from ${r.key})${r.replaced.length ? ', replacing the box here' : ''}`,
      }),
    );
    const { header } = result;
    printJson({
      dialect: 'sqlite',
      dataDir,
      from: resolve(args.from),
      backup: { createdAt: header.createdAt, hookrelayVersion: header.hookrelayVersion, sha256: header.sections[0]!.sha256, counts: header.counts },
      key: { source: result.key, fingerprint: header.key.fingerprint },
      replaced: result.replaced,
      applied: result.applied,
      next: [`hookrelay serve --data-dir ${dataDir}`],
    });
  },
});
