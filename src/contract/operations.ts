/**
 * THE contract table: each of the 22 operations of the spec, and the extensions beyond it (marked `extension`),
 * declared once. The router, openapi.json, the manifest, the MCP catalogue and the CLI's `request` validation all
 * iterate this table.
 */
import { z } from 'zod';
import { BULK_REPLAY_MAX_EVENTS } from './limits.ts';
import { API_PREFIX, type Scope } from './scopes.ts';
import {
  ActionIntentReadSchema,
  AgentEventResultReadSchema,
  AuditListSchema,
  AuditQuerySchema,
  AgentGrantIntrospectionReadSchema,
  AgentOperationsManifestSchema,
  BillingHandoffReadSchema,
  BulkReplayInputSchema,
  CreateEndpointInputSchema,
  CreateEndpointResultSchema,
  DiagnosticsShareInputSchema,
  EndpointDeleteInputSchema,
  EndpointDetailSchema,
  EndpointEditInputSchema,
  EndpointTestIntentInputSchema,
  EndpointTestIntentReadSchema,
  ErrorEnvelopeSchema,
  EventDetailReadSchema,
  EventListQuerySchema,
  EventListSchema,
  executesChange,
  ExpansionRequestInputSchema,
  FeatureRequestInputSchema,
  intentRequest,
  McpFrameSchema,
  McpResponseSchema,
  McpUnavailableSchema,
  NonBindingAckSchema,
  PlanUsageStateSchema,
  RateLimitedResponseSchema,
  ReliabilityHealthSchema,
  ReliabilityQuerySchema,
  ReplayInputSchema,
  SecretRotationInputSchema,
  SetupStateSchema,
  SupportRequestBodySchema,
} from './schemas.ts';

export type Effect = 'read_only' | 'handoff_only' | 'preview_or_execute' | 'create_resource' | 'mcp_agent_operations_access';
export type RateLimitClass = 'simple_read' | 'rich_read' | 'recovery_preview' | 'endpoint_preview';
export type Method = 'GET' | 'POST';

/** One answer of an operation, as OpenAPI documents it. */
export interface DeclaredResponse {
  description: string;
  /** The JSON body, a schema registered with an id (`.meta({ id })`); none: no body. */
  body?: z.ZodType;
  /** Response headers by name, each with the JSON Schema of its value. */
  headers?: Readonly<Record<string, { description: string; schema: Readonly<Record<string, unknown>> }>>;
}

/** What a declaration must say; `op()` fills the rest. */
interface OperationSpec {
  operationId: string;
  method: Method;
  /** OpenAPI form: `/agent/v1/events/{eventId}`. */
  path: string;
  scopes: readonly Scope[];
  effect: Effect;
  confirmation: boolean;
  summary: string;
  description: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** The `data` of a success response (or the whole body when `envelope` is false). */
  response: z.ZodType;
  successStatus?: 200 | 201;
  /** false for the public manifest and the MCP transport, which answer in their own formats. */
  envelope?: boolean;
  /** Rate-limit class; simple reads are the ones the spec names for 429. */
  rateLimitClass?: RateLimitClass | null;
  /** `execute` requires an Idempotency-Key on execute steps; `optional` honours one when sent. */
  idempotency?: 'none' | 'execute' | 'optional';
  /** `none` only for the public manifest; everything else needs a bearer grant. */
  auth?: 'none' | 'grant';
  /**
   * `mcp`: the operation is a transport, not a call (the MCP endpoint): the pipeline, code mode's `api.call` and the
   * CLI's `request` do not reach it; its own endpoint answers.
   */
  transport?: 'mcp';
  /**
   * The write an agent might attempt on this read's path that only a human may do (minting a grant, approving
   * a charge). A POST there answers this refusal, category `human_only`, instead of 405.
   */
  humanOnlyWrite?: { code: string; reason: string; recommendedAction: string };
  /**
   * An operation beyond the spec's table: where it was decided (OpenAPI marks it `x-extension`; the manifest and MCP
   * `search` by extensionMark).
   */
  extension?: string;
  /** false: a request may come without a body (OpenAPI's `requestBody.required`). */
  bodyRequired?: boolean;
  /**
   * Which answers hold a secret shown this once and never readable again: `always` every success (a new endpoint's),
   * `execute` only a step that makes the change (a rotation's new secret; its preview holds none: executesChange).
   * A client must keep that secret as it prints the answer: the CLI masks every secret it prints, so its `request`
   * refuses these calls (create-endpoint is the command that prints one). See answerHoldsSecret.
   */
  secretInAnswer?: 'execute' | 'always';
  /**
   * Every answer, by status, of an operation that answers in formats of its own (the MCP transport): OpenAPI lists
   * exactly these. Without it the answers follow from the other fields (envelope, params, effect, body, rate limit).
   */
  responses?: Readonly<Record<number, DeclaredResponse>>;
}

