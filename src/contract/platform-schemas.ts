/** Schemas of the platform link as reads show it: the store's handoff (active or paused), credentials, API version, live check. */
import { z } from 'zod';
import { CREDENTIAL_MODES, LINK_CHECK_RESULTS, PAUSE_CODES, PAUSE_REASONS } from './platform.ts';

const Timestamp = z.string().describe('RFC 3339 UTC timestamp');
const PauseCodeSchema = z.enum(Object.keys(PAUSE_CODES) as [keyof typeof PAUSE_CODES, ...(keyof typeof PAUSE_CODES)[]]);

export const HandoffStateSchema = z
  .object({
    state: z.enum(['active', 'paused']),
    reason: z.enum(PAUSE_REASONS).nullable().describe('Why the handoff is paused; null while active'),
    code: PauseCodeSchema.nullable().describe(
      'Stable code of the pause (`SVC_CREDENTIALS_MISSING` is this box’s configuration, the others what the platform answered)',
    ),
    message: z.string().nullable(),
    since: Timestamp.nullable(),
    nextProbeAt: Timestamp.nullable().describe('When one probe next asks the platform again; events wait until it succeeds'),
    probes: z.number().int().min(0).describe('Probes made since the pause began'),
    recommendedAction: z.string().nullable(),
  })
  .meta({
    id: 'HandoffState',
    description: "The store's handoff. While `paused`, events wait `queued` (never `failed`) and drain by themselves once a probe succeeds.",
  });
export type HandoffState = z.infer<typeof HandoffStateSchema>;

export const ApiVersionSchema = z
  .object({
    version: z.string().describe('The Admin API version hookrelay requests'),
    releasedOn: z.string(),
    supportedUntil: z.string().describe('Release + 12 months: the earliest day the platform may stop serving it'),
    daysLeft: z.number().int(),
    status: z.enum(['supported', 'ending_soon', 'unsupported']).describe('`ending_soon` within 90 days of the end'),
  })
  .meta({ id: 'PlatformApiVersion' });

export const PlatformLinkStateSchema = z
  .object({
    apiVersion: ApiVersionSchema,
    answeredApiVersion: z
      .string()
      .nullable()
      .describe('The version the platform last answered with (X-Shopify-API-Version); another than `apiVersion.version` means it fell forward'),
    answeredApiVersionAt: Timestamp.nullable(),
    credentials: z.object({
      mode: z.enum(CREDENTIAL_MODES).nullable(),
      adminTokenEnv: z.string().nullable().describe('`static`: NAME of the variable holding the token'),
      clientId: z.string().nullable(),
      clientSecretEnv: z.string().nullable().describe('`client-credentials`: NAME of the variable holding the client secret'),
      variableSet: z.boolean().nullable().describe('Whether that variable is set where the server runs'),
      token: z
        .object({
          obtainedAt: Timestamp.nullable(),
          expiresAt: Timestamp.nullable(),
          lastRenewalAt: Timestamp.nullable(),
          lastRenewalError: z.string().nullable(),
        })
        .nullable()
        .describe('The token hookrelay obtained (client-credentials); never its value'),
    }),
    budget: z
      .object({
        maximum: z.number(),
        available: z.number().describe('Points available now, as hookrelay models them from the replies'),
        restoreRate: z.number().describe('Points restored a second'),
        costPerHandoff: z.number(),
        pacedUntil: Timestamp.nullable().describe('When the last event waiting for the budget is due to go; null when none waits'),
      })
      .nullable()
      .describe("The store's cost budget on Shopify (a leaky bucket per app and store), shared by every instance; null until a reply reported it"),
    check: z
      .object({
        result: z.enum(LINK_CHECK_RESULTS),
        message: z.string(),
        httpStatus: z.number().int().nullable(),
        checkedAt: Timestamp,
      })
      .describe('A live, authenticated query with the current credentials (reused for 10 s)'),
  })
  .meta({ id: 'PlatformLinkState', description: 'The live link to the workflow platform. Names variables, never a token or secret.' });
export type PlatformLinkState = z.infer<typeof PlatformLinkStateSchema>;
