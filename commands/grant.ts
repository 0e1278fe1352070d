import { defineCommand } from 'citty';
import { TIER_NAMES } from '../src/contract/scopes.ts';
import { checkGrantRequest, issueGrant, listGrants, revokeGrant } from '../src/ops/grants.ts';
import { auditAdmin, humanActor, storeIdOf } from '../src/ops/human-audit.ts';
import { actorArg, storageArgs } from './_args.ts';
import { withCore } from './_box.ts';

const issue = defineCommand({
  meta: {
    name: 'issue',
    description: 'Mint an agent grant; prints its token once',
    examples: ['hookrelay grant issue --shop your-store.myshopify.com --tier operator --ttl 8h --label ci'],
  },
  args: {
    shop: { type: 'string', required: true, description: 'Shop domain of the store' },
    tier: { type: 'string', required: true, description: TIER_NAMES.join(' | ') },
    scopes: { type: 'string', description: 'Comma-separated subset of the tier’s scopes' },
    ttl: { type: 'string', required: true, description: 'Lifetime, e.g. 8h, 30m, 7d' },
    label: { type: 'string', description: 'Who or what the grant is for' },
    ...actorArg,
    ...storageArgs,
  },
  async run({ args }) {
    const { tier, ttlMs, label } = checkGrantRequest(args);
    const actor = humanActor(args.actor);
    await withCore(args, (core) =>
      auditAdmin(
        core,
        actor,
        'issueGrant',
        () =>
          issueGrant(core, {
            shopDomain: args.shop,
            tier,
            scopes: args.scopes
              ?.split(',')
              .map((s) => s.trim())
              .filter(Boolean),
            ttlMs,
            label,
          }),
        // The token is in the answer only: the row names the grant, its tier, scopes and lifetime.
        async (g) => ({
          storeId: await storeIdOf(core, args.shop),
          targetId: g.grantId,
          transition: `issued ${g.tier} (${g.scopes.join(', ')}) for ${ttlMs / 1000} s`,
        }),
        () => storeIdOf(core, args.shop),
      ),
    );
  },
});

const list = defineCommand({
  meta: { name: 'list', description: 'List grants (never their tokens)', examples: ['hookrelay grant list'] },
  args: { shop: { type: 'string', description: 'Only this store' }, ...storageArgs },
  run: ({ args }) => withCore(args, async (core) => ({ grants: await listGrants(core, args.shop) }), false),
});

const revoke = defineCommand({
  meta: { name: 'revoke', description: 'Revoke a grant now', examples: ['hookrelay grant revoke grt_…'] },
  args: { grantId: { type: 'positional', required: true, description: 'Grant id (gr_…)' }, ...actorArg, ...storageArgs },
  run: ({ args }) => {
    const actor = humanActor(args.actor);
    return withCore(args, (core) =>
      auditAdmin(
        core,
        actor,
        'revokeGrant',
        () => revokeGrant(core, args.grantId),
        (g) => ({ storeId: g.storeId, targetId: g.grantId, transition: 'revoked' }),
      ),
    );
  },
});

export default defineCommand({
  meta: { name: 'grant', description: 'Issue, list and revoke agent grants (local admin only)' },
  subCommands: { issue, list, revoke },
});
