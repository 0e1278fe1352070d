import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { iso } from '../src/lib/clock.ts';
import { heldSecrets } from '../src/held-secrets.ts';
import { getRequest, listRequests, REQUEST_KIND_NAMES, REQUESTS_LIST_DEFAULT, REQUESTS_LIST_MAX, type RequestKind } from '../src/ops/operator-requests.ts';
import { parseSince, SINCE_HELP, storageArgs } from './_args.ts';
import { withCore } from './_box.ts';

// Reads, like audit, grant list and store show: no audit row (src/ops/human-audit.ts records what changes something).

const list = defineCommand({
  meta: {
    name: 'list',
    description:
      'What agents asked of you (support, feature and expansion requests, diagnostics shares) and customer data requests from Shopify with the date they are due by, newest first (redacted text, never secrets)',
    examples: [
      'hookrelay requests list --kind support --since 7d',
      'hookrelay requests list --kind data_request',
      'hookrelay requests list --shop your-store.myshopify.com --limit 20',
    ],
  },
  args: {
    shop: { type: 'string', description: 'Only this store' },
    kind: { type: 'string', description: `${REQUEST_KIND_NAMES.join(' | ')}, or several comma-separated (default: all)` },
    since: { type: 'string', description: `Created at or after: ${SINCE_HELP} (default: any time)` },
    limit: { type: 'string', description: `The newest this many (default ${REQUESTS_LIST_DEFAULT}, at most ${REQUESTS_LIST_MAX})` },
    ...storageArgs,
  },
  async run({ args }) {
    const kinds = args.kind === undefined ? [] : args.kind.split(',').map((k) => k.trim());
    const unknown = kinds.filter((k) => !REQUEST_KIND_NAMES.includes(k as RequestKind));
    if (unknown.length || (args.kind !== undefined && !kinds.length)) {
      throw new AppError('invalid_input', `--kind takes ${REQUEST_KIND_NAMES.join(', ')} (comma-separated for several); got ${JSON.stringify(args.kind)}.`);
    }
    const limit = Number(args.limit ?? REQUESTS_LIST_DEFAULT);
    if (!Number.isInteger(limit) || limit < 1 || limit > REQUESTS_LIST_MAX) throw new AppError('invalid_input', `--limit must be 1 to ${REQUESTS_LIST_MAX}.`);
    await withCore(
      args,
      async (core) => {
        const since = args.since === undefined ? undefined : parseSince(args.since, core.clock.now());
        let storeId: string | undefined;
        if (args.shop) {
          const store = await core.repo.getStoreByShop(args.shop.trim().toLowerCase());
          if (!store) throw new AppError('not_found', `No store ${args.shop}.`);
          storeId = store.id;
        }
        const held = heldSecrets(core, await core.repo.listStores());
        const requests = await listRequests(core, { storeId, kinds: kinds as RequestKind[], since, limit }, held);
        return { since: since === undefined ? null : iso(since), requests };
      },
      false,
    );
  },
});

const show = defineCommand({
  meta: {
    name: 'show',
    description: 'One request or diagnostics share with everything the agent sent (redacted when stored)',
    examples: ['hookrelay requests show sup_…'],
  },
  args: { id: { type: 'positional', required: true, description: 'Request id (sup_…, feat_…, exp_…, diag_…, cdr_…)' }, ...storageArgs },
  run: ({ args }) => withCore(args, async (core) => ({ request: await getRequest(core, args.id, heldSecrets(core, await core.repo.listStores())) }), false),
});

export default defineCommand({
  meta: {
    name: 'requests',
    description: 'Read what agents asked of you (support, feature and expansion requests, diagnostics shares) and customer data requests (local admin only)',
  },
  subCommands: { list, show },
});
