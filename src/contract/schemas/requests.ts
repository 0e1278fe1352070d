/** Non-binding requests: expansion and feature requests, and their acknowledgement. */
import { z } from 'zod';
import { Timestamp } from './common.ts';

export const ExpansionRequestInputSchema = z
  .object({
    kind: z.enum(['platform', 'native_edition', 'trigger_lane', 'multi_store', 'event_reliability']),
    summary: z.string().min(1).max(2000),
    detail: z.string().max(5000).optional(),
  })
  .strict()
  .meta({ id: 'ExpansionRequestInput' });

export const FeatureRequestInputSchema = z
  .object({
    capability: z.string().min(1).max(200),
    problem: z.string().min(1).max(2000),
    detail: z.string().max(5000).optional(),
  })
  .strict()
  .meta({ id: 'FeatureRequestInput' });

export const NonBindingAckSchema = z
  .object({
    request: z.object({
      id: z.string(),
      kind: z.enum(['expansion', 'feature']),
      status: z.literal('received'),
      createdAt: Timestamp,
    }),
    acknowledgement: z.string(),
    nonBinding: z.literal(true).describe('No commitment, priority or timeline is implied'),
  })
  .meta({ id: 'NonBindingRequestAck' });
