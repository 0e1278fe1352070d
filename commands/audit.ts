import { defineCommand } from 'citty';
import { openCore } from '../src/boot.ts';
import { AppError } from '../src/contract/errors.ts';
import { iso } from '../src/lib/clock.ts';
import { parseSince, SINCE_HELP, storageArgs } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'audit',
    description: 'Read the audit log: one row per operation call and intent transition (local admin only)',
    examples: ['hookrelay audit --since 1h --limit 50'],
  },
  args: {
    since: { type: 'string', description: `Rows at or after: ${SINCE_HELP} (default 24h)` },
    shop: { type: 'string', description: 'Only this store' },
    limit: { type: 'string', description: 'The newest this many rows, oldest first (default 1000)' },
    ...storageArgs,
  },
  async run({ args }) {
    const core = await openCore({ dataDir: args['data-dir'], databaseUrl: args['database-url'], create: false });
    try {
      const since = parseSince(args.since ?? '24h', core.clock.now());
      const limit = Number(args.limit ?? 1000);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw new AppError('invalid_input', '--limit must be 1 to 100000.');
      let storeId: string | undefined;
      if (args.shop) {
        const store = await core.repo.getStoreByShop(args.shop);
        if (!store) throw new AppError('not_found', `No store ${args.shop}.`);
        storeId = store.id;
      }
      const rows = await core.repo.listAudit({ storeId, since, limit });
      printJson({
        since: iso(since),
        entries: rows.map((r) => ({ ...r, at: iso(r.at), scopes: JSON.parse(r.scopes) as string[] })),
      });
    } finally {
      await core.repo.close();
    }
  },
});
