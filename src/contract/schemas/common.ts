/** Building blocks every resource's schemas share: timestamps, prefixed ids, scopes. */
import { z } from 'zod';
import { SCOPES } from '../scopes.ts';

export const Timestamp = z.string().describe('RFC 3339 UTC timestamp');
export const Id = (prefix: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[0-9a-z]+$`))
    .describe(`Identifier with prefix \`${prefix}_\``);

export const ScopeSchema = z.enum(SCOPES);
