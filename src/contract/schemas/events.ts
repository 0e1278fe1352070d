/** Events as reads show them: receipts, handoff attempts, recovery options. Never a raw body. */
import { z } from 'zod';
import { DESTINATIONS } from '../platform.ts';
import { HandoffStateSchema } from '../platform-schemas.ts';
import { CONFIRMATION_OUTCOMES } from '../triggers.ts';
import { Id, Timestamp } from './common.ts';
import { TriggerVariantSchema } from './endpoints.ts';

export const EVENT_OUTCOMES = ['accepted', 'queued', 'delivered', 'no_workflow', 'failed', 'duplicate_suppressed', 'rejected', 'held', 'test'] as const;
export const EventOutcomeSchema = z.enum(EVENT_OUTCOMES);
/** The outcomes a replay (single or bulk) takes, while the body is retained; every other is refused with its reason. */
export const REPLAYABLE_OUTCOMES = ['delivered', 'failed', 'no_workflow'] as const satisfies readonly (typeof EVENT_OUTCOMES)[number][];
export type EventOutcome = z.infer<typeof EventOutcomeSchema>;

export const EventSummarySchema = z
  .object({
    id: Id('evt'),
    receiptId: Id('rcpt'),
    endpointId: z.string(),
    outcome: EventOutcomeSchema,
    code: z.string().nullable().describe('Stable code when the outcome is not delivered'),
    externalEventId: z.string().nullable(),
    eventType: z.string().nullable(),
    isTest: z.boolean(),
    receivedAt: Timestamp,
    lastAttemptAt: Timestamp.nullable(),
    attempts: z.number().int().min(0),
    replayable: z.boolean(),
    bodyRetention: z.enum(['retained', 'expired', 'none']),
  })
  .meta({ id: 'EventSummary', description: 'A receipt. Never carries the raw body.' });
export type EventSummary = z.infer<typeof EventSummarySchema>;

const AttemptSchema = z
  .object({
    number: z.number().int().min(1),
    destination: z.enum(DESTINATIONS),
    startedAt: Timestamp,
    finishedAt: Timestamp.nullable().describe('null while the attempt is still sending'),
    outcome: z
      .enum(['sending', 'delivered', 'retry', 'failed', 'no_workflow', 'unknown'])
      .describe(
        '`sending`: journaled before the send, result not yet recorded. `unknown`: the worker stopped or lost its lease mid-send, so Flow may have received the trigger; a later attempt may be a repeat',
      ),
    httpStatus: z.number().int().nullable(),
    code: z.string().nullable(),
    message: z.string().nullable(),
    retryAt: Timestamp.nullable(),
    fields: z
      .object({
        found: z.number().int().min(0).describe('How many of the endpoint fields were sent, each of its declared type'),
        missing: z.array(z.string()).describe('Names of the fields whose path held nothing: sent as absent'),
        wrongType: z.array(z.string()).describe('Names of the fields whose value was of another type: sent as absent'),
        bodyCut: z.string().nullable().describe('With includeBody: what was cut of `body json` to keep Flow’s limit; null when nothing was'),
      })
      .nullable()
      .describe('What the endpoint’s typed fields found in this attempt’s payload (names and counts, never a value); null without fields'),
  })
  .meta({ id: 'HandoffAttempt' });

const EventConfirmationSchema = z
  .object({
    outcome: z.enum(CONFIRMATION_OUTCOMES).describe('How the confirming workflow ended, as its Confirm hookrelay event step said'),
    note: z.string().optional().describe("The step's note, when it gave one: at most 500 characters, secrets and email addresses redacted"),
    confirmedAt: Timestamp.describe('When hookrelay recorded the confirmation'),
    runs: z
      .number()
      .int()
      .min(1)
      .describe('How many workflow runs confirmed this event (several workflows may start from one trigger; a replay starts new runs); the others are older'),
  })
  .meta({
    id: 'EventConfirmation',
    description:
      'The newest downstream confirmation: a workflow that started from this event reached its last step, the Flow action Confirm hookrelay event. `delivered` alone never says that.',
  });

const RecoveryOptionSchema = z
  .object({ action: z.string(), operationId: z.string().nullable(), available: z.boolean(), reason: z.string() })
  .meta({ id: 'RecoveryOption' });

const EventDetailSchema = EventSummarySchema.extend({
  configVersion: z.number().int(),
  duplicateOf: z.string().nullable(),
  bodyBytes: z.number().int().min(0),
  deliveredAt: Timestamp.nullable(),
  nextAttemptAt: Timestamp.nullable().describe('When the next attempt is due; null while a worker is handing the event off, and once handoff has ended'),
  handoffStoppedAt: z
    .enum(['authentication', 'validation', 'deduplication', 'capacity', 'queue', 'paused', 'platform', 'none'])
    .describe("Where the handoff stopped; `paused` while the store's handoff waits (see handoffPause); `none` once delivered"),
  handoffPause: HandoffStateSchema.nullable().describe("The store's paused handoff this event waits on; null unless the event is pending and the store paused"),
  meaning: z.string().describe('What the outcome means, and what it does not'),
  attemptsDetail: z.array(AttemptSchema),
  recoveryOptions: z.array(RecoveryOptionSchema),
  confirmation: EventConfirmationSchema.nullable().describe('null until a workflow run confirms the event (see listEvents `unconfirmedFor`)'),
}).meta({ id: 'EventDetail' });

export const EventListSchema = z.object({ events: z.array(EventSummarySchema), nextCursor: z.string().nullable() }).meta({ id: 'EventList' });

export const EventListQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(25).describe('Page size, 1 to 100'),
    cursor: z.string().max(200).optional().describe('Opaque cursor from nextCursor'),
    endpointId: z.string().max(100).optional(),
    externalEventId: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe("Only events whose sender's external_event_id is exactly this (as stored: its first 255 characters)"),
    triggerVariant: TriggerVariantSchema.optional().describe("Only events of the store's endpoints whose trigger variant is this now"),
    outcome: EventOutcomeSchema.optional(),
    since: z.iso.datetime().optional().describe('Received at or after (RFC 3339)'),
    until: z.iso.datetime().optional().describe('Received before (RFC 3339)'),
    unconfirmedFor: z.coerce
      .number()
      .int()
      .min(1)
      .max(43_200)
      .optional()
      .describe(
        'Minutes, 1 to 43200: only events delivered more than this long ago that no workflow run has confirmed (Flow action Confirm hookrelay event), i.e. workflows that did not finish. Implies outcome `delivered`',
      ),
  })
  .refine((q) => q.unconfirmedFor === undefined || q.outcome === undefined || q.outcome === 'delivered', {
    message: 'unconfirmedFor lists delivered events only: leave outcome out, or set it to delivered',
    path: ['outcome'],
  });

const EventResultSchema = z
  .object({
    event: EventSummarySchema,
    meaning: z.string(),
    downstreamConfirmed: z
      .boolean()
      .describe(
        "True when the newest confirmation (a workflow's Confirm hookrelay event step) says `ok`. Delivered alone never means downstream work completed",
      ),
    confirmation: EventConfirmationSchema.nullable().describe('null until a workflow run confirms the event'),
  })
  .meta({ id: 'EventResult' });

export const AgentEventResultReadSchema = z
  .object({ result: EventResultSchema.nullable() })
  .meta({ id: 'AgentEventResultRead', description: '`result` is null when no event is known for the store.' });

export const EventDetailReadSchema = z.object({ event: EventDetailSchema }).meta({ id: 'EventDetailRead' });
