/** Endpoints: what one is, creating one, and the inputs of the intents that change one, and its test. */
import { z } from 'zod';
import { durationText, parseDuration } from '../durations.ts';
import { ENDPOINT_FIELDS, SILENCE_WATCH } from '../limits.ts';
import { EDITION } from '../scopes.ts';
import { FIELD_TYPES } from '../triggers.ts';
import { Id, Timestamp } from './common.ts';

export const TRIGGER_VARIANTS = ['generic', 'order', 'customer', 'product', 'inventory', 'fulfillment', 'return', 'company'] as const;
export const TriggerVariantSchema = z.enum(TRIGGER_VARIANTS).describe('Flow trigger variant; each is backed by one shipped trigger extension');
export type TriggerVariant = z.infer<typeof TriggerVariantSchema>;

const SENDER_PROFILES = ['custom_http', 'zapier', 'make', 'n8n'] as const;
export const SenderProfileSchema = z.enum(SENDER_PROFILES);
export type SenderProfile = z.infer<typeof SenderProfileSchema>;

export const AuthModeSchema = z.enum(['hmac_sha256', 'static_header']);
export type AuthMode = z.infer<typeof AuthModeSchema>;

const DotPath = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/, 'a dot path such as order.id or line_items.0.sku')
  .describe('Dot path into the JSON body, e.g. `order.id` or `line_items.0.sku`');

export const EndpointFieldSchema = z
  .object({
    name: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,39}$/, 'a lowercase name: a letter, then letters, digits or underscores, 40 characters at most')
      .describe('What the workflow calls the value (a Flow condition tests `name`); shown to merchants in Flow'),
    path: DotPath,
    type: z.enum(FIELD_TYPES).describe('The value is handed off only when it is of this type; otherwise it is absent and counted'),
  })
  .strict()
  .meta({ id: 'EndpointField', description: "A value of the sender's event handed to Flow, typed, in the trigger's `sender.fields` list." });
export type EndpointField = z.infer<typeof EndpointFieldSchema>;

const FieldsSchema = z
  .array(EndpointFieldSchema)
  .max(ENDPOINT_FIELDS.max)
  .refine((fs) => new Set(fs.map((f) => f.name)).size === fs.length, { message: 'field names must be unique' })
  .describe(
    `Up to ${ENDPOINT_FIELDS.max} values of the event handed to Flow, typed. A value missing or of another type is sent as absent and counted on the attempt, unless its path is also a required path`,
  );

const IncludeBodySchema = z
  .boolean()
  .describe(
    `Hand the event's JSON to Flow as one text field (\`body json\`), for a Run code step; trimmed to keep the trigger under Flow's 50,000-byte limit, \`body cut\` saying what was cut`,
  );

const { minMs, maxMs } = SILENCE_WATCH;
const ExpectedEverySchema = z
  .string()
  .regex(/^(\d{1,6})([smhd])$/, { error: 'a duration such as 30m, 2h or 1d: a whole number, then s, m, h or d', abort: true })
  .refine((v) => (parseDuration(v) ?? 0) >= minMs && (parseDuration(v) ?? 0) <= maxMs, {
    error: `between ${durationText(minMs)} and ${durationText(maxMs)}`,
  })
  .describe(
    `Silence watch: the longest quiet time expected between this endpoint's receipts, e.g. \`2h\` (${durationText(minMs)} to ${durationText(maxMs)}). Once the endpoint has received nothing for longer (since its last receipt, or since the watch began), a \`silence\` alert is raised once: in the reliability reads, on /metrics and to Flow as the \`hookrelay-alert\` trigger; a new receipt recovers it`,
  );

const EndpointAuthSchema = z
  .object({
    mode: AuthModeSchema,
    headerName: z.string(),
    secretLast4: z.string().describe('Last four characters of the endpoint secret; the full secret is never read back'),
  })
  .meta({ id: 'EndpointAuth' });

export const EndpointSchema = z
  .object({
    id: Id('ep'),
    url: z.string().describe('Full inbound URL senders POST to'),
    name: z.string(),
    status: z.enum(['active', 'archived']),
    triggerVariant: TriggerVariantSchema,
    resourceIdPath: z.string().nullable(),
    relatedResourceIdPath: z.string().nullable(),
    requiredPaths: z.array(z.string()),
    fields: z.array(EndpointFieldSchema),
    includeBody: z.boolean(),
    senderProfile: SenderProfileSchema.nullable(),
    auth: EndpointAuthSchema,
    sourceLabel: z.string(),
    eventType: z.string().nullable().describe('Default event type, used when an event carries no event_type'),
    expectedEvery: z
      .string()
      .nullable()
      .describe('Silence watch: the longest quiet time expected between receipts (`30m`, `2h`, `1d`); null when the endpoint is not watched'),
    configVersion: z.number().int().min(1),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Endpoint', description: 'A per-store receiving URL for inbound events.' });
export type Endpoint = z.infer<typeof EndpointSchema>;

const HeaderName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9-]+$/, 'letters, digits and hyphens')
  .refine((h) => !['authorization', 'content-type', 'content-length', 'host', 'cookie'].includes(h.toLowerCase()), {
    message: 'reserved header name',
  });

