import { defineCommand } from 'citty';
import { checkPostgresUrl, describeDataDir, locateDataDir, locateDatabaseUrl, requireDatabase } from '../src/boot.ts';
import { refuse } from '../src/contract/errors.ts';
import { stderrLog } from '../src/lib/log.ts';
import { boxAuditDeps, createBackup, serveRunning } from '../src/ops/backup.ts';
import { auditAdmin, humanActor } from '../src/ops/human-audit.ts';
import { actorArg, storageArgs } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'backup',
    description:
      'A consistent copy of this SQLite box in one file, taken while serve keeps running (SQLite VACUUM INTO; checksummed). The key only with --include-key; else the answer names where it is. On PostgreSQL: pg_dump and the key (README, "Backups")',
    examples: ['hookrelay backup --to /var/backups/hookrelay/$(date +%F).hrbk --data-dir /var/lib/hookrelay', 'hookrelay backup --to box.hrbk --include-key'],
  },
  args: {
    to: { type: 'string', required: true, description: 'The backup file to write (0600); refused when it exists, unless --force' },
    'include-key': {
      type: 'boolean',
      description:
        'Put the box key (secret.key) in the file: whoever holds it can open the endpoint secrets. Without it, keep the key apart and give it to restore with --key-file',
    },
    force: { type: 'boolean', description: 'Replace an existing --to file' },
    ...actorArg,
    ...storageArgs,
  },
  async run({ args }) {
    const actor = humanActor(args.actor);
    const db = locateDatabaseUrl(args['database-url']);
    if (db) {
      checkPostgresUrl(db.url);
      const hint =
        'pg_dump --format=custom --file hookrelay.dump "$HOOKRELAY_DATABASE_URL", and keep HOOKRELAY_SECRET_KEY apart from the dump (README, "Backups")';
      throw refuse(
        {
          category: 'product_boundary',
          code: 'backup_postgres',
          reason:
            'hookrelay backup copies a SQLite box; this one is on PostgreSQL: back it up with pg_dump, and keep HOOKRELAY_SECRET_KEY too (without it no endpoint secret in the dump opens).',
          recommendedAction: hint,
        },
        { hint },
      );
    }
    const log = stderrLog();
    const dir = locateDataDir(args['data-dir']);
    const dataDir = requireDatabase(args['data-dir']);
    log.info(describeDataDir(dir));
    // Online or not, the copy is the same: VACUUM INTO reads one snapshot beside serve's writes.
    const online = serveRunning(dataDir);
    const result = await auditAdmin(
      boxAuditDeps(dataDir),
      actor,
      'backup',
      async () => createBackup({ dataDir, to: args.to, includeKey: !!args['include-key'], force: !!args.force, now: Date.now() }),
      // Neither the file's path nor the key: what was copied.
      (r) => ({ storeId: null, transition: `backup of ${r.header.counts.events} events, key ${r.header.key.included ? 'included' : 'not included'}` }),
    );
    for (const w of result.warnings) log.warn(w);
    const { header, key } = result;
    const keyNote = header.key.included
      ? 'The file holds the box key: keep it as secret as the key (whoever has it can open the endpoint secrets).'
      : key
        ? `The key is not in the file: keep ${key.source === 'file' ? key.file : 'HOOKRELAY_SECRET_KEY'} apart from it; restore needs it (--key-file, or HOOKRELAY_SECRET_KEY).`
        : null;
    printJson({
      dialect: 'sqlite',
      file: result.file,
      bytes: result.bytes,
      createdAt: header.createdAt,
      serveRunning: online,
      database: { bytes: header.sections[0]!.bytes, sha256: header.sections[0]!.sha256, migrations: header.migrations.length },
      counts: header.counts,
      key: {
        included: header.key.included,
        fingerprint: header.key.fingerprint,
        ...(header.key.included || !key ? {} : key.source === 'file' ? { file: key.file } : { env: 'HOOKRELAY_SECRET_KEY' }),
      },
      ...(result.warnings.length ? { warnings: result.warnings } : {}),
      next: [
        ...(keyNote ? [keyNote] : []),
        `hookrelay restore --from ${result.file} --data-dir DIR${header.key.included ? '' : ' --key-file KEY'} (with serve stopped on DIR)`,
      ],
    });
  },
});
