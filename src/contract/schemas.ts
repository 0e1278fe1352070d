/**
 * Zod schemas of every resource the contract reads or writes, one file per resource under schemas/ (as oRPC splits
 * them); this index re-exports them, so importers need not know which file holds one. Named ones (`.meta({ id })`)
 * become OpenAPI components.
 */
export { EditionSchema, EnvelopeScopeSchema, ActorSchema, ErrorEnvelopeSchema, RateLimitedResponseSchema } from './schemas/envelope.ts';
export {
  TRIGGER_VARIANTS,
  CreateEndpointInputSchema,
  CreateEndpointResultSchema,
  EndpointDetailSchema,
  EndpointEditInputSchema,
  EndpointDeleteInputSchema,
  SecretRotationInputSchema,
  EndpointTestIntentInputSchema,
  EndpointTestIntentReadSchema,
} from './schemas/endpoints.ts';
export type { TriggerVariant, SenderProfile, AuthMode, Endpoint } from './schemas/endpoints.ts';
export {
  EVENT_OUTCOMES,
  REPLAYABLE_OUTCOMES,
  EventListSchema,
  EventListQuerySchema,
  AgentEventResultReadSchema,
  EventDetailReadSchema,
} from './schemas/events.ts';
export type { EventOutcome, EventSummary } from './schemas/events.ts';
export { AgentGrantIntrospectionReadSchema } from './schemas/grants.ts';
export { AuditQuerySchema, AuditListSchema } from './schemas/audit.ts';
export { SetupStateSchema, PlanUsageStateSchema, BillingHandoffReadSchema } from './schemas/setup.ts';
export { WINDOW_MS, ReliabilityQuerySchema, ReliabilityHealthSchema } from './schemas/reliability.ts';
export type { Window } from './schemas/reliability.ts';
export { ReplayInputSchema, BulkReplayInputSchema, DiagnosticsShareInputSchema } from './schemas/recovery.ts';
export type { BulkReplayInput, BulkReplaySelection } from './schemas/recovery.ts';
export { INTENT_KINDS, intentRequest, executesChange, ActionIntentReadSchema } from './schemas/intents.ts';
export type { IntentBody } from './schemas/intents.ts';
export { SupportRequestBodySchema } from './schemas/support.ts';
export { ExpansionRequestInputSchema, FeatureRequestInputSchema, NonBindingAckSchema } from './schemas/requests.ts';
export { EffectSchema, AgentOperationsManifestSchema, PublicStatusSchema } from './schemas/discovery.ts';
export { McpFrameSchema, McpResponseSchema, McpUnavailableSchema } from './schemas/mcp.ts';
