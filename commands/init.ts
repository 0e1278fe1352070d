import { defineCommand } from 'citty';
import { describeStorage, locateDataDir, locateDatabaseUrl, openCore } from '../src/boot.ts';
import { DESTINATIONS, type DestinationName } from '../src/contract/platform.ts';
import { stderrLog } from '../src/lib/log.ts';
import { pgTarget } from '../src/lib/pg-target.ts';
import { auditAdmin, humanActor, storeIdOf } from '../src/ops/human-audit.ts';
import { describeDestination, initStore } from '../src/ops/stores.ts';
import { adoptPublicUrl, refuseChangeToMovedBox } from './_box.ts';
import { actorArg, credentialArgs, PLAN_NAMES, storageArgs } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: {
    name: 'init',
    description: 'Create the store this box relays for (idempotent; local admin only). Change an existing store with hookrelay store set',
    examples: [
      'hookrelay init --shop your-store.myshopify.com',
      'hookrelay init --shop your-store.myshopify.com --destination shopify --auth client-credentials --client-id ID --client-secret-env SHOPIFY_CLIENT_SECRET',
    ],
  },
  args: {
    shop: { type: 'string', required: true, description: 'Shop domain, e.g. your-store.myshopify.com' },
    'platform-account-id': { type: 'string', description: 'Platform account id' },
    'installation-id': { type: 'string', description: 'App installation id' },
    plan: { type: 'string', description: PLAN_NAMES },
    destination: { type: 'string', description: `log (default) | ${DESTINATIONS.filter((d) => d !== 'log').join(' | ')}` },
    ...credentialArgs,
    ...actorArg,
    ...storageArgs,
  },
  async run({ args }) {
    const actor = humanActor(args.actor);
    refuseChangeToMovedBox(args);
    const dataDir = locateDataDir(args['data-dir']);
    const log = stderrLog();
    log.info(describeStorage(dataDir, args['database-url']));
    const core = await openCore({ dataDir: dataDir.path, databaseUrl: args['database-url'], log });
    try {
      await adoptPublicUrl(core, args);
      const result = await auditAdmin(
        core,
        actor,
        'initStore',
        () =>
          initStore(core, {
            shopDomain: args.shop,
            platformAccountId: args['platform-account-id'],
            installationId: args['installation-id'],
            plan: args.plan,
            destination: args.destination as DestinationName | undefined,
            adminTokenEnv: args['admin-token-env'],
            auth: args.auth,
            clientId: args['client-id'],
            clientSecretEnv: args['client-secret-env'],
          }),
        (r) => ({ storeId: r.store.storeId, transition: r.created ? 'created' : 'unchanged' }),
        () => storeIdOf(core, args.shop),
      );
      const row = await core.repo.getStoreByShop(result.store.shopDomain);
      if (row) log.info(describeDestination(row, core.config.env));
      // On PostgreSQL the data directory is not used; the database is named by the log line above, never by its URL.
      const db = locateDatabaseUrl(args['database-url']);
      printJson(db ? { ...result, database: { dialect: 'postgres', ...pgTarget(db.url) } } : { ...result, dataDir: dataDir.path });
    } finally {
      await core.repo.close();
    }
  },
});
