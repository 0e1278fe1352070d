/** The action-intent lifecycle every preview_or_execute operation shares: its request bodies and the intent it answers. */
import { z } from 'zod';
import { Id, Timestamp } from './common.ts';
import { RefusalSchema } from './envelope.ts';
import { BulkReplaySelectionSchema } from './recovery.ts';

export const INTENT_KINDS = ['endpoint_edit', 'endpoint_delete', 'secret_rotation', 'replay', 'bulk_replay', 'diagnostics_share', 'support_request'] as const;
export const IntentStateSchema = z.enum(['previewed', 'executing', 'executed', 'refused', 'expired', 'failed']);

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
  return z
    .discriminatedUnion('mode', [z.object({ mode: z.literal('preview'), input }).strict(), IntentExecuteSchema])
    .meta({ id });
}

export const ConfirmationSchema = z
  .object({ token: z.string(), expiresAt: Timestamp })
  .meta({ id: 'Confirmation', description: 'Single-use; send back with mode execute before it expires.' });

export const ChangeSchema = z
  .object({ field: z.string(), from: z.unknown(), to: z.unknown() })
  .meta({ id: 'Change' });

export const IntentPreviewSchema = z
  .object({
    summary: z.string(),
    changes: z.array(ChangeSchema),
    sideEffects: z.array(z.string()),
    meterCost: z.array(z.object({ meter: z.string(), units: z.number().int() })),
    warnings: z.array(z.string()),
    selection: BulkReplaySelectionSchema.optional().describe('Bulk replay only: the events matched'),
  })
  .meta({ id: 'IntentPreview', description: 'What execution would change. Redacted: no secrets, bodies or headers.' });

export const ActionIntentSchema = z
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
        skipped: z.number().int().optional().describe('Bulk replay only: previewed events left alone (replayed, re-attempted or no longer retained since the preview)'),
      })
      .nullable(),
    refusal: RefusalSchema.nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'ActionIntent' });

export const ActionIntentReadSchema = z.object({ intent: ActionIntentSchema }).meta({ id: 'ActionIntentRead' });
