/** Setup state, plan usage and the billing handoff (the Setup reads). */
import { z } from 'zod';
import { METERS } from '../limits.ts';
import { BILLING_MODES, DESTINATIONS } from '../platform.ts';
import { HandoffStateSchema, PlatformLinkStateSchema } from '../platform-schemas.ts';
import { DIAGNOSES, DIAGNOSIS_CODES } from '../diagnoses.ts';
import { Timestamp } from './common.ts';
import { AuthModeSchema, TriggerVariantSchema } from './endpoints.ts';
import { EventOutcomeSchema } from './events.ts';

const RecommendedActionSchema = z
  .object({ action: z.string(), text: z.string(), operationId: z.string().nullable(), endpointId: z.string().nullable() })
  .meta({ id: 'RecommendedAction' });

const SignatureDiagnosisSchema = z
  .object({
    code: z.enum(DIAGNOSIS_CODES).describe(DIAGNOSIS_CODES.map((c) => `\`${c}\`: ${DIAGNOSES[c].meaning}`).join(' ')),
    fix: z.string().describe("One line: what to change in the sender (the preset's own step for zapier, make and n8n endpoints)"),
  })
  .describe('What signature forensics recognised in a failed authentication: never the value received, only which usual mistake it was')
  .meta({ id: 'SignatureDiagnosis' });

export const SetupStateSchema = z
  .object({
    store: z.object({ shopDomain: z.string(), plan: z.string(), destination: z.enum(DESTINATIONS) }),
    handoff: HandoffStateSchema,
    platform: PlatformLinkStateSchema.nullable().describe('The live link to Shopify; null when the store hands off to the log destination'),
    endpoints: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        triggerVariant: TriggerVariantSchema,
        authMode: AuthModeSchema,
        headerName: z.string(),
        secretLast4: z.string(),
        status: z.enum(['active', 'archived']),
        configVersion: z.number().int(),
        lastReceipt: z.object({ eventId: z.string(), outcome: EventOutcomeSchema, receivedAt: Timestamp }).nullable(),
        recentAuthFailures: z.number().int(),
        authFailureDiagnosis: SignatureDiagnosisSchema.nullable().describe(
          "What signature forensics recognised in this endpoint's newest failed authentication (the code and the fix, never the value received), while no authenticated receipt has come since; null when nothing was recognised",
        ),
      }),
    ),
    triggerReadiness: z.array(
      z.object({
        triggerVariant: TriggerVariantSchema,
        handle: z.string(),
        hasEnabledFlow: z.boolean().nullable().describe('null until the platform reports it'),
        updatedAt: Timestamp.nullable(),
      }),
    ),
    checklist: z.array(z.object({ item: z.string(), done: z.boolean(), text: z.string() })),
    nextRecommendedActions: z.array(RecommendedActionSchema),
  })
  .meta({ id: 'SetupState' });

const MeterSchema = z
  .object({
    meter: z.enum(METERS),
    used: z.number().int(),
    limit: z.number().int().nullable().describe('null when unlimited on this plan'),
    remaining: z.number().int().nullable(),
    resetAt: Timestamp,
    enforcement: z.enum(['ok', 'warning', 'grace', 'exhausted']),
  })
  .meta({ id: 'UsageMeter' });

export const PlanUsageStateSchema = z
  .object({
    plan: z.string(),
    billingStatus: z.string(),
    periodStart: Timestamp,
    periodEnd: Timestamp,
    meters: z.array(MeterSchema),
    enforcement: z.enum(['ok', 'warning', 'grace', 'exhausted']),
    graceAvailable: z.boolean(),
    retryGuidance: z.string(),
    canApproveCharges: z.literal(false),
    settings: z
      .object({
        precedence: z.string(),
        values: z.array(
          z.object({
            key: z.string().describe('As in hookrelay.toml, e.g. retention.events, rate_limits.rich_read.grant'),
            value: z.union([z.string(), z.number()]).describe('Durations as 90d, 30s; a retry schedule as 5s,30s,2m'),
            source: z.enum(['default', 'file', 'environment', 'flag']),
          }),
        ),
      })
      .describe("This server's operator settings in effect (rate limits, retry schedule, retention, sandbox limits, public URL) and where each came from"),
  })
  .meta({ id: 'PlanUsageState' });

export const BillingHandoffReadSchema = z
  .object({
    billingStatus: z.string(),
    currentPlan: z.string(),
    billing: z.enum(BILLING_MODES).describe('Whether this deployment bills through Shopify (`off`: its operator sets plans)'),
    appBillingUrl: z.string().describe('Where a human chooses a plan and approves its charge: the app in the Shopify admin when billing is on'),
    paidPlanOptions: z.array(
      z.object({ plan: z.string(), priceUsd: z.number(), acceptedEventsPer30Days: z.number().int(), replayExecutions: z.number().int() }),
    ),
    humanOnly: z.literal(true),
    note: z.string(),
  })
  .meta({ id: 'BillingHandoffRead' });
