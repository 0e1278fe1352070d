import { defineCommand } from 'citty';
import { openCore } from '../src/boot.ts';
import { initStore } from '../src/ops/stores.ts';
import { dataDirArg } from './_args.ts';
import { printJson } from './_output.ts';

export default defineCommand({
  meta: { name: 'init', description: 'Create the store this box relays for (idempotent; local admin only)', examples: ['hookrelay init --shop your-store.myshopify.com'] },
  args: {
    shop: { type: 'string', required: true, description: 'Shop domain, e.g. your-store.myshopify.com' },
    'platform-account-id': { type: 'string', description: 'Platform account id' },
    'installation-id': { type: 'string', description: 'App installation id' },
    plan: { type: 'string', description: 'free | starter | growth | scale (default free)' },
    destination: { type: 'string', description: 'log (default) | shopify' },
    'admin-token-env': { type: 'string', description: 'NAME of the env variable holding the Admin API token (never the token)' },
    ...dataDirArg,
  },
  async run({ args }) {
    const core = await openCore({ dataDir: args['data-dir'] });
    try {
      printJson(
        await initStore(core, {
          shopDomain: args.shop,
          platformAccountId: args['platform-account-id'],
          installationId: args['installation-id'],
          plan: args.plan,
          destination: args.destination as 'log' | 'shopify' | undefined,
          adminTokenEnv: args['admin-token-env'],
        }),
      );
    } finally {
      await core.repo.close();
    }
  },
});
