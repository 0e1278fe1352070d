/** Zod schemas of every resource the contract reads or writes. Named ones become OpenAPI components. */
import { z } from 'zod';
import { REFUSAL_CATEGORIES } from './errors.ts';
import { ApiVersionSchema, HandoffStateSchema, PlatformLinkStateSchema } from './platform-schemas.ts';
import { METERS } from './limits.ts';
import { EDITION, SCOPES, TIER_NAMES } from './scopes.ts';

const Timestamp = z.string().describe('RFC 3339 UTC timestamp');
const Id = (prefix: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-z]+$`)).describe(`Identifier with prefix \`${prefix}_\``);

export const ScopeSchema = z.enum(SCOPES);
export const TierSchema = z.enum(TIER_NAMES as [string, ...string[]]);

export const TRIGGER_VARIANTS = ['generic', 'order', 'customer', 'product', 'inventory', 'fulfillment', 'return', 'company'] as const;
export const TriggerVariantSchema = z.enum(TRIGGER_VARIANTS).describe('Flow trigger variant; each is backed by one shipped trigger extension');
export type TriggerVariant = z.infer<typeof TriggerVariantSchema>;

export const SENDER_PROFILES = ['custom_http', 'zapier', 'make', 'n8n'] as const;
export const SenderProfileSchema = z.enum(SENDER_PROFILES);
export type SenderProfile = z.infer<typeof SenderProfileSchema>;

export const AuthModeSchema = z.enum(['hmac_sha256', 'static_header']);
export type AuthMode = z.infer<typeof AuthModeSchema>;

export const EVENT_OUTCOMES = [
  'accepted',
  'queued',
  'delivered',
  'no_workflow',
  'failed',
  'duplicate_suppressed',
  'rejected',
  'held',
  'test',
] as const;
export const EventOutcomeSchema = z.enum(EVENT_OUTCOMES);
/** The outcomes a replay (single or bulk) takes, while the body is retained; every other is refused with its reason. */
export const REPLAYABLE_OUTCOMES = ['delivered', 'failed', 'no_workflow'] as const satisfies readonly (typeof EVENT_OUTCOMES)[number][];
export type EventOutcome = z.infer<typeof EventOutcomeSchema>;

export const EffectSchema = z.enum(['read_only', 'handoff_only', 'preview_or_execute', 'create_resource', 'mcp_agent_operations_access']);

// ---- envelope parts -------------------------------------------------------------------------------

export const EditionSchema = z
  .object({ platformKey: z.literal('shopify'), editionKey: z.literal('workflow-automation'), name: z.string() })
  .meta({ id: 'Edition', description: 'The platform edition that answered.' });

export const EnvelopeScopeSchema = z
  .object({ storeId: z.string(), shopDomain: z.string(), grantId: z.string(), scopes: z.array(ScopeSchema) })
  .meta({ id: 'EnvelopeScope', description: 'The store and grant a response is scoped to.' });

export const ActorSchema = z
  .object({ kind: z.enum(['agent', 'human']), grantId: z.string().nullable(), label: z.string() })
  .meta({ id: 'Actor', description: 'Who acted: an authorised agent (by grant) or a human.' });

export const RefusalSchema = z
  .object({
    category: z.enum(REFUSAL_CATEGORIES),
    code: z.string(),
    reason: z.string(),
    recommendedAction: z.string(),
  })
  .meta({ id: 'Refusal', description: 'Why an action is outside authority or unsafe, and what to do instead.' });

export const ErrorDetailSchema = z
  .object({
    code: z.string().describe('Stable error code'),
    message: z.string(),
    supportCode: z.string().describe('Quote this to support; it identifies the failure without revealing anything private'),
    requestId: z.string().optional().describe('The request, as the X-Request-Id header, the audit trail and the server log name it'),
    details: z.unknown().optional(),
  })
  .meta({ id: 'ErrorDetail' });

export const ErrorEnvelopeSchema = z
  .object({
    edition: EditionSchema,
    scope: EnvelopeScopeSchema.nullable(),
    actor: ActorSchema.nullable(),
    refusal: RefusalSchema.nullable().describe('Set on every refusal an agent can act on (402, 403, 409, 422, 429); null otherwise'),
    error: ErrorDetailSchema,
  })
  .meta({ id: 'ErrorResponse', description: 'Every error of a grant-authenticated operation.' });

