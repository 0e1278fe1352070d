/** The envelope every grant-authenticated answer comes in, and its error and rate-limit forms. */
import { z } from 'zod';
import { REFUSAL_CATEGORIES } from '../errors.ts';
import { ScopeSchema, Timestamp } from './common.ts';

export const EditionSchema = z
  .object({ platformKey: z.literal('shopify'), editionKey: z.literal('workflow-automation'), name: z.string() })
  .meta({ id: 'Edition', description: 'The platform edition that answered.' });

export const EnvelopeScopeSchema = z
  .object({ storeId: z.string(), shopDomain: z.string(), grantId: z.string().nullable(), scopes: z.array(ScopeSchema) })
  .meta({ id: 'EnvelopeScope', description: 'The store and grant a response is scoped to (grantId null: the merchant acting from the seat).' });

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

const ErrorDetailSchema = z
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
    scope: z.enum(['grant', 'store', 'client']).describe("Which limit was hit: this grant's, the whole store's, or (auth_failure) this client address's"),
    recommendedAction: z.string(),
  })
  .meta({
    id: 'RateLimitedResponse',
    description: 'Too many requests: wait Retry-After seconds. Here `scope` names the limit that was hit (per the spec), not the envelope scope.',
  });
