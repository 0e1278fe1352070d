/** `hookrelay metrics-token issue|list|revoke`: the scrape credential for GET /metrics (local admin only, never over HTTP). */
import { defineCommand } from 'citty';
import { auditAdmin, humanActor, storeIdOf } from '../src/ops/human-audit.ts';
import { issueMetricsToken, listMetricsTokens, revokeMetricsToken } from '../src/ops/metrics-tokens.ts';
import { actorArg, storageArgs } from './_args.ts';
import { withCore } from './_box.ts';

const issue = defineCommand({
  meta: {
    name: 'issue',
    description: "Make a token for scraping GET /metrics: it sees one store's series, never expires, prints once",
    examples: ['hookrelay metrics-token issue --shop your-store.myshopify.com --label prometheus'],
  },
  args: {
    shop: { type: 'string', description: "Shop domain of the store whose series it scrapes (default: the box's only store)" },
    label: { type: 'string', description: 'What scrapes with it, e.g. prometheus (default: metrics token)' },
    ...actorArg,
    ...storageArgs,
  },
  run: ({ args }) => {
    const actor = humanActor(args.actor);
    return withCore(args, (core) =>
      auditAdmin(
        core,
        actor,
        'issueMetricsToken',
        () => issueMetricsToken(core, { shopDomain: args.shop, label: args.label }),
        // The token is in the answer only: the row names the token's id and its store.
        (t) => ({ storeId: t.storeId, targetId: t.tokenId, transition: 'issued' }),
        () => storeIdOf(core, args.shop),
      ),
    );
  },
});

const list = defineCommand({
  meta: { name: 'list', description: 'List metrics tokens (never the tokens): id, store, label, state', examples: ['hookrelay metrics-token list'] },
  args: { shop: { type: 'string', description: 'Only this store' }, ...storageArgs },
  run: ({ args }) => withCore(args, async (core) => ({ metricsTokens: await listMetricsTokens(core, args.shop) }), false),
});

const revoke = defineCommand({
  meta: { name: 'revoke', description: 'Revoke a metrics token now: its next scrape answers 401', examples: ['hookrelay metrics-token revoke mtk_…'] },
  args: { tokenId: { type: 'positional', required: true, description: 'Metrics token id (mtk_…), never the token' }, ...actorArg, ...storageArgs },
  run: ({ args }) => {
    const actor = humanActor(args.actor);
    return withCore(args, (core) =>
      auditAdmin(
        core,
        actor,
        'revokeMetricsToken',
        () => revokeMetricsToken(core, args.tokenId),
        (t) => ({ storeId: t.storeId, targetId: t.tokenId, transition: t.alreadyRevoked ? 'already revoked' : 'revoked' }),
      ),
    );
  },
});

export default defineCommand({
  meta: { name: 'metrics-token', description: 'Issue, list and revoke tokens for scraping /metrics (local admin only)' },
  subCommands: { issue, list, revoke },
});