export const RateLimitedResponseSchema = z
  .object({
    edition: EditionSchema,
    actor: ActorSchema.nullable(),
    refusal: RefusalSchema,
    error: ErrorDetailSchema,
    retryAfterSeconds: z.number().int().min(1),
    resetAt: Timestamp,
    rateLimitClass: z
      .enum(['simple_read', 'rich_read', 'recovery_preview', 'endpoint_preview', 'auth_failure'])
      .describe('`auth_failure`: too many failed bearer authentications from this client address; a valid token still passes'),
    scope: z.enum(['grant', 'store', 'client']).describe('Which limit was hit: this grant\'s, the whole store\'s, or (auth_failure) this client address\'s'),
    recommendedAction: z.string(),
  })
  .meta({
    id: 'RateLimitedResponse',
    description: 'Too many requests: wait Retry-After seconds. Here `scope` names the limit that was hit (per the spec), not the envelope scope.',
  });

// ---- endpoints -------------------------------------------------------------------------------------

const DotPath = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/, 'a dot path such as order.id or line_items.0.sku')
  .describe('Dot path into the JSON body, e.g. `order.id` or `line_items.0.sku`');

export const EndpointAuthSchema = z
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
    senderProfile: SenderProfileSchema.nullable(),
    auth: EndpointAuthSchema,
    sourceLabel: z.string(),
    eventType: z.string().nullable().describe('Default event type, used when an event carries no event_type'),
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
    senderProfile: SenderProfileSchema.optional(),
    authMode: AuthModeSchema.optional().describe('Explicit auth mode; wins over the sender profile preset'),
    headerName: HeaderName.optional().describe('Header carrying the signature or static token'),
    sourceLabel: z.string().min(1).max(100).optional(),
    eventType: z.string().min(1).max(100).optional(),
    platformKey: z
      .string()
      .min(1)
      .max(50)
      .optional()
      .describe(`The workflow platform events are handed to. This edition hands off to "${EDITION.platformKey}" only; another value is refused (category edition)`),
  })
  .strict()
  .meta({ id: 'CreateEndpointInput' });
export type CreateEndpointInput = z.infer<typeof CreateEndpointInputSchema>;

export const CreateEndpointResultSchema = z
  .object({
    endpoint: EndpointSchema,
    secret: z.string().describe('The full endpoint secret. Shown once, here; store it now'),
    signing: z.object({ headerName: z.string(), instructions: z.string() }),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'CreateEndpointResult' });

export const EndpointDetailSchema = z.object({ endpoint: EndpointSchema }).meta({ id: 'EndpointDetailRead' });

// ---- events ----------------------------------------------------------------------------------------

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

export const AttemptSchema = z
  .object({
    number: z.number().int().min(1),
    destination: z.enum(['shopify', 'log']),
    startedAt: Timestamp,
    finishedAt: Timestamp.nullable().describe('null while the attempt is still sending'),
    outcome: z
      .enum(['sending', 'delivered', 'retry', 'failed', 'no_workflow', 'unknown'])
      .describe('`sending`: journaled before the send, result not yet recorded. `unknown`: the worker stopped or lost its lease mid-send, so Flow may have received the trigger; a later attempt may be a repeat'),
    httpStatus: z.number().int().nullable(),
    code: z.string().nullable(),
    message: z.string().nullable(),
    retryAt: Timestamp.nullable(),
  })
  .meta({ id: 'HandoffAttempt' });

export const RecoveryOptionSchema = z
  .object({ action: z.string(), operationId: z.string().nullable(), available: z.boolean(), reason: z.string() })
  .meta({ id: 'RecoveryOption' });

export const EventDetailSchema = EventSummarySchema.extend({
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
}).meta({ id: 'EventDetail' });

export const EventListSchema = z
  .object({ events: z.array(EventSummarySchema), nextCursor: z.string().nullable() })
  .meta({ id: 'EventList' });

export const EventListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25).describe('Page size, 1 to 100'),
  cursor: z.string().max(200).optional().describe('Opaque cursor from nextCursor'),
  endpointId: z.string().max(100).optional(),
  outcome: EventOutcomeSchema.optional(),
  since: z.iso.datetime().optional().describe('Received at or after (RFC 3339)'),
  until: z.iso.datetime().optional().describe('Received before (RFC 3339)'),
});

export const EventResultSchema = z
  .object({
    event: EventSummarySchema,
    meaning: z.string(),
    downstreamConfirmed: z.literal(false).describe('Delivered never means downstream work completed'),
  })
  .meta({ id: 'EventResult' });

export const AgentEventResultReadSchema = z
  .object({ result: EventResultSchema.nullable() })
  .meta({ id: 'AgentEventResultRead', description: '`result` is null when no event is known for the store.' });

