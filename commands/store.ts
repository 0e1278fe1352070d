/** `hookrelay store show|set`: a store's settings and the box-wide public URL, on the local database. */
import { defineCommand } from 'citty';
import { openCore } from '../src/boot.ts';
import { DESTINATIONS } from '../src/contract/platform.ts';
import { stderrLog } from '../src/lib/log.ts';
import { auditAdmin, humanActor, storeIdOf } from '../src/ops/human-audit.ts';
import { describeMovedTo, movedMarker } from '../src/ops/moved-box.ts';
import { adoptPublicUrl, refuseChangeToMovedBox, sqliteBox } from './_box.ts';
import { setStoreSettings, showStores } from '../src/ops/stores.ts';
import { actorArg, credentialArgs, PLAN_NAMES, storageArgs } from './_args.ts';
import { printJson } from './_output.ts';

const show = defineCommand({
  meta: {
    name: 'show',
    description:
      "Show the stores' settings (destination, credentials: mode, variable NAMES, token expiry; plan), each store's handoff (active or paused) and the public URL",
    examples: ['hookrelay store show --shop your-store.myshopify.com'],
  },
  args: { shop: { type: 'string', description: 'Only this store' }, ...storageArgs },
  async run({ args }) {
    const core = await openCore({ dataDir: args['data-dir'], databaseUrl: args['database-url'], create: false });
    const box = sqliteBox(args);
    const moved = box && movedMarker(box.dir, box.file);
    if (moved) stderrLog('warn').warn(`This box was moved to ${describeMovedTo(moved.to)}: what follows is its copy here, not what is served.`);
    try {
      await adoptPublicUrl(core, args);
      printJson(await showStores(core, args.shop));
    } finally {
      await core.repo.close();
    }
  },
});

const set = defineCommand({
  meta: {
    name: 'set',
    description: "Change a store's settings (what init will not change); a running serve applies them within seconds",
    examples: [
      'hookrelay store set --shop your-store.myshopify.com --destination shopify --auth client-credentials --client-id ID --client-secret-env SHOPIFY_CLIENT_SECRET',
      'hookrelay store set --shop your-store.myshopify.com --destination shopify --admin-token-env SHOPIFY_ADMIN_TOKEN',
    ],
  },
  args: {
    shop: { type: 'string', description: 'Shop domain (required unless only box-wide settings are given: --public-url, --app-client-id)' },
    destination: { type: 'string', description: `${DESTINATIONS.join(' | ')} (shopify needs credentials, given now or before)` },
    ...credentialArgs,
    plan: { type: 'string', description: PLAN_NAMES },
    'public-url': {
      type: 'string',
      description: "Box-wide base of endpoint URLs, e.g. https://relay.example.com ('' clears it; env HOOKRELAY_PUBLIC_URL wins)",
    },
    'app-client-id': {
      type: 'string',
      description: "Box-wide: the Shopify app's client id, for merchants' installs at /auth/install (env HOOKRELAY_SHOPIFY_CLIENT_ID wins)",
    },
    ...actorArg,
    ...storageArgs,
  },
  async run({ args }) {
    const actor = humanActor(args.actor);
    refuseChangeToMovedBox(args);
    const core = await openCore({ dataDir: args['data-dir'], databaseUrl: args['database-url'], create: false });
    try {
      await adoptPublicUrl(core, args);
      printJson(
        await auditAdmin(
          core,
          actor,
          'setStoreSettings',
          () =>
            setStoreSettings(core, args.shop, {
              destination: args.destination,
              adminTokenEnv: args['admin-token-env'],
              auth: args.auth,
              clientId: args['client-id'],
              clientSecretEnv: args['client-secret-env'],
              plan: args.plan,
              publicUrl: args['public-url'],
              appClientId: args['app-client-id'],
            }),
          // Which settings changed, by name: their values stay in store show.
          (r) => ({ storeId: r.store?.storeId ?? null, transition: r.changed.length ? `changed ${r.changed.join(', ')}` : 'unchanged' }),
          () => storeIdOf(core, args.shop),
        ),
      );
    } finally {
      await core.repo.close();
    }
  },
});

export default defineCommand({
  meta: { name: 'store', description: "Show or change a store's settings (local admin only)" },
  subCommands: { show, set },
});
