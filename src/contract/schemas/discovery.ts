/** The public reads: the Agent Operations manifest (and the operation summaries in it) and /status. */
import { z } from 'zod';
import { ApiVersionSchema } from '../platform-schemas.ts';
import { ScopeSchema, Timestamp } from './common.ts';
import { EditionSchema } from './envelope.ts';

export const EffectSchema = z.enum(['read_only', 'handoff_only', 'preview_or_execute', 'create_resource', 'mcp_agent_operations_access']);

const OperationSummarySchema = z
  .object({
    operationId: z.string(),
    method: z.enum(['GET', 'POST']),
    path: z.string(),
    scopes: z.array(ScopeSchema),
    effect: EffectSchema,
    confirmation: z.boolean(),
    available: z.boolean().describe('false when this server does not serve the operation yet'),
    summary: z.string(),
    extension: z.literal(true).optional().describe("Present on an operation beyond the spec's table (bulk replay, the audit read), as OpenAPI's x-extension"),
    extensionDecidedIn: z.string().optional().describe('Where the extension was decided, and why'),
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
