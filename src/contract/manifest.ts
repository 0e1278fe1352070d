/** The public manifest, derived from the contract table. */
import { EXPECTED_CONTEXT_HEADERS } from './context.ts';
import { REFUSAL_CATEGORIES } from './errors.ts';
import { extensionMark, OPERATIONS } from './operations.ts';
import { API_PREFIX, EDITION, OPENAPI_PATH, SCHEMA_VERSION, TIERS } from './scopes.ts';

const SAFETY_BOUNDARIES = [
  'No read returns a raw event body.',
  'No read returns a full endpoint secret; it appears once, in the response of endpoint creation or secret-rotation execution.',
  'No platform tokens, session payloads, database URLs, HMAC values or full authentication headers are returned.',
  "`delivered` means the trigger was handed to the store's workflow platform; downstream completion is confirmed separately, by a workflow's Confirm hookrelay event step (an event's `confirmation`; listEvents `unconfirmedFor` finds the delivered events without one).",
  'Changes are previewed first, then executed with a single-use confirmation token and an Idempotency-Key; every step is audited.',
  'Diagnostics shares are preview-first and redacted before sharing.',
  'Billing approval stays human-only: the API cannot create or approve a charge.',
  'Grants are minted by a human (`hookrelay grant issue`); no agent can create, widen or extend one.',
  'A request that failed inbound authentication is not recorded as an event and is never replayed.',
  'Expansion and feature requests are non-binding signals.',
];

/** The platform API the server speaks (src/platform/shopify/version.ts: the contract reads no other layer). */
export interface ManifestPlatform {
  adminApiVersion: { version: string; releasedOn: string; supportedUntil: string; daysLeft: number; status: 'supported' | 'ending_soon' | 'unsupported' };
}

export function buildManifest(publicUrl: string, available: ReadonlySet<string>, platform: ManifestPlatform) {
  const base = publicUrl.replace(/\/+$/, '');
  return {
    edition: EDITION,
    schemaVersion: SCHEMA_VERSION,
    apiPrefix: API_PREFIX,
    docs: {
      human: `${base}/docs`,
      openapi: `${base}${OPENAPI_PATH}`,
      manifest: `${base}${API_PREFIX}/manifest`,
      mcp: `${base}${API_PREFIX}/mcp`,
      status: `${base}/status`,
    },
    safetyBoundaries: SAFETY_BOUNDARIES,
    quickstart: [
      'Read this manifest; reread it before reusing cached capability URLs or operation names.',
      'Call GET /agent/v1/grant with your bearer grant to see your tier, scopes and expiry.',
      'Call GET /agent/v1/setup-state before creating or changing endpoints.',
      'Create an endpoint with POST /agent/v1/endpoints; store the secret it returns once.',
      'Prepare a test with POST /agent/v1/endpoints/{endpointId}/test-intents; the sender sends it.',
      'Check GET /agent/v1/event-result and GET /agent/v1/events for receipts.',
      'To hear when a sender falls silent, give its endpoint expectedEvery (e.g. "2h") at creation or through an edit intent; alerts show in GET /agent/v1/reliability/tenant and reach Flow as the hookrelay-alert trigger.',
      'Ask the merchant to revoke the grant when the work is finished.',
    ],
    authentication: {
      scheme: 'bearer' as const,
      header: 'Authorization: Bearer <ACCESS_TOKEN>',
      tiers: Object.fromEntries(Object.entries(TIERS).map(([k, v]) => [k, [...v]])),
    },
    capabilities: {
      effects: ['read_only', 'handoff_only', 'preview_or_execute', 'create_resource', 'mcp_agent_operations_access'] as const,
      refusalCategories: [...REFUSAL_CATEGORIES],
      expectedContextHeaders: [...EXPECTED_CONTEXT_HEADERS],
    },
    operations: OPERATIONS.map((o) => ({
      operationId: o.operationId,
      method: o.method,
      path: o.path,
      scopes: [...o.scopes],
      effect: o.effect,
      confirmation: o.confirmation,
      available: available.has(o.operationId),
      summary: o.summary,
      ...extensionMark(o),
    })),
    platform: { platformKey: 'shopify' as const, adminApiVersion: platform.adminApiVersion },
    rereadGuidance:
      'Reread this manifest before reusing cached capability URLs or operation names; operations marked available:false are declared but not served yet.',
  };
}
