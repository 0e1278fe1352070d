import { defineCommand } from 'citty';
import { openCore } from '../src/boot.ts';
import { auditAdmin, humanActor, storeIdOf } from '../src/ops/human-audit.ts';
import { setPlan } from '../src/ops/stores.ts';
import { refuseChangeToMovedBox } from './_box.ts';
import { actorArg, PLAN_NAMES, storageArgs } from './_args.ts';
import { printJson } from './_output.ts';

const set = defineCommand({
  meta: {
    name: 'set',
    description: "Change the store's plan on this box (local admin only; held events flow again when the new plan has room)",
    examples: ['hookrelay plan set --shop your-store.myshopify.com --plan growth'],
  },
  args: {
    shop: { type: 'string', required: true, description: 'Shop domain, e.g. your-store.myshopify.com' },
    plan: { type: 'string', required: true, description: PLAN_NAMES },
    ...actorArg,
    ...storageArgs,
  },
  async run({ args }) {
    const actor = humanActor(args.actor);
    refuseChangeToMovedBox(args);
    const core = await openCore({ dataDir: args['data-dir'], databaseUrl: args['database-url'], create: false });
    try {
      printJson(
        await auditAdmin(
          core,
          actor,
          'setPlan',
          () => setPlan(core, args.shop, args.plan),
          (r) => ({ storeId: r.store.storeId, transition: `plan ${r.previousPlan} -> ${r.store.plan}` }),
          () => storeIdOf(core, args.shop),
        ),
      );
    } finally {
      await core.repo.close();
    }
  },
});

export default defineCommand({
  meta: { name: 'plan', description: "The store's plan (local admin only)" },
  subCommands: { set },
});