type OptionalField = 'params' | 'query' | 'body' | 'humanOnlyWrite' | 'extension' | 'responses' | 'transport' | 'secretInAnswer';
export type Operation = Required<Omit<OperationSpec, OptionalField>> & Pick<OperationSpec, OptionalField>;

const DEFAULTS = {
  successStatus: 200,
  envelope: true,
  rateLimitClass: null,
  idempotency: 'none',
  auth: 'grant',
  bodyRequired: true,
} as const;

type WithDefaults<S> = Omit<typeof DEFAULTS, keyof S> & S;

function op<const S extends OperationSpec>(s: S): WithDefaults<S> {
  return { ...DEFAULTS, ...s } as WithDefaults<S>;
}

const EndpointParams = z.object({ endpointId: z.string().min(1).max(100).describe('Endpoint id (`ep_…`)') });
const EventParams = z.object({ eventId: z.string().min(1).max(100).describe('Event id (`evt_…`)') });

const P = API_PREFIX;

/** The MCP transport's own refusals (the SDK's): a JSON-RPC error frame, answering no request id. */
const McpJsonRpcErrorSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }),
  })
  .meta({ id: 'McpJsonRpcError', description: 'A JSON-RPC error frame of the MCP transport; `error.data.edition` names the edition.' });

export const operations = {
  getAgentOperationsManifest: op({
    operationId: 'getAgentOperationsManifest',
    method: 'GET',
    path: `${P}/manifest`,
    scopes: [],
    effect: 'read_only',
    confirmation: false,
    tag: 'Discovery',
    summary: 'Read the Agent Operations manifest',
    description:
      'Public. Edition identity, docs URLs, safety boundaries, quickstart, capabilities, operations and the OpenAPI location. Read it first; reread it before reusing cached capability URLs or operation names.',
    response: AgentOperationsManifestSchema,
    envelope: false,
    auth: 'none',
  }),
  connectMcpAgentOperations: op({
    operationId: 'connectMcpAgentOperations',
    method: 'POST',
    path: `${P}/mcp`,
    scopes: [],
    effect: 'mcp_agent_operations_access',
    transport: 'mcp',
    confirmation: false,
    tag: 'MCP',
    summary: 'Remote MCP transport over this contract',
    description:
      'Streamable HTTP MCP, 2026-07-28 (stateless: `server/discover`, then each request with its `_meta`) and 2025-11-25 or 2025-06-18 (`initialize` and a session), chosen per request. Same bearer grant, scopes, confirmations, idempotency, audit, metering and redaction as HTTP. Code mode exposes `search` and `execute`.',
    body: McpFrameSchema,
    bodyRequired: false,
    response: McpResponseSchema,
    envelope: false,
    responses: {
      200: {
        description:
          'A JSON-RPC response frame (JSON: this server answers a POST without an SSE stream). To a POST without a body, a frame with id null whose result describes the endpoint: edition, serverInfo, transport, endpoint, protocolVersions, tools, how to start a session, docs. 2026-07-28: an `execute` call from a client that declared elicitation may answer `resultType: "input_required"` (the person is asked to confirm an execute step; retry with `inputResponses` and the `requestState`)',
        body: McpResponseSchema,
      },
      202: { description: 'Accepted: the client or session uses asynchronous streaming (the frame was a notification or a response; no body)' },
      400: {
        description:
          "The body is not JSON or not a JSON-RPC message (-32700), or a request other than initialize came without a session, without Mcp-Session-Id or with an unsupported MCP-Protocol-Version (-32000, -32600). 2026-07-28: the MCP-Protocol-Version, Mcp-Method or Mcp-Name header missing or not the body's (-32020 HeaderMismatch), a protocol version in `_meta` this server does not serve (-32022 UnsupportedProtocolVersion, `data.supported`), or a malformed `_meta` (-32602)",
        body: McpJsonRpcErrorSchema,
      },
      401: {
        description: 'Missing, malformed, unknown, expired or revoked grant (`unauthorized`)',
        body: ErrorEnvelopeSchema,
        headers: { 'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } } },
      },
      403: {
        description:
          '`agent_context_mismatch`; or `action_refused`, category safety, for a Host or browser Origin the endpoint does not answer (`host_not_allowed`, `origin_not_allowed`: DNS-rebinding protection)',
        body: ErrorEnvelopeSchema,
      },
      404: {
        description: 'An Mcp-Session-Id this server did not issue (another key), or a session of another grant (-32001): initialize again',
        body: McpJsonRpcErrorSchema,
      },
      406: { description: 'Accept does not list both application/json and text/event-stream (-32000)', body: McpJsonRpcErrorSchema },
      413: { description: 'Body over 1 MiB (`payload_too_large`)', body: ErrorEnvelopeSchema },
      415: { description: 'A body that is not application/json (-32000)', body: McpJsonRpcErrorSchema },
      429: {
        description:
          'Too many failed authentications from this client: wait Retry-After seconds (`rate_limited`, rateLimitClass auth_failure); a valid token still passes',
        body: RateLimitedResponseSchema,
        headers: { 'Retry-After': { description: 'Seconds to wait (integer, at least 1)', schema: { type: 'integer', minimum: 1 } } },
      },
      500: { description: 'Unexpected failure (`internal_error`); quote the support code', body: ErrorEnvelopeSchema },
      503: { description: 'Code-mode loader unavailable; the API and CLI remain available', body: McpUnavailableSchema },
    },
  }),
  getSetupState: op({
    operationId: 'getSetupState',
    method: 'GET',
    path: `${P}/setup-state`,
    scopes: ['setup:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Setup',
    summary: 'Read setup state',
    description: 'Endpoint summaries, trigger readiness, checklist state and next recommended actions. Use before creating or changing endpoints.',
    response: SetupStateSchema,
    rateLimitClass: 'simple_read',
  }),
  getPlanUsage: op({
    operationId: 'getPlanUsage',
    method: 'GET',
    path: `${P}/plan-usage`,
    scopes: ['setup:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Setup',
    summary: 'Read plan usage',
    description:
      'Plan, billing status, usage meters, enforcement state and retry guidance. Read before loops, polling or repeated previews. Cannot approve or create charges.',
    response: PlanUsageStateSchema,
    rateLimitClass: 'simple_read',
  }),
  getBillingHandoff: op({
    operationId: 'getBillingHandoff',
    method: 'GET',
    path: `${P}/billing-handoff`,
    scopes: ['setup:read'],
    effect: 'handoff_only',
    confirmation: false,
    tag: 'Setup',
    summary: 'Hand off billing to a human',
    description: "Billing state, the platform's app billing page and paid plan options. Performs no charge; approval is human-only.",
    response: BillingHandoffReadSchema,
    rateLimitClass: 'simple_read',
    humanOnlyWrite: {
      code: 'billing_approval_human_only',
      reason: 'Charges are created and approved by a human in the commerce platform; no grant can do it.',
      recommendedAction: 'Give the merchant appBillingUrl from GET /agent/v1/billing-handoff.',
    },
  }),
  getCurrentAgentGrant: op({
    operationId: 'getCurrentAgentGrant',
    method: 'GET',
    path: `${P}/grant`,
    scopes: [],
    effect: 'read_only',
    confirmation: false,
    tag: 'Grant',
    summary: 'Introspect the grant in use',
    description: 'Tier, scopes, expiry, revocation state and safety guidance. Never the token or its hash.',
    response: AgentGrantIntrospectionReadSchema,
    rateLimitClass: 'simple_read',
    humanOnlyWrite: {
      code: 'grant_minting_human_only',
      reason: 'Grants are minted by the merchant or operator, never by an agent.',
      recommendedAction: 'Ask the merchant to run `hookrelay grant issue` with the tier you need.',
    },
  }),
  listAuditEntries: op({
    operationId: 'listAuditEntries',
    method: 'GET',
    path: `${P}/audit`,
    scopes: ['setup:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Audit',
    summary: 'Read the audit trail',
    description:
      "The store's audit rows, newest first: each operation call, intent transition and human action (grants issued and revoked), by humans and agents, with actor, grant, target, outcome and refusal. Filter by actor kind, operation, grant and time; cursor-paginated. Never inputs, bodies or secrets.",
    query: AuditQuerySchema,
    response: AuditListSchema,
    rateLimitClass: 'rich_read',
    extension:
      "DESIGN.md, \"The merchant's seat and agent consent\": the seat's Audit page and each grant's history read who did what through the contract, as every page reads",
  }),
  getLatestEventResult: op({
    operationId: 'getLatestEventResult',
    method: 'GET',
    path: `${P}/event-result`,
    scopes: ['event:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Events',
    summary: 'Read the latest event result',
    description:
      'The latest result for the store, or for `endpointId`, or the result of `eventId` when it belongs to the authorising store. `result` is null when no event is known. `delivered` only means handed to the workflow platform.',
    query: z.object({ endpointId: z.string().max(100).optional(), eventId: z.string().max(100).optional() }),
    response: AgentEventResultReadSchema,
    rateLimitClass: 'simple_read',
  }),
  listEvents: op({
    operationId: 'listEvents',
    method: 'GET',
    path: `${P}/events`,
    scopes: ['event:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Events',
    summary: 'List events',
    description:
      'Scoped receipt history, newest first, without raw bodies. Cursor-paginated. `unconfirmedFor` finds delivered events whose workflow never confirmed them (the Flow action Confirm hookrelay event): runs that did not finish.',
    query: EventListQuerySchema,
    response: EventListSchema,
    rateLimitClass: 'rich_read',
  }),
  getEventDetail: op({
    operationId: 'getEventDetail',
    method: 'GET',
    path: `${P}/events/{eventId}`,
    scopes: ['event:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Events',
    summary: 'Read one event',
    description: 'The receipt, every handoff attempt, where handoff stopped and recovery options. Never the raw body.',
    params: EventParams,
    response: EventDetailReadSchema,
    rateLimitClass: 'rich_read',
  }),
  getTenantReliabilityHealth: op({
    operationId: 'getTenantReliabilityHealth',
    method: 'GET',
    path: `${P}/reliability/tenant`,
    scopes: ['event:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Reliability',
    summary: 'Read tenant reliability health',
    description: 'Counts, auth failures per endpoint, latency, backlog and a verdict for this store over a window.',
    query: ReliabilityQuerySchema,
    response: ReliabilityHealthSchema,
    rateLimitClass: 'rich_read',
  }),
  getDestinationReliabilityHealth: op({
    operationId: 'getDestinationReliabilityHealth',
    method: 'GET',
    path: `${P}/reliability/destination`,
    scopes: ['event:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Reliability',
    summary: 'Read destination reliability health',
    description: "Handoff health towards the store's workflow platform: error classes, latency, backlog and a verdict.",
    query: ReliabilityQuerySchema,
    response: ReliabilityHealthSchema,
    rateLimitClass: 'rich_read',
  }),
  getEndpointDetail: op({
    operationId: 'getEndpointDetail',
    method: 'GET',
    path: `${P}/endpoints/{endpointId}`,
    scopes: ['setup:read'],
    effect: 'read_only',
    confirmation: false,
    tag: 'Endpoints',
    summary: 'Read one endpoint',
    description: 'Endpoint configuration. The secret appears only as its last four characters.',
    params: EndpointParams,
    response: EndpointDetailSchema,
    rateLimitClass: 'rich_read',
  }),
  createEndpointEditIntent: op({
    operationId: 'createEndpointEditIntent',
    method: 'POST',
    path: `${P}/endpoints/{endpointId}/edit-intents`,
    scopes: ['setup:read', 'endpoint:write'],
    effect: 'preview_or_execute',
    confirmation: true,
    tag: 'Endpoints',
    summary: 'Preview or execute an endpoint edit',
    description: 'Preview shows the diff; execute makes a new config version.',
    params: EndpointParams,
    body: intentRequest('EndpointEditIntentRequest', EndpointEditInputSchema),
    response: ActionIntentReadSchema,
    rateLimitClass: 'endpoint_preview',
    idempotency: 'execute',
  }),
  createEndpointDeleteIntent: op({
    operationId: 'createEndpointDeleteIntent',
    method: 'POST',
    path: `${P}/endpoints/{endpointId}/delete-intents`,
    scopes: ['setup:read', 'endpoint:delete'],
    effect: 'preview_or_execute',
    confirmation: true,
    tag: 'Endpoints',
    summary: 'Preview or execute an endpoint delete',
    description: 'Two stages: archive (stops intake, keeps history), then permanent delete of an archived endpoint.',
    params: EndpointParams,
    body: intentRequest('EndpointDeleteIntentRequest', EndpointDeleteInputSchema),
    response: ActionIntentReadSchema,
    rateLimitClass: 'endpoint_preview',
    idempotency: 'execute',
  }),
  createSecretRotationIntent: op({
    operationId: 'createSecretRotationIntent',
    method: 'POST',
    path: `${P}/endpoints/{endpointId}/secret-rotation-intents`,
    scopes: ['setup:read', 'secret:rotate'],
    effect: 'preview_or_execute',
    confirmation: true,
    tag: 'Endpoints',
    summary: 'Preview or execute a secret rotation',
    description: 'Execute returns the new secret once; the previous one stays valid for the overlap chosen in the preview.',
    params: EndpointParams,
    body: intentRequest('SecretRotationIntentRequest', SecretRotationInputSchema),
    response: ActionIntentReadSchema,
    rateLimitClass: 'endpoint_preview',
    idempotency: 'execute',
    secretInAnswer: 'execute',
  }),
  createEndpointTestIntent: op({
    operationId: 'createEndpointTestIntent',
    method: 'POST',
    path: `${P}/endpoints/{endpointId}/test-intents`,
    scopes: ['setup:read', 'endpoint:test'],
    effect: 'handoff_only',
    confirmation: false,
    tag: 'Endpoints',
    summary: 'Prepare an endpoint test',
    description: 'Returns the synthetic test body, URL, header name and how to sign. Sends nothing; the sender sends it. Never contains the secret.',
    params: EndpointParams,
    body: EndpointTestIntentInputSchema,
    // Every field has a default: a bodiless POST prepares the default test.
    bodyRequired: false,
    response: EndpointTestIntentReadSchema,
    successStatus: 201,
    rateLimitClass: 'endpoint_preview',
  }),
  createEndpoint: op({
    operationId: 'createEndpoint',
    method: 'POST',
    path: `${P}/endpoints`,
    scopes: ['setup:read', 'endpoint:write'],
    effect: 'create_resource',
    confirmation: false,
    tag: 'Endpoints',
    summary: 'Create an endpoint',
    description:
      'Executes immediately and returns the new endpoint secret once. Without senderProfile or auth fields, HMAC-SHA256 applies; a profile alone applies its preset; explicit auth fields win.',
    body: CreateEndpointInputSchema,
    response: CreateEndpointResultSchema,
    successStatus: 201,
    rateLimitClass: 'endpoint_preview',
    idempotency: 'optional',
    secretInAnswer: 'always',
  }),
  createReplayIntent: op({
    operationId: 'createReplayIntent',
    method: 'POST',
    path: `${P}/events/{eventId}/replay-intents`,
    scopes: ['event:read', 'replay:execute'],
    effect: 'preview_or_execute',
    confirmation: true,
    tag: 'Recovery',
    summary: 'Preview or execute a replay',
    description:
      'Hands a retained event off again as a new attempt, bypassing duplicate suppression. Refused for auth failures, expired bodies and rejected events.',
    params: EventParams,
    body: intentRequest('ReplayIntentRequest', ReplayInputSchema),
    response: ActionIntentReadSchema,
    rateLimitClass: 'recovery_preview',
    idempotency: 'execute',
  }),
  createBulkReplayIntent: op({
    operationId: 'createBulkReplayIntent',
    method: 'POST',
    path: `${P}/replay-intents`,
    scopes: ['event:read', 'replay:execute'],
    effect: 'preview_or_execute',
    confirmation: true,
    tag: 'Recovery',
    summary: 'Preview or execute a bulk replay',
    description: `Hands every retained event a filter selects (default: failed; by code, endpoint and receipt window) off again as one intent: one replay execution, however many events. The preview counts them, shows a sample and the window, and binds the execute: events received or attempted after the preview are left out. At most ${BULK_REPLAY_MAX_EVENTS} events an intent. Outcomes a single replay refuses (rejected, test, duplicate_suppressed, held, accepted, queued) are refused the same way; auth failures are never events, so no filter matches them.`,
    body: intentRequest('BulkReplayIntentRequest', BulkReplayInputSchema),
    response: ActionIntentReadSchema,
    rateLimitClass: 'recovery_preview',
    idempotency: 'execute',
    extension: 'DESIGN.md, "The platform link": recover many events as one intent, as Hookdeck, Svix and Convoy do',
  }),
  createDiagnosticsShareIntent: op({
    operationId: 'createDiagnosticsShareIntent',
    method: 'POST',
    path: `${P}/diagnostics-share-intents`,
    scopes: ['setup:read', 'event:read', 'diagnostics:create'],
    effect: 'preview_or_execute',
    confirmation: true,
    tag: 'Recovery',
    summary: 'Preview or execute a diagnostics share',
    description:
      'A frozen, redacted package of receipt facts, endpoint state, codes and recovery guidance. Never bodies, secrets, headers, tokens or customer data.',
    body: intentRequest('DiagnosticsShareIntentRequest', DiagnosticsShareInputSchema),
    response: ActionIntentReadSchema,
    rateLimitClass: 'recovery_preview',
    idempotency: 'execute',
  }),
  createSupportRequestIntent: op({
    operationId: 'createSupportRequestIntent',
    method: 'POST',
    path: `${P}/support-request-intents`,
    scopes: ['setup:read', 'support:request'],
    effect: 'preview_or_execute',
    confirmation: true,
    tag: 'Support',
    summary: 'Preview or submit a support request',
    description: 'Preview, then execute; or submit directly with consent (submit is not bound to a stored preview). Redacted summary and safe support context.',
    body: SupportRequestBodySchema,
    response: ActionIntentReadSchema,
    rateLimitClass: 'recovery_preview',
    idempotency: 'execute',
  }),
  createExpansionRequest: op({
    operationId: 'createExpansionRequest',
    method: 'POST',
    path: `${P}/expansion-requests`,
    scopes: ['expansion:request'],
    effect: 'create_resource',
    confirmation: false,
    tag: 'Requests',
    summary: 'Signal demand for an expansion',
    description: 'Non-binding: acknowledged on receipt, with no commitment, priority or timeline.',
    body: ExpansionRequestInputSchema,
    response: NonBindingAckSchema,
    successStatus: 201,
    idempotency: 'optional',
  }),
  createFeatureRequest: op({
    operationId: 'createFeatureRequest',
    method: 'POST',
    path: `${P}/feature-requests`,
    scopes: ['expansion:request'],
    effect: 'create_resource',
    confirmation: false,
    tag: 'Requests',
    summary: 'Request a missing capability',
    description: 'Non-binding request for a capability missing inside the current product surface. Not a support ticket or expansion request.',
    body: FeatureRequestInputSchema,
    response: NonBindingAckSchema,
    successStatus: 201,
    idempotency: 'optional',
  }),
} as const;

export type Operations = typeof operations;
export type OperationId = keyof Operations;

/** The public operations (no bearer): the server answers them itself, outside the pipeline. */
export type PublicOperationId = { [K in OperationId]: Operations[K] extends { auth: 'none' } ? K : never }[OperationId];

/** The operations the pipeline runs with a handler: all but the public ones and the MCP transport. */
export type HandledOperationId = Exclude<
  OperationId,
  PublicOperationId | { [K in OperationId]: Operations[K] extends { transport: 'mcp' } ? K : never }[OperationId]
>;

/**
 * An operation's path template as a matcher: each `{name}` segment captured, in order. The server's routes and the
 * CLI's `request` both match with it.
 */
export function pathMatcher(path: string): { re: RegExp; names: string[] } {
  const names: string[] = [];
  const source = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{(\w+)\\?\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { re: new RegExp(`^${source}$`), names };
}

/** Whether the answer to this call (an operation and its request body) holds a secret shown once: see `secretInAnswer`. */
export function answerHoldsSecret(op: Pick<Operation, 'secretInAnswer'>, body: unknown): boolean {
  return op.secretInAnswer === 'always' || (op.secretInAnswer === 'execute' && executesChange(body));
}

/**
 * How the manifest's entries and MCP `search` results mark an operation beyond the spec's table (as OpenAPI's
 * `x-extension`), saying where it was decided; nothing on the spec's own operations.
 */
export function extensionMark(op: Pick<Operation, 'extension'>): { extension?: true; extensionDecidedIn?: string } {
  return op.extension ? { extension: true, extensionDecidedIn: op.extension } : {};
}

/** The table as a list, in the spec's order (an extension beside the spec's operation it extends). */
export const OPERATIONS: readonly Operation[] = Object.values(operations);

type Out<O, F extends 'params' | 'query' | 'body'> = O extends { [P in F]: infer S extends z.ZodType } ? z.output<S> : undefined;

/** What a handler receives, validated. */
export interface OperationInput<K extends OperationId> {
  params: Out<Operations[K], 'params'>;
  query: Out<Operations[K], 'query'>;
  body: Out<Operations[K], 'body'>;
}
export type OperationOutput<K extends OperationId> = z.input<Operations[K]['response']>;
