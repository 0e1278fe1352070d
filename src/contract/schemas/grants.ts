/** The grant in use, as introspection shows it. */
import { z } from 'zod';
import { TIER_NAMES } from '../scopes.ts';
import { Id, ScopeSchema, Timestamp } from './common.ts';

const TierSchema = z.enum(TIER_NAMES as [string, ...string[]]);

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
