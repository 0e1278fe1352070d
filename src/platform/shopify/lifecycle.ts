/**
 * POST /flow/lifecycle: Shopify Flow tells the app whether a store has an enabled workflow for one of its
 * triggers. Authenticated with Shopify's HMAC (base64, over the raw body, keyed with the app's client secret).
 * What it records is trigger readiness: setup state shows it, and the handoff worker ends events for a trigger
 * without a workflow as `no_workflow` instead of handing them off.
 */
import { ALERT_TRIGGER, TRIGGERS } from '../../contract/triggers.ts';
import type { ReadinessStore, TenantStore } from '../../../db/repo.ts';
import type { CoreWith } from '../../core.ts';
import { malformedFields, readSignedFlowPost } from './app.ts';

/** The app's triggers: one per endpoint variant, and the alert trigger (whose readiness decides whether alerts are sent). */
const HANDLES: ReadonlySet<string> = new Set([...Object.values(TRIGGERS).map((t) => t.handle), ALERT_TRIGGER.handle]);

/** Built with the first callback: a serve that never gets one does not load zod for it. */
const lifecycleSchema = async () => {
  const { z } = await import('zod');
  return z.object({
    flow_trigger_definition_id: z.string().min(1).max(255),
    has_enabled_flow: z.boolean(),
    shopify_domain: z.string().min(1).max(255),
    shop_id: z.union([z.number(), z.string()]).optional(),
    timestamp: z.iso.datetime({ offset: true }),
  });
};
let schema: ReturnType<typeof lifecycleSchema> | undefined;

const reply = (status: number, code: string, message: string) => Response.json({ code, message }, { status });

export function createLifecycleHandler(core: CoreWith<Pick<TenantStore, 'getStoreByShop'> & ReadinessStore>) {
  return async function handleLifecycle(req: Request): Promise<Response> {
    const json = await readSignedFlowPost(req, core.config.env, 'Lifecycle callbacks', {
      code: 'lifecycle_not_configured',
      message: 'This server has no Shopify app secret configured, so it cannot verify lifecycle callbacks.',
    });
    if (!json.ok) return json.res;
    const parsed = (await (schema ??= lifecycleSchema())).safeParse(json.doc);
    if (!parsed.success) return reply(400, 'invalid_input', `The callback is missing or has malformed fields: ${malformedFields(parsed.error.issues)}.`);
    const cb = parsed.data;
    const store = await core.repo.getStoreByShop(cb.shopify_domain.toLowerCase());
    if (!store) return reply(404, 'not_found', 'No store for this shop on this server.');
    if (!HANDLES.has(cb.flow_trigger_definition_id)) return reply(404, 'not_found', 'No such trigger in this app.');

    const at = Date.parse(cb.timestamp);
    const current = (await core.repo.listTriggerReadiness(store.id)).find((r) => r.handle === cb.flow_trigger_definition_id);
    // Shopify: a callback older than what is stored is ignored; the newest timestamp wins.
    if (current && current.updatedAt > at) return Response.json({ status: 'ignored', reason: 'stale' });
    await core.repo.setTriggerReadiness({ storeId: store.id, handle: cb.flow_trigger_definition_id, hasEnabledFlow: cb.has_enabled_flow, updatedAt: at });
    core.log.info(`flow lifecycle: ${store.shopDomain} ${cb.flow_trigger_definition_id} has_enabled_flow=${cb.has_enabled_flow}`);
    return Response.json({ status: 'recorded' });
  };
}
