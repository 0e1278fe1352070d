/**
 * Zod schemas of every resource the contract reads or writes, one file per resource under schemas/ (as oRPC splits
 * them); this index re-exports them, so importers need not know which file holds one. Named ones (`.meta({ id })`)
 * become OpenAPI components.
 */
export { ScopeSchema } from './schemas/common.ts';
export {
  EditionSchema,
  EnvelopeScopeSchema,
  ActorSchema,
  RefusalSchema,
  ErrorDetailSchema,
  ErrorEnvelopeSchema,
  RateLimitedResponseSchema,
} from './schemas/envelope.ts';
export {
  TRIGGER_VARIANTS,
  TriggerVariantSchema,
  SENDER_PROFILES,
  SenderProfileSchema,
  AuthModeSchema,
  EndpointAuthSchema,
  EndpointSchema,
  CreateEndpointInputSchema,
  CreateEndpointResultSchema,
  EndpointDetailSchema,
  EndpointEditInputSchema,
  EndpointDeleteInputSchema,
  SecretRotationInputSchema,
  EndpointTestIntentInputSchema,
  EndpointTestIntentReadSchema,
} from './schemas/endpoints.ts';
export type { TriggerVariant, SenderProfile, AuthMode, Endpoint, CreateEndpointInput } from './schemas/endpoints.ts';
export {
  EVENT_OUTCOMES,
  EventOutcomeSchema,
  REPLAYABLE_OUTCOMES,
  EventSummarySchema,
  AttemptSchema,
  RecoveryOptionSchema,
  EventDetailSchema,
  EventListSchema,
  EventListQuerySchema,
  EventResultSchema,
  AgentEventResultReadSchema,
  EventDetailReadSchema,
  CONFIRMATION_OUTCOMES,
} from './schemas/events.ts';
export type { EventOutcome, EventSummary } from './schemas/events.ts';
export { TierSchema, AgentGrantIntrospectionReadSchema } from './schemas/grants.ts';
export { RecommendedActionSchema, SetupStateSchema, MeterSchema, PlanUsageStateSchema, BillingHandoffReadSchema } from './schemas/setup.ts';
export { WINDOW_MS, WindowSchema, ReliabilityQuerySchema, ReliabilityHealthSchema } from './schemas/reliability.ts';
export type { Window } from './schemas/reliability.ts';
export {
  ReplayInputSchema,
  BulkReplayFilterSchema,
  BulkReplayInputSchema,
  BulkReplaySelectionSchema,
  DiagnosticsShareInputSchema,
} from './schemas/recovery.ts';
export type { BulkReplayInput, BulkReplaySelection } from './schemas/recovery.ts';
export {
  INTENT_KINDS,
  IntentStateSchema,
  IntentExecuteSchema,
  intentRequest,
  modeOf,
  executesChange,
  ConfirmationSchema,
  ChangeSchema,
  IntentPreviewSchema,
  ActionIntentSchema,
  ActionIntentReadSchema,
} from './schemas/intents.ts';
export type { IntentBody, IntentMode } from './schemas/intents.ts';
export { SupportRequestInputSchema, SupportRequestBodySchema } from './schemas/support.ts';
export { ExpansionRequestInputSchema, FeatureRequestInputSchema, NonBindingAckSchema } from './schemas/requests.ts';
export { EffectSchema, OperationSummarySchema, AgentOperationsManifestSchema, PublicStatusSchema } from './schemas/discovery.ts';
export { McpFrameSchema, McpResponseSchema, McpUnavailableSchema } from './schemas/mcp.ts';
