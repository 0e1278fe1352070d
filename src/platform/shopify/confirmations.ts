/**
 * POST /flow/actions/confirm: Shopify Flow runs the "Confirm hookrelay event" action (shopify/extensions/confirm-action),
 * the last step of a workflow that starts from a hookrelay trigger. Authenticated with Shopify's HMAC (base64, over
 * the raw body, keyed with the app's client secret), deduped by Flow's `action_run_id`. It records a downstream
 * confirmation on the event: `delivered` keeps its meaning, and event detail, the event result, the reliability
 * read and the events list's `unconfirmedFor` read what is recorded here.
 *
 * Flow resends a run (same action_run_id) after a timeout, a 5xx or a 429, for up to 36 hours, and takes any other
 * 4xx as a final failure whose answer the merchant sees on the run: refusals that a resend cannot cure (a forged
 * signature, an unknown store or event, a malformed field) are 4xx with a message a merchant can act on.
 */
import type { ConfirmationStore } from '../../../db/areas/confirmations.ts';
import type { EventReads, TenantStore } from '../../../db/repo.ts';
import { CONFIRM_ACTION, CONFIRMATION_OUTCOMES } from '../../contract/triggers.ts';
import type { CoreWith } from '../../core.ts';
import { redactText } from '../../lib/redact.ts';
import type { PlatformOps } from '../types.ts';
import { malformedFields, readSignedFlowPost } from './app.ts';

/** What a note keeps: secrets (those serve holds too) and email addresses redacted, then its first 500 characters. */
const NOTE_MAX = 500;
const EVENT_ID = /^evt_[0-9a-z]{1,64}$/;

/** Built with the first run: a serve that never gets one does not load zod for it. */
const runSchema = async () => {
  const { z } = await import('zod');
  const { eventId, outcome, note } = CONFIRM_ACTION.fields;
  // Flow sends an optional field left empty as "" (or not at all).
  const optionalText = z.string().max(10_000).optional();
  return z.object({
    action_run_id: z.string().min(1).max(255),
    shopify_domain: z.string().min(1).max(255),
    shop_id: z.union([z.number(), z.string()]).optional(),
    handle: z.string().max(255).optional(),
    action_definition_id: z.string().max(255).optional(),
    properties: z.object({ [eventId]: z.string().max(255), [outcome]: optionalText, [note]: optionalText }),
  });
};
let schema: ReturnType<typeof runSchema> | undefined;

const reply = (status: number, code: string, message: string) => Response.json({ code, message }, { status });

/** The confirm action's route; `ops` gives the secrets serve holds, redacted from a run's note. */
export function createConfirmationHandler(
  core: CoreWith<Pick<TenantStore, 'getStoreByShop'> & Pick<EventReads, 'getEvent'> & ConfirmationStore>,
  ops: Pick<PlatformOps, 'heldSecrets'>,
) {
  return async function handleConfirmation(req: Request): Promise<Response> {
    // Without the secret a 503: Flow resends the run for up to 36 hours, time for the operator to set it.
    const json = await readSignedFlowPost(req, core.config.env, 'Flow action runs', {
      code: 'confirmations_not_configured',
      message: 'This server has no Shopify app secret configured, so it cannot verify Flow action runs yet.',
    });
    if (!json.ok) return json.res;
    const parsed = (await (schema ??= runSchema())).safeParse(json.doc);
    if (!parsed.success) return reply(400, 'invalid_input', `The action run is missing or has malformed fields: ${malformedFields(parsed.error.issues)}.`);
    const run = parsed.data;
    const action = run.handle ?? run.action_definition_id;
    if (action !== undefined && action !== CONFIRM_ACTION.handle) return reply(404, 'not_found', 'No such action in this app.');
    const props = run.properties as Record<string, string | undefined>;

    // A resend of a recorded run: 200 and nothing more, whatever has changed since (the event deleted, say).
    if (await core.repo.getConfirmationRun(run.action_run_id)) return Response.json({ status: 'duplicate' });

    const outcome = (props[CONFIRM_ACTION.fields.outcome] ?? '').trim().toLowerCase() || 'ok';
    if (!(CONFIRMATION_OUTCOMES as readonly string[]).includes(outcome)) {
      return reply(400, 'invalid_input', `Outcome must be ${CONFIRMATION_OUTCOMES.join(' or ')} (empty means ok).`);
    }
    const eventId = (props[CONFIRM_ACTION.fields.eventId] ?? '').trim();
    // The value is the merchant's (a Liquid variable): echoed only once it has the shape of an event id.
    if (!EVENT_ID.test(eventId)) {
      return reply(400, 'invalid_input', "Hookrelay event ID must be an evt_… id: use the trigger's hookrelay event id field.");
    }
    const store = await core.repo.getStoreByShop(run.shopify_domain.trim().toLowerCase());
    if (!store) return reply(404, 'not_found', 'No store for this shop on this server.');
    const event = await core.repo.getEvent(store.id, eventId);
    if (!event) return reply(404, 'not_found', `No hookrelay event ${eventId} for this store.`);
    // Only an event handed to Flow can have started a workflow (a test, rejected or duplicate receipt never was).
    if (event.attempts === 0 && event.deliveredAt === null) {
      return reply(409, 'event_not_handed_off', `Hookrelay event ${eventId} was never handed to Flow (${event.outcome}), so no workflow started from it.`);
    }
    const note = props[CONFIRM_ACTION.fields.note]?.trim();
    const recorded = await core.repo.insertConfirmation({
      actionRunId: run.action_run_id,
      storeId: store.id,
      eventId: event.id,
      endpointId: event.endpointId,
      outcome: outcome as (typeof CONFIRMATION_OUTCOMES)[number],
      note: note ? [...redactText(note, ops.heldSecrets(core, [store]))].slice(0, NOTE_MAX).join('') : null,
      confirmedAt: core.clock.now(),
    });
    // Never the note: it is the merchant's text, stored redacted and shown by the reads only.
    if (recorded) core.log.info(`flow confirmation: ${store.shopDomain} ${event.id} outcome=${outcome}`);
    return Response.json({ status: recorded ? 'recorded' : 'duplicate' });
  };
}
