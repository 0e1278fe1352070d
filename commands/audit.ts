import { defineCommand } from 'citty';
import { openCore } from '../src/boot.ts';
import { AppError } from '../src/contract/errors.ts';
import { iso, parseDuration } from '../src/lib/clock.ts';
import { dataDirArg } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: { name: 'audit', description: 'Read the audit log: one row per operation call and intent transition (local admin only)' },
  args: {
    since: { type: 'string', description: 'A duration back from now (e.g. 1h, 7d) or an RFC 3339 time (default 24h)' },
    shop: { type: 'string', description: 'Only this store' },
    limit: { type: 'string', description: 'At most this many rows (default 1000)' },
    ...dataDirArg,
  },
  async run({ args }) {
    const core = await openCore({ dataDir: args['data-dir'], create: false });
    try {
      const text = args.since ?? '24h';
      const ago = parseDuration(text);
      const since = ago != null ? core.clock.now() - ago : Date.parse(text);
      if (Number.isNaN(since)) throw new AppError('invalid_input', '--since takes a duration (1h, 7d) or an RFC 3339 time.');
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