export const EventDetailReadSchema = z.object({ event: EventDetailSchema }).meta({ id: 'EventDetailRead' });

// ---- grant -----------------------------------------------------------------------------------------

export const AgentGrantIntrospectionReadSchema = z
  .object({
    grant: z.object({
      id: Id('gr'),
      tier: TierSchema,
      tierDescription: z.string(),
      label: z.string(),
      scopes: z.array(ScopeSchema),
      createdAt: Timestamp,
      expiresAt: Timestamp,
      expiresInSeconds: z.number().int(),
      revoked: z.boolean(),
      revokedAt: Timestamp.nullable(),
    }),
    store: z.object({
      platformKey: z.string(),
      platformAccountId: z.string(),
      shopDomain: z.string(),
      installationId: z.string(),
    }),
    safetyGuidance: z.array(z.string()),
  })
  .meta({ id: 'AgentGrantIntrospectionRead', description: 'The grant in use. Never its token or the token hash.' });

// ---- setup, plan, billing, reliability -------------------------------------------------------------

export const RecommendedActionSchema = z
  .object({ action: z.string(), text: z.string(), operationId: z.string().nullable(), endpointId: z.string().nullable() })
  .meta({ id: 'RecommendedAction' });

export const SetupStateSchema = z
  .object({
    store: z.object({ shopDomain: z.string(), plan: z.string(), destination: z.enum(['shopify', 'log']) }),
    handoff: HandoffStateSchema,
    platform: PlatformLinkStateSchema.nullable().describe('The live link to Shopify; null when the store hands off to the log destination'),
    endpoints: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        triggerVariant: TriggerVariantSchema,
        authMode: AuthModeSchema,
        headerName: z.string(),
        secretLast4: z.string(),
        status: z.enum(['active', 'archived']),
        configVersion: z.number().int(),
        lastReceipt: z.object({ eventId: z.string(), outcome: EventOutcomeSchema, receivedAt: Timestamp }).nullable(),
        recentAuthFailures: z.number().int(),
      }),
    ),
    triggerReadiness: z.array(
      z.object({
        triggerVariant: TriggerVariantSchema,
        handle: z.string(),
        hasEnabledFlow: z.boolean().nullable().describe('null until the platform reports it'),
        updatedAt: Timestamp.nullable(),
      }),
    ),
    checklist: z.array(z.object({ item: z.string(), done: z.boolean(), text: z.string() })),
    nextRecommendedActions: z.array(RecommendedActionSchema),
  })
  .meta({ id: 'SetupState' });


export const MeterSchema = z
  .object({
    meter: z.enum(METERS),
    used: z.number().int(),
    limit: z.number().int().nullable().describe('null when unlimited on this plan'),
    remaining: z.number().int().nullable(),
    resetAt: Timestamp,
    enforcement: z.enum(['ok', 'warning', 'grace', 'exhausted']),
  })
  .meta({ id: 'UsageMeter' });

export const PlanUsageStateSchema = z
  .object({
    plan: z.string(),
    billingStatus: z.string(),
    periodStart: Timestamp,
    periodEnd: Timestamp,
    meters: z.array(MeterSchema),
    enforcement: z.enum(['ok', 'warning', 'grace', 'exhausted']),
    graceAvailable: z.boolean(),
    retryGuidance: z.string(),
    canApproveCharges: z.literal(false),
    settings: z
      .object({
        precedence: z.string(),
        values: z.array(
          z.object({
            key: z.string().describe('As in hookrelay.toml, e.g. retention.events, rate_limits.rich_read.grant'),
            value: z.union([z.string(), z.number()]).describe('Durations as 90d, 30s; a retry schedule as 5s,30s,2m'),
            source: z.enum(['default', 'file', 'environment', 'flag']),
          }),
        ),
      })
      .describe("This server's operator settings in effect (rate limits, retry schedule, retention, sandbox limits, public URL) and where each came from"),
  })
  .meta({ id: 'PlanUsageState' });

export const BillingHandoffReadSchema = z
  .object({
    billingStatus: z.string(),
    currentPlan: z.string(),
    billing: z.enum(['off', 'shopify', 'shopify-test']).describe("Whether this deployment bills through Shopify (`off`: its operator sets plans)"),
    appBillingUrl: z.string().describe('Where a human chooses a plan and approves its charge: the app in the Shopify admin when billing is on'),
    paidPlanOptions: z.array(
      z.object({ plan: z.string(), priceUsd: z.number(), acceptedEventsPer30Days: z.number().int(), replayExecutions: z.number().int() }),
    ),
    humanOnly: z.literal(true),
    note: z.string(),
  })
  .meta({ id: 'BillingHandoffRead' });

