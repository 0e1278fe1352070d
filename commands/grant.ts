import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { TIER_NAMES } from '../src/contract/scopes.ts';
import { approveAuthorization, denyAuthorization, findAuthorization, type AuthorizationRequest } from '../src/oauth/authorization.ts';
import { checkGrantRequest, issueGrant, listGrants, revokeGrant } from '../src/ops/grants.ts';
import { auditAdmin, humanActor, storeIdOf } from '../src/ops/human-audit.ts';
import { storeOrOnly } from '../src/ops/stores.ts';
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
  meta: { name: 'revoke', description: 'Revoke a grant now', examples: ['hookrelay grant revoke gr_…'] },
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

const approve = defineCommand({
  meta: {
    name: 'approve',
    description: "Approve (or deny) an MCP client's authorization request by the code its page shows; the client then gets its grant",
    examples: ['hookrelay grant approve WDJB-MJHT --tier operator --ttl 7d --label "Claude on my laptop"', 'hookrelay grant approve WDJB-MJHT --deny'],
  },
  args: {
    code: { type: 'positional', required: true, description: 'The code the authorization page shows, e.g. WDJB-MJHT' },
    tier: { type: 'string', description: `${TIER_NAMES.join(' | ')}: one the request offers (never above the scope the client asked)` },
    ttl: { type: 'string', description: 'Lifetime of the grant, e.g. 8h, 7d; at most 90d' },
    label: { type: 'string', description: 'Who or what the grant is for (default: the tier)' },
    shop: { type: 'string', description: 'Shop domain of the store it acts on (default: the only store of this box)' },
    deny: { type: 'boolean', description: 'Refuse the request instead' },
    ...actorArg,
    ...storageArgs,
  },
  run: ({ args }) => {
    const actor = humanActor(args.actor);
    return withCore(args, async (core) => {
      const human = { store: await storeOrOnly(core, args.shop), actor, face: 'cli' as const };
      if (args.deny) return { authorization: decided(await denyAuthorization(core, human, args.code)) };
      const req = await findAuthorization(core, args.code);
      if (req?.status === 'pending' && (!args.tier || !args.ttl)) {
        throw new AppError('invalid_input', `Name --tier (${req.offeredTiers.join(', ')}) and --ttl (at most 90d) to approve, or --deny.`);
      }
      const choice = { tier: args.tier ?? '', ttl: args.ttl ?? '', label: args.label };
      return { authorization: decided(await approveAuthorization(core, human, args.code, choice)) };
    });
  },
});

/** What `approve` prints of a decided request: the client, what it asked and got; never the request's id. */
function decided(req: AuthorizationRequest) {
  return {
    userCode: req.userCode,
    status: req.status,
    client: req.client,
    resource: req.resource,
    requestedScopes: req.requestedScopes,
    grantId: req.grantId,
    note:
      req.status === 'approved'
        ? "The client's browser continues by itself and receives its tokens; revoke with hookrelay grant revoke."
        : "The client's browser is told the request was denied.",
  };
}

export default defineCommand({
  meta: { name: 'grant', description: "Issue, list and revoke agent grants, and approve an MCP client's request (local admin only)" },
  subCommands: { issue, list, revoke, approve },
});
