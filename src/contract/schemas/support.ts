/** A support request: its input, and its body (preview, execute, or submit with consent). */
import { z } from 'zod';
import { IntentExecuteSchema } from './intents.ts';

const SupportRequestInputSchema = z
  .object({
    category: z.enum(['delivery', 'authentication', 'setup', 'billing', 'data', 'other']),
    urgency: z.enum(['low', 'normal', 'high', 'critical']),
    summary: z.string().min(1).max(2000),
    eventIds: z.array(z.string()).max(50).optional(),
    endpointIds: z.array(z.string()).max(20).optional(),
    diagnosticsShareId: z.string().optional(),
  })
  .strict()
  .meta({ id: 'SupportRequestInput' });

export const SupportRequestBodySchema = z
  .discriminatedUnion('mode', [
    z.object({ mode: z.literal('preview'), input: SupportRequestInputSchema }).strict(),
    IntentExecuteSchema,
    z
      .object({ mode: z.literal('submit'), input: SupportRequestInputSchema, consent: z.literal(true) })
      .strict()
      .describe('Submit directly, without a stored preview; consent must be true'),
  ])
  .meta({ id: 'SupportRequestIntentRequest' });
