/** Reliability reads over a look-back window (the window diagnostics shares use too). */
import { z } from 'zod';
import { HandoffStateSchema } from '../platform-schemas.ts';
import { AlertSchema } from './alerts.ts';
import { Timestamp } from './common.ts';
import { TriggerVariantSchema } from './endpoints.ts';

/** Look-back windows of reliability reads and diagnostics shares. */
export const WINDOW_MS = { '1h': 3600_000, '24h': 86400_000, '7d': 7 * 86400_000 } as const;
export const WindowSchema = z.enum(['1h', '24h', '7d']);
export type Window = z.infer<typeof WindowSchema>;

export const ReliabilityQuerySchema = z.object({
  window: WindowSchema.default('24h').describe('Look-back window'),
});

/** Delivered events and the share of them a workflow run confirmed (Flow action Confirm hookrelay event). */
const ConfirmedShareCounts = {
  delivered: z.number().int().describe('Events received in the window and delivered'),
  confirmed: z.number().int().describe('Of those, the events at least one workflow run confirmed'),
  errored: z.number().int().describe('Of those, the events a run confirmed with outcome `error`'),
  share: z.number().min(0).max(1).nullable().describe('confirmed / delivered; null without deliveries'),
};

const ConfirmedShareSchema = z
  .object({
    ...ConfirmedShareCounts,
    byEndpoint: z.array(
      z.object({
        endpointId: z.string(),
        triggerVariant: TriggerVariantSchema.nullable().describe('null once the endpoint is deleted'),
        ...ConfirmedShareCounts,
      }),
    ),
    byTrigger: z.array(z.object({ triggerVariant: TriggerVariantSchema, ...ConfirmedShareCounts })),
  })
  .meta({
    id: 'ConfirmedShare',
    description:
      "How many of the window's delivered events a workflow confirmed at its last step (the Flow action Confirm hookrelay event), for the store, per endpoint and per trigger. Only workflows that end with that step confirm: a share below 1 is events whose workflow did not finish, or has no such step.",
  });

export const ReliabilityHealthSchema = z
  .object({
    subject: z.enum(['tenant', 'destination']),
    window: z.enum(['1h', '24h', '7d']),
    from: Timestamp.describe('Start of the first 5-minute bucket of the window'),
    to: Timestamp,
    counts: z
      .object({
        accepted: z.number().int(),
        delivered: z.number().int(),
        failed: z.number().int(),
        noWorkflow: z.number().int(),
        rejected: z.number().int(),
        duplicate: z.number().int(),
        held: z.number().int(),
      })
      .describe('What happened in the window: receipts by their outcome at receipt (accepted includes held), handoffs by their result'),
    authFailuresByEndpoint: z.array(z.object({ endpointId: z.string(), count: z.number().int() })),
    handoffLatencyMs: z
      .object({ p50: z.number().nullable(), p95: z.number().nullable() })
      .describe('Receipt to delivered, as the upper bound of the histogram bucket holding the percentile; null without deliveries'),
    retryBacklog: z.number().int(),
    oldestUndeliveredAgeSeconds: z.number().int().nullable(),
    destinationErrors: z.object({
      throttled: z.number().int(),
      serverErrors: z.number().int().describe('Attempts the platform answered with a 5xx'),
      network: z.number().int().describe('Attempts that got no answer: the connection was refused, reset or not made'),
      userErrors: z.number().int(),
      timeouts: z.number().int(),
      credentials: z.number().int().describe('Attempts the platform refused for credentials (401/403)'),
    }),
    handoff: HandoffStateSchema,
    confirmations: ConfirmedShareSchema.nullable().describe('The tenant read only (null on the destination read)'),
    alerts: z
      .object({
        open: z.array(AlertSchema).describe('Every alert open now, oldest first; each is also a reason'),
        recent: z.array(AlertSchema).describe('Alerts open now or raised or recovered in the window, newest first, at most 50'),
      })
      .describe(
        'Alerts hookrelay raised (silence watch, handoff paused for credentials, uninstall, failed-authentication bursts), each also handed to Flow as the hookrelay-alert trigger',
      ),
    verdict: z.enum(['healthy', 'degraded', 'unhealthy']),
    reasons: z.array(z.string()),
  })
  .meta({ id: 'ReliabilityHealthRead' });
