import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { parseDuration } from '../src/contract/durations.ts';
import { auditAdmin, humanActor } from '../src/ops/human-audit.ts';
import { storeOrOnly } from '../src/ops/stores.ts';
import { issueSignInLink, LINK_TTL_MAX_MS, LINK_TTL_MS } from '../src/seat/session.ts';
import { actorArg, storageArgs } from './_args.ts';
import { adoptPublicUrl, withCore } from './_box.ts';

/** `hookrelay console`: a single-use, short-lived sign-in link to the store's console (/console), printed once as JSON. */
export default defineCommand({
  meta: {
    name: 'console',
    description: "Print a sign-in link to the store's console in the browser (single use, short-lived)",
    examples: ['hookrelay console', 'hookrelay console --shop your-store.myshopify.com --actor "Jane Ops" --ttl 5m'],
  },
  args: {
    shop: { type: 'string', description: 'Shop domain of the store (default: the only store of this box)' },
    ttl: { type: 'string', description: `How long the link works, at most ${LINK_TTL_MAX_MS / 60_000}m (default ${LINK_TTL_MS / 60_000}m)` },
    ...actorArg,
    ...storageArgs,
  },
  async run({ args }) {
    const ttlMs = args.ttl === undefined ? LINK_TTL_MS : parseDuration(args.ttl);
    if (!ttlMs || ttlMs > LINK_TTL_MAX_MS) throw new AppError('invalid_input', `--ttl must look like 5m or 30m, at most ${LINK_TTL_MAX_MS / 60_000}m.`);
    // The console's person: the one the audit rows of the session name (--actor, else user@host).
    const actor = humanActor(args.actor);
    await withCore(args, async (core) => {
      await adoptPublicUrl(core, args);
      const store = await storeOrOnly(core, args.shop);
      const link = await auditAdmin(
        core,
        actor,
        'issueConsoleLink',
        () => issueSignInLink(core, store.shopDomain, actor, ttlMs),
        // The link is in the answer only: the row says a link was made and for how long.
        () => ({ storeId: store.id, transition: `console sign-in link for ${ttlMs / 1000} s` }),
        async () => store.id,
      );
      return { ...link, note: 'Open the URL in a browser; it works once. The session lasts 12 hours; sign out from the console.' };
    });
  },
});
