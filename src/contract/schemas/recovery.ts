/** Inputs of the recovery intents: replay, bulk replay (and what its preview selected), diagnostics share. */
import { z } from 'zod';
import { Id, Timestamp } from './common.ts';
import { EventOutcomeSchema, REPLAYABLE_OUTCOMES } from './events.ts';
import { WindowSchema } from './reliability.ts';

export const ReplayInputSchema = z
  .object({ reason: z.string().max(500).optional() })
  .strict()
  .meta({ id: 'ReplayInput' });

const BulkReplayFilterSchema = z
  .object({
    outcome: EventOutcomeSchema.default('failed').describe(
      `Events that ended this way (default failed). ${REPLAYABLE_OUTCOMES.join(', ')} can be replayed; any other outcome is refused as a single replay refuses it`,
    ),
    code: z.string().min(1).max(100).optional().describe('Only events with this stable code, e.g. `SVC_HANDOFF_RETRY_EXHAUSTED`'),
    endpointId: z.string().min(1).max(100).optional().describe('Only events of this endpoint (`ep_…`)'),
    since: z.iso.datetime().optional().describe('Received at or after (RFC 3339)'),
    until: z.iso.datetime().optional().describe('Received before (RFC 3339)'),
  })
  .strict()
  .refine((f) => f.since === undefined || f.until === undefined || Date.parse(f.since) < Date.parse(f.until), {
    message: 'since must be before until',
    path: ['until'],
  })
  .meta({ id: 'BulkReplayFilterInput', description: "Which of the store's events to replay: all the conditions given hold." });

export const BulkReplayInputSchema = z
  .object({
    reason: z.string().max(500).optional().describe('Why, for the audit trail (free text: secrets and email addresses are redacted)'),
    filter: BulkReplayFilterSchema,
  })
  .strict()
  .meta({ id: 'BulkReplayInput' });
export type BulkReplayInput = z.output<typeof BulkReplayInputSchema>;

export const BulkReplaySelectionSchema = z
  .object({
    filter: z.object({
      outcome: EventOutcomeSchema,
      code: z.string().optional(),
      endpointId: z.string().optional(),
      since: Timestamp.optional(),
      until: Timestamp.optional(),
    }),
    count: z.number().int().min(1).describe('Matching events whose body is retained: the ones execute hands off again'),
    excluded: z.object({
      bodyNotRetained: z.number().int().min(0).describe('Matching events whose raw body is no longer retained; they cannot be replayed'),
    }),
    window: z.object({ oldestReceivedAt: Timestamp, newestReceivedAt: Timestamp }).describe('Receipt times of the oldest and newest event counted'),
    throughEventId: Id('evt').describe('The newest event counted: execute replays none newer'),
    asOf: Timestamp.describe('When the preview matched: an event attempted after it (replayed singly, retried) is skipped by execute'),
    sample: z
      .array(z.object({ id: Id('evt'), endpointId: z.string(), outcome: EventOutcomeSchema, code: z.string().nullable(), receivedAt: Timestamp }))
      .max(10)
      .describe('The oldest events counted, up to ten'),
  })
  .meta({ id: 'BulkReplaySelection', description: 'What a bulk replay preview matched, and the bound its execute keeps to.' });
export type BulkReplaySelection = z.infer<typeof BulkReplaySelectionSchema>;

export const DiagnosticsShareInputSchema = z
  .object({
    eventIds: z.array(z.string()).max(50).optional(),
    endpointIds: z.array(z.string()).max(20).optional(),
    window: WindowSchema.default('24h'),
    note: z.string().max(1000).optional(),
    expiresInHours: z.number().int().min(1).max(720).default(72),
  })
  .strict()
  .meta({ id: 'DiagnosticsShareInput' });
