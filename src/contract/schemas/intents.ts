/** The action-intent lifecycle every preview_or_execute operation shares: its request bodies and the intent it answers. */
import { z } from 'zod';
import { Id, Timestamp } from './common.ts';
import { RefusalSchema } from './envelope.ts';
import { BulkReplaySelectionSchema } from './recovery.ts';

export const INTENT_KINDS = ['endpoint_edit', 'endpoint_delete', 'secret_rotation', 'replay', 'bulk_replay', 'diagnostics_share', 'support_request'] as const;
const IntentStateSchema = z.enum(['previewed', 'executing', 'executed', 'refused', 'expired', 'failed']);

export const IntentExecuteSchema = z
  .object({
    mode: z.literal('execute'),
    intentId: Id('int'),
    confirmationToken: z.string().min(1).max(200),
  })
  .strict()
  .meta({ id: 'IntentExecuteRequest', description: 'Execute a previewed intent. Send an `Idempotency-Key` header.' });

/** Request body of an intent route: preview with the kind's input, or execute a preview. */
export function intentRequest<T extends z.ZodType>(id: string, input: T) {
  return z.discriminatedUnion('mode', [z.object({ mode: z.literal('preview'), input }).strict(), IntentExecuteSchema]).meta({ id });
}

/**
 * A validated intent body, for a kind whose input is `I`: the step its `mode` names. `preview` changes nothing;
 * `execute` makes the change a stored preview showed; `submit` previews and executes in one call (a support request,
 * with consent: SupportRequestBodySchema). intentRequest's bodies are the first two.
 */
export type IntentBody<I> = { mode: 'preview'; input: I } | z.output<typeof IntentExecuteSchema> | { mode: 'submit'; input: I; consent: true };
export type IntentMode = IntentBody<unknown>['mode'];

/** Whether each step makes the change. */
const MAKES_CHANGE: Readonly<Record<IntentMode, boolean>> = { preview: false, execute: true, submit: true };

/** The intent step a request body names; undefined for a body that names none (validated or not, of any operation). */
function modeOf(body: unknown): IntentMode | undefined {
  const mode = body !== null && typeof body === 'object' ? (body as { mode?: unknown }).mode : undefined;
  return typeof mode === 'string' && Object.hasOwn(MAKES_CHANGE, mode) ? (mode as IntentMode) : undefined;
}

/**
 * Whether a request body makes its intent's change (an execute or a submit step): the one answer the pipeline, the
 * intent lifecycle and the CLI ask. Such a step needs an Idempotency-Key, is not rate limited, counts
 * executed_actions (not action_previews) and answers 200 (a preview 201). A preview, or a body of an operation
 * without intents, does not.
 */
export function executesChange(body: unknown): boolean {
  const mode = modeOf(body);
  return mode !== undefined && MAKES_CHANGE[mode];
}

const ConfirmationSchema = z
  .object({ token: z.string(), expiresAt: Timestamp })
  .meta({ id: 'Confirmation', description: 'Single-use; send back with mode execute before it expires.' });

const ChangeSchema = z.object({ field: z.string(), from: z.unknown(), to: z.unknown() }).meta({ id: 'Change' });

const IntentPreviewSchema = z
  .object({
    summary: z.string(),
    changes: z.array(ChangeSchema),
    sideEffects: z.array(z.string()),
    meterCost: z.array(z.object({ meter: z.string(), units: z.number().int() })),
    warnings: z.array(z.string()),
    selection: BulkReplaySelectionSchema.optional().describe('Bulk replay only: the events matched'),
    fieldDryRun: z
      .object({
        events: z.number().int().min(0).describe("Events read: the store's newest with a retained body, at most 50"),
        fields: z.array(z.object({ name: z.string(), found: z.number().int(), missing: z.number().int(), wrongType: z.number().int() })),
      })
      .optional()
      .describe('Endpoint edit with fields only: how each field would have read those events. Counts only, never a value'),
  })
  .meta({ id: 'IntentPreview', description: 'What execution would change. Redacted: no secrets, bodies or headers.' });

const ActionIntentSchema = z
  .object({
    id: Id('int'),
    kind: z.enum(INTENT_KINDS),
    state: IntentStateSchema,
    targetId: z.string().nullable(),
    preview: IntentPreviewSchema,
    confirmation: ConfirmationSchema.nullable(),
    result: z
      .object({
        summary: z.string(),
        resourceId: z.string().nullable(),
        secret: z.string().optional().describe('Only on secret-rotation execute, once'),
        queued: z.number().int().optional().describe('Bulk replay only: events queued for another handoff'),
        skipped: z
          .number()
          .int()
          .optional()
          .describe('Bulk replay only: previewed events left alone (replayed, re-attempted or no longer retained since the preview)'),
      })
      .nullable(),
    refusal: RefusalSchema.nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'ActionIntent' });

export const ActionIntentReadSchema = z.object({ intent: ActionIntentSchema }).meta({ id: 'ActionIntentRead' });
