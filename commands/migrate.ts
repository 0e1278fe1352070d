import { defineCommand } from 'citty';
import { join } from 'node:path';
import { migrateSqlite, openSqliteDatabase } from '../db/sqlite/repo.ts';
import { prepareDataDir } from '../src/boot.ts';
import { dataDirArg } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: { name: 'migrate', description: 'Apply database migrations (serve also applies them at start)', examples: ['hookrelay migrate --data-dir /var/lib/hookrelay'] },
  args: { ...dataDirArg },
  async run({ args }) {
    const dir = prepareDataDir(args['data-dir']);
    const db = openSqliteDatabase({ path: join(dir, 'hookrelay.db') });
    try {
      printJson({ dialect: 'sqlite', applied: await migrateSqlite(db) });
    } finally {
      db.close();
    }
  },
});
