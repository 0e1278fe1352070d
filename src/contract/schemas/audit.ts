/** The audit trail as the store's own read: who did what (humans and agents), filterable, newest first. */
import { z } from 'zod';
import { Timestamp } from './common.ts';

export const ACTOR_KINDS = ['human', 'agent', 'anonymous'] as const;

export const AuditQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50).describe('Page size, 1 to 100'),
  cursor: z.string().max(200).optional().describe('Opaque cursor from nextCursor'),
  actorKind: z.enum(ACTOR_KINDS).optional().describe('`human` (the merchant, an operator), `agent` (a grant) or `anonymous` (failed authentication)'),
  operationId: z.string().min(1).max(100).optional().describe('A contract operationId, or an admin action (issueGrant, revokeGrant, …)'),
  grantId: z.string().min(1).max(100).optional().describe('Only what this grant did (`gr_…`)'),
  since: z.iso.datetime().optional().describe('At or after (RFC 3339)'),
  until: z.iso.datetime().optional().describe('Before (RFC 3339)'),
});

const AuditEntrySchema = z
  .object({
    id: z.string(),
    at: Timestamp,
    actorKind: z.enum(ACTOR_KINDS),
    actorLabel: z.string().describe("The grant's label, or the person's actor label"),
    grantId: z.string().nullable(),
    operationId: z.string(),
    targetId: z.string().nullable(),
    intentId: z.string().nullable(),
    transition: z.string().nullable().describe("An intent's state after the call, or an admin action's summary"),
    outcome: z.string().describe('`ok`, `refused` or `error`'),
    status: z.number().int(),
    errorCode: z.string().nullable(),
    refusalCategory: z.string().nullable(),
    refusalCode: z.string().nullable(),
    requestId: z.string().nullable(),
    surface: z.string().nullable().describe('How the call came: `http`, `cli` or `mcp`; null for a summary row'),
  })
  .meta({ id: 'AuditEntry', description: 'One call, intent transition or admin action. Never inputs, bodies or secrets.' });

export const AuditListSchema = z
  .object({ entries: z.array(AuditEntrySchema), nextCursor: z.string().nullable() })
  .meta({ id: 'AuditList', description: "The store's audit rows, newest first." });