export const CreateEndpointInputSchema = z
  .object({
    name: z.string().min(1).max(100).optional(),
    triggerVariant: TriggerVariantSchema,
    resourceIdPath: DotPath.optional(),
    relatedResourceIdPath: DotPath.optional(),
    requiredPaths: z.array(DotPath).max(5).optional(),
    fields: FieldsSchema.optional(),
    includeBody: IncludeBodySchema.optional(),
    senderProfile: SenderProfileSchema.optional(),
    authMode: AuthModeSchema.optional().describe('Explicit auth mode; wins over the sender profile preset'),
    headerName: HeaderName.optional().describe('Header carrying the signature or static token'),
    sourceLabel: z.string().min(1).max(100).optional(),
    eventType: z.string().min(1).max(100).optional(),
    expectedEvery: ExpectedEverySchema.optional(),
    platformKey: z
      .string()
      .min(1)
      .max(50)
      .optional()
      .describe(
        `The workflow platform events are handed to. This edition hands off to "${EDITION.platformKey}" only; another value is refused (category edition)`,
      ),
  })
  .strict()
  .meta({ id: 'CreateEndpointInput' });

export const CreateEndpointResultSchema = z
  .object({
    endpoint: EndpointSchema,
    secret: z.string().describe('The full endpoint secret. Shown once, here; store it now'),
    signing: z.object({ headerName: z.string(), instructions: z.string() }),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'CreateEndpointResult' });

export const EndpointDetailSchema = z.object({ endpoint: EndpointSchema }).meta({ id: 'EndpointDetailRead' });

export const EndpointEditInputSchema = z
  .object({
    name: z.string().min(1).max(100).optional(),
    triggerVariant: TriggerVariantSchema.optional(),
    resourceIdPath: DotPath.nullable().optional(),
    relatedResourceIdPath: DotPath.nullable().optional(),
    requiredPaths: z.array(DotPath).max(5).optional(),
    fields: FieldsSchema.optional().describe(
      `${FieldsSchema.description}. Replaces the whole list; the preview counts, over the store's last events with a retained body, how often each is found, missing or of another type`,
    ),
    includeBody: IncludeBodySchema.optional(),
    sourceLabel: z.string().min(1).max(100).optional(),
    eventType: z.string().min(1).max(100).nullable().optional(),
    headerName: HeaderName.optional(),
    expectedEvery: ExpectedEverySchema.nullable().optional().describe(`${ExpectedEverySchema.description}. null switches the watch off`),
  })
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'name at least one field to change' })
  .meta({ id: 'EndpointEditInput' });

export const EndpointDeleteInputSchema = z
  .object({ stage: z.enum(['archive', 'permanent']).default('archive').describe('archive stops intake; permanent deletes an archived endpoint') })
  .strict()
  .meta({ id: 'EndpointDeleteInput' });

export const SecretRotationInputSchema = z
  .object({
    overlapSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 86400)
      .default(86400)
      .describe('How long the previous secret stays valid'),
  })
  .strict()
  .meta({ id: 'SecretRotationInput' });

export const EndpointTestIntentInputSchema = z
  .object({ eventType: z.string().min(1).max(100).optional() })
  .strict()
  .meta({ id: 'EndpointTestIntentInput' });

export const EndpointTestIntentReadSchema = z
  .object({
    test: z.object({
      endpointId: z.string(),
      url: z.string(),
      method: z.literal('POST'),
      contentType: z.literal('application/json'),
      headerName: z.string(),
      authMode: AuthModeSchema,
      body: z.object({ event_type: z.string(), external_event_id: z.string() }),
      bodyText: z.string().describe('Send exactly these bytes; an HMAC covers the raw bytes as sent'),
      howToSign: z.string(),
      expectedReceipt: z.string(),
    }),
  })
  .meta({ id: 'EndpointTestIntentRead', description: 'A human-owned next step: the sender sends it. Never contains the secret.' });