/** Look-back windows of reliability reads and diagnostics shares. */
export const WINDOW_MS = { '1h': 3600_000, '24h': 86400_000, '7d': 7 * 86400_000 } as const;
export const WindowSchema = z.enum(['1h', '24h', '7d']);
export type Window = z.infer<typeof WindowSchema>;

export const ReliabilityQuerySchema = z.object({
  window: WindowSchema.default('24h').describe('Look-back window'),
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
    verdict: z.enum(['healthy', 'degraded', 'unhealthy']),
    reasons: z.array(z.string()),
  })
  .meta({ id: 'ReliabilityHealthRead' });

// ---- action intents --------------------------------------------------------------------------------

export const INTENT_KINDS = ['endpoint_edit', 'endpoint_delete', 'secret_rotation', 'replay', 'bulk_replay', 'diagnostics_share', 'support_request'] as const;
export const IntentStateSchema = z.enum(['previewed', 'executing', 'executed', 'refused', 'expired', 'failed']);

export const EndpointEditInputSchema = z
  .object({
    name: z.string().min(1).max(100).optional(),
    triggerVariant: TriggerVariantSchema.optional(),
    resourceIdPath: DotPath.nullable().optional(),
    relatedResourceIdPath: DotPath.nullable().optional(),
    requiredPaths: z.array(DotPath).max(5).optional(),
    sourceLabel: z.string().min(1).max(100).optional(),
    eventType: z.string().min(1).max(100).nullable().optional(),
    headerName: HeaderName.optional(),
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
    overlapSeconds: z.number().int().min(0).max(7 * 86400).default(86400).describe('How long the previous secret stays valid'),
  })
  .strict()
  .meta({ id: 'SecretRotationInput' });

export const ReplayInputSchema = z
  .object({ reason: z.string().max(500).optional() })
  .strict()
  .meta({ id: 'ReplayInput' });

export const BulkReplayFilterSchema = z
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

export const SupportRequestInputSchema = z
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

// ---- non-binding requests --------------------------------------------------------------------------

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

// ---- manifest, status, MCP -------------------------------------------------------------------------

export const OperationSummarySchema = z
  .object({
    operationId: z.string(),
    method: z.enum(['GET', 'POST']),
    path: z.string(),
    scopes: z.array(ScopeSchema),
    effect: EffectSchema,
    confirmation: z.boolean(),
    available: z.boolean().describe('false when this server does not serve the operation yet'),
    summary: z.string(),
  })
  .meta({ id: 'OperationSummary' });

export const AgentOperationsManifestSchema = z
  .object({
    edition: EditionSchema,
    schemaVersion: z.string(),
    apiPrefix: z.string(),
    docs: z.object({ human: z.string(), openapi: z.string(), manifest: z.string(), mcp: z.string(), status: z.string() }),
    safetyBoundaries: z.array(z.string()),
    quickstart: z.array(z.string()),
    authentication: z.object({ scheme: z.literal('bearer'), header: z.string(), tiers: z.record(z.string(), z.array(ScopeSchema)) }),
    capabilities: z.object({
      effects: z.array(EffectSchema),
      refusalCategories: z.array(z.string()),
      expectedContextHeaders: z.array(z.string()),
    }),
    operations: z.array(OperationSummarySchema),
    platform: z
      .object({ platformKey: z.literal('shopify'), adminApiVersion: ApiVersionSchema })
      .describe('The platform API this server speaks, and until when it is supported'),
    rereadGuidance: z.string(),
  })
  .meta({ id: 'AgentOperationsManifest' });

export const PublicStatusSchema = z
  .object({
    status: z.enum(['operational', 'degraded']),
    edition: EditionSchema,
    version: z.string(),
    components: z.array(z.object({ name: z.string(), status: z.enum(['operational', 'degraded']) })),
    time: Timestamp,
  })
  .meta({ id: 'PublicStatus' });

export const McpFrameSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number()]).optional(),
    method: z.string(),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .loose()
  .meta({ id: 'McpJsonRpcRequest', description: 'A JSON-RPC 2.0 frame; `initialize` starts a session.' });

export const McpResponseSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string() }).optional(),
  })
  .meta({ id: 'McpJsonRpcResponse' });

export const McpUnavailableSchema = z
  .object({ code: z.literal('mcp_code_mode_unavailable'), message: z.string() })
  .meta({ id: 'McpCodeModeUnavailable' });
