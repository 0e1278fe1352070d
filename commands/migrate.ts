import { defineCommand } from 'citty';
import { migrateSqlite, openSqliteDatabase } from '../db/sqlite/repo.ts';
import { databasePath, describeDataDir, locateDataDir, prepareDataDir } from '../src/boot.ts';
import { stderrLog } from '../src/lib/log.ts';
import { dataDirArg } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: { name: 'migrate', description: 'Apply database migrations (serve also applies them at start)', examples: ['hookrelay migrate --data-dir /var/lib/hookrelay'] },
  args: { ...dataDirArg },
  async run({ args }) {
    const log = stderrLog();
    log.info(describeDataDir(locateDataDir(args['data-dir'])));
    const dir = prepareDataDir(args['data-dir']);
    const db = openSqliteDatabase({ path: databasePath(dir) });
    try {
      const applied = await migrateSqlite(db);
      const stores = db.query('SELECT shop_domain AS shop, destination FROM stores ORDER BY id').all() as { shop: string; destination: string }[];
      for (const s of stores) log.info(`store ${s.shop}: destination ${s.destination}`);
      printJson({ dialect: 'sqlite', applied, dataDir: dir });
    } finally {
      db.close();
    }
  },
});
