/** Scopes, tiers and the edition identity. */
export const SCOPES = [
  'setup:read',
  'event:read',
  'endpoint:write',
  'endpoint:delete',
  'secret:rotate',
  'endpoint:test',
  'replay:execute',
  'diagnostics:create',
  'support:request',
  'expansion:request',
] as const;
export type Scope = (typeof SCOPES)[number];

const OBSERVER: Scope[] = ['setup:read', 'event:read'];
const OPERATOR: Scope[] = [...OBSERVER, 'endpoint:write', 'endpoint:test', 'support:request', 'expansion:request'];
const RECOVERY: Scope[] = [...OPERATOR, 'replay:execute', 'diagnostics:create', 'secret:rotate'];

export const TIERS = {
  observer: OBSERVER,
  operator: OPERATOR,
  recovery_operator: RECOVERY,
  admin_assistant: [...SCOPES],
} as const satisfies Record<string, readonly Scope[]>;
export type Tier = keyof typeof TIERS;
export const TIER_NAMES = Object.keys(TIERS) as Tier[];

export const TIER_LABELS: Record<Tier, string> = {
  observer: 'Observer: inventory and read-only review',
  operator: 'Operator: create and edit endpoint setup, prepare endpoint tests',
  recovery_operator: 'Recovery Operator: replay, diagnostics share creation, secret rotation',
  admin_assistant: 'Admin Assistant: exceptional broader operations',
};

export const EDITION = {
  platformKey: 'shopify',
  editionKey: 'workflow-automation',
  name: 'hookrelay for Shopify Flow',
} as const;

export const API_PREFIX = '/agent/v1';
/** Where the server publishes its OpenAPI document (the manifest links it, doctor checks it). */
export const OPENAPI_PATH = `${API_PREFIX}/openapi.json`;

/** What a grant must hold to scrape GET /metrics (outside the operations table: Prometheus text, not an envelope). */
export const METRICS_SCOPES: readonly Scope[] = ['setup:read'];
export const SCHEMA_VERSION = '2026-06-17';
export const OPENAPI_VERSION = '3.1.0';

/** The CLI's User-Agent: `hookrelay-cli/<version>` (the audit's `cli` surface). */
export const CLI_USER_AGENT_PREFIX = 'hookrelay-cli/';
