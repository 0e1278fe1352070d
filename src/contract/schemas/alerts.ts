/** Alerts as the reliability reads show them (raised and recovered by the alert sweep, src/relay/alerts.ts). */
import { z } from 'zod';
import { ALERT_KINDS } from '../triggers.ts';
import { Id, Timestamp } from './common.ts';

const ALERT_HANDOFF_STATES = ['pending', 'sending', 'delivered', 'failed', 'skipped'] as const;
const AlertHandoffStateSchema = z.enum(ALERT_HANDOFF_STATES);

export const AlertSchema = z
  .object({
    id: Id('alr'),
    kind: z
      .enum(ALERT_KINDS)
      .describe(
        'silence: an endpoint received nothing for longer than its expectedEvery; handoff_paused: handoff paused for the store’s credentials; uninstalled: the app was uninstalled; auth_failures: a burst of failed authentications on one endpoint',
      ),
    state: z
      .enum(['open', 'recovered'])
      .describe('open until its condition ends (a new receipt, a resume, a reinstall, a quiet window); a new breach is a new alert'),
    endpoint: z.object({ id: z.string(), name: z.string() }).nullable().describe('The endpoint concerned; null for a store-wide alert'),
    since: Timestamp.describe(
      'When the condition began: the last receipt before a silence (or the start of the watch when there was none), the pause, the uninstall, the first failure of the burst',
    ),
    raisedAt: Timestamp,
    recoveredAt: Timestamp.nullable(),
    summary: z.string().describe('One line for people; never a secret, a body or a header value'),
    recommendedAction: z.string(),
    handoff: z
      .object({ raised: AlertHandoffStateSchema, recovered: AlertHandoffStateSchema.nullable() })
      .describe(
        'Each phase handed to Shopify Flow as the hookrelay-alert trigger: pending, sending, delivered, failed (given up after retries, or refused), skipped (no Flow destination, or Flow reports no enabled workflow for the trigger)',
      ),
  })
  .meta({ id: 'Alert', description: 'An alert hookrelay raised about the store or one of its endpoints. Counts against no plan meter.' });
export type Alert = z.infer<typeof AlertSchema>;
