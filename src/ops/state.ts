/** Store-level reads: setup state, plan usage, billing handoff, reliability health. */
import { settingsInEffect } from '../settings.ts';
import type { ConfirmationStore } from '../../db/areas/confirmations.ts';
import type { PlatformLinkStore } from '../../db/areas/platform-links.ts';
import type { EndpointStore, EventReads, ReadinessStore, UsageStore } from '../../db/repo.ts';
import type { OperationInput } from '../contract/operations.ts';
import type { TriggerVariant } from '../contract/schemas.ts';
import { METERS } from '../contract/limits.ts';
import { TRIGGER_VARIANTS, WINDOW_MS, type Window } from '../contract/schemas.ts';
import { ALERT_TRIGGER, TRIGGERS } from '../contract/triggers.ts';
import { FLOW_TEMPLATES } from '../contract/templates.ts';
import { diagnosisFor, isDiagnosisCode } from '../contract/diagnoses.ts';
import { iso, isoOrNull } from '../lib/clock.ts';
import { METRIC, statsBucket } from '../../db/types.ts';
import type { OpContext } from './context.ts';
import { confirmedShare } from './confirmations.ts';
import { alertsSince } from './alerts.ts';
import type { AlertStore } from '../../db/areas/alerts.ts';
import { handoffState } from './platform-link.ts';
import { latencyQuantile } from '../lib/event-stats.ts';
import { enforcement, limitOf, paidPlans, period, PLANS } from '../contract/plans.ts';
import { appPlatform, platformOf } from '../platform/registry.ts';

const FAILURE_PAIR_WINDOW_MS = 30 * 60_000;

/**
 * Whether an endpoint's two newest requests both failed authentication within 30 minutes (the spec's "two newest
 * consecutive" failures): `failures` are its newest two auth-failure rows, `lastReceiptAt` the time of its newest
 * authenticated receipt (any outcome). A receipt at or after the older failure came between the two, or after
 * both, and resets the pair. A folded row (count >= 2) holds the two newest failures itself, within its one-minute
 * flood window; it keeps only its last time, so there only a receipt after the newest failure can be placed.
 */
function failurePair(failures: readonly { at: number; count: number }[], lastReceiptAt: number | null): boolean {
  const [newest, previous] = failures;
  if (!newest) return false;
  const older = newest.count >= 2 ? newest.at : previous?.at;
  if (older === undefined || newest.at - older > FAILURE_PAIR_WINDOW_MS) return false;
  return lastReceiptAt === null || lastReceiptAt < older;
}

export async function getSetupState(ctx: OpContext<EndpointStore & ReadinessStore & EventReads & { links: PlatformLinkStore }>) {
  const { core, store } = ctx;
  const link = await core.repo.links.get(store.id);
  const handoff = handoffState(link, { publicUrl: core.config.publicUrl, shopDomain: store.shopDomain });
  const on = platformOf(store.destination);
  const platform = await on.linkState(core, store, link);
  const checks = on.setupChecks(core.config.env, store, platform);
  const endpoints = await core.repo.listEndpoints(store.id);
  const readiness = await core.repo.listTriggerReadiness(store.id);
  const actions: { action: string; text: string; operationId: string | null; endpointId: string | null }[] = [];
  const summaries = [];
  // Per store, not per endpoint: one probe each on (store_id, outcome, id).
  const testSeen = await core.repo.hasOutcome(store.id, 'test');
  const delivered = await core.repo.hasOutcome(store.id, 'delivered');
  for (const ep of endpoints) {
    const last = await core.repo.latestEvent(store.id, ep.id);
    const failures = await core.repo.listAuthFailures(store.id, ep.id, 2);
    const recent = failures.filter((f) => f.at >= core.clock.now() - FAILURE_PAIR_WINDOW_MS).reduce((n, f) => n + f.count, 0);
    // Signature forensics' finding on the newest failure, while no authenticated receipt has come since it.
    const newest = failures[0];
    const diagnosis =
      newest && isDiagnosisCode(newest.diagnosis) && (!last || last.receivedAt < newest.at) ? diagnosisFor(newest.diagnosis, ep.senderProfile) : null;
    if (ep.status === 'active' && failurePair(failures, last?.receivedAt ?? null)) {
      const found = diagnosis
        ? ` The newest failure looks like ${diagnosis.code}: ${diagnosis.fix} Fix that in the sender first; a replacement endpoint would fail the same way.`
        : '';
      actions.push({
        action: 'create_replacement_endpoint',
        text: `The two newest requests to ${ep.id} failed authentication within 30 minutes.${found} If the sender cannot be fixed, create a replacement endpoint with the same mapping; ${ep.id} stays active until you delete it separately.`,
        operationId: 'createEndpoint',
        endpointId: ep.id,
      });
    }
    summaries.push({
      id: ep.id,
      name: ep.name,
      triggerVariant: ep.triggerVariant as TriggerVariant,
      authMode: ep.authMode as 'hmac_sha256' | 'static_header',
      headerName: ep.headerName,
      secretLast4: ep.secretLast4,
      status: ep.status as 'active' | 'archived',
      configVersion: ep.configVersion,
      lastReceipt: last ? { eventId: last.id, outcome: last.outcome as 'accepted', receivedAt: iso(last.receivedAt) } : null,
      recentAuthFailures: recent,
      authFailureDiagnosis: diagnosis,
    });
  }
  const triggerReadiness = TRIGGER_VARIANTS.map((v) => {
    const r = readiness.find((x) => x.handle === TRIGGERS[v].handle);
    return { triggerVariant: v, handle: TRIGGERS[v].handle, hasEnabledFlow: r ? r.hasEnabledFlow : null, updatedAt: isoOrNull(r?.updatedAt) };
  });
  const active = endpoints.filter((e) => e.status === 'active');
  const workflowEnabled = active.some((e) => readiness.find((r) => r.handle === TRIGGERS[e.triggerVariant as TriggerVariant]?.handle)?.hasEnabledFlow);
  const checklist = [
    {
      item: 'store_installed',
      done: store.uninstalledAt == null,
      text:
        store.uninstalledAt == null
          ? `Store ${store.shopDomain} is installed.`
          : `The app was uninstalled from ${store.shopDomain}; events wait for an install again.`,
    },
    { item: 'destination_configured', ...checks.destination_configured },
    { item: 'destination_reachable', ...checks.destination_reachable },
    { item: 'api_version_supported', ...checks.api_version_supported },
    {
      item: 'handoff_active',
      done: handoff.state === 'active',
      text: handoff.state === 'active' ? 'Handoff is active.' : `Handoff is paused since ${handoff.since} (${handoff.code}): events wait, none fail.`,
    },
    { item: 'lifecycle_callback_verifiable', ...checks.lifecycle_callback_verifiable },
    { item: 'endpoint_created', done: active.length > 0, text: 'At least one active endpoint.' },
    { item: 'test_receipt_seen', done: testSeen, text: 'A test event authenticated.' },
    { item: 'first_delivered_event', done: delivered, text: 'An event was handed to the workflow platform.' },
    { item: 'workflow_enabled', done: workflowEnabled, text: 'Flow reports an enabled workflow for an endpoint trigger.' },
    {
      item: 'workflow_templates',
      done: readiness.find((r) => r.handle === ALERT_TRIGGER.handle)?.hasEnabledFlow === true,
      text: `Start from a ready workflow in Shopify Flow (Templates, search hookrelay): ${FLOW_TEMPLATES.map((t) => `"${t.name}"`).join(', ')}. Done once Flow reports an enabled workflow on the alert trigger.`,
    },
  ];
  const next = (item: string, action: string, text: string, operationId: string | null) =>
    checklist.find((c) => c.item === item && !c.done) && actions.push({ action, text, operationId, endpointId: null });
  if (handoff.state === 'paused') {
    actions.unshift({
      action: 'resume_handoff',
      text: `${handoff.message ?? ''} ${handoff.recommendedAction ?? ''}`.trim(),
      operationId: null,
      endpointId: null,
    });
  } else if (platform && platform.check.result !== 'ok') {
    actions.unshift({
      action: 'check_destination',
      text: `The destination check found ${platform.check.result}: ${platform.check.message}`,
      operationId: null,
      endpointId: null,
    });
  }
  next('endpoint_created', 'create_endpoint', 'Create an endpoint for the sender.', 'createEndpoint');
  next('test_receipt_seen', 'prepare_endpoint_test', 'Prepare a test event and have the sender send it.', 'createEndpointTestIntent');
  next('workflow_enabled', 'enable_workflow', 'Ask the merchant to enable a Flow workflow that starts from the hookrelay trigger.', null);
  return {
    store: { shopDomain: store.shopDomain, plan: store.plan, destination: on.name },
    handoff,
    platform,
    endpoints: summaries,
    triggerReadiness,
    checklist,
    nextRecommendedActions: actions,
  };
}

export async function getPlanUsage(ctx: OpContext<UsageStore>) {
  const { core, store } = ctx;
  const now = core.clock.now();
  const p = period(store, now);
  // accepted_events is counted by the ingest commit itself (held receipts are not counted until released).
  const used = await core.repo.getUsage(store.id, p.start);
  const meters = METERS.map((meter) => {
    const u = used[meter] ?? 0;
    const limit = limitOf(store, meter);
    return { meter, used: u, limit, remaining: limit == null ? null : Math.max(0, limit - u), resetAt: iso(p.end), enforcement: enforcement(store, meter, u) };
  });
  const order = ['ok', 'warning', 'grace', 'exhausted'] as const;
  const worst = meters.reduce<(typeof order)[number]>((w, m) => (order.indexOf(m.enforcement) > order.indexOf(w) ? m.enforcement : w), 'ok');
  return {
    plan: store.plan,
    billingStatus: store.billingStatus,
    periodStart: iso(p.start),
    periodEnd: iso(p.end),
    meters,
    enforcement: worst,
    graceAvailable: (PLANS[store.plan]?.eventGrace ?? 0) > 0,
    retryGuidance:
      worst === 'exhausted'
        ? `A meter is exhausted: metered actions are refused with 402 until ${iso(p.end)}; inbound events over capacity are held, never dropped. A human can change the plan (GET /agent/v1/billing-handoff).`
        : 'Read this before loops, polling or repeated previews. On 429, wait Retry-After seconds.',
    canApproveCharges: false as const,
    settings: settingsInEffect(core.config),
  };
}

export async function getBillingHandoff(ctx: OpContext<unknown>) {
  const { core, store } = ctx;
  // Billing through the app's platform: the merchant opens the app in their admin and chooses a plan there (human-only).
  const { billing, appBillingUrl } = appPlatform.billingLink(core.config, store.shopDomain);
  return {
    billingStatus: store.billingStatus,
    currentPlan: store.plan,
    billing,
    appBillingUrl,
    paidPlanOptions: paidPlans(),
    humanOnly: true as const,
    note:
      billing === 'off'
        ? 'This hookrelay does not bill: plans are set by its operator (hookrelay plan set). This API reads plan state; it never creates or approves a charge.'
        : 'The merchant chooses a plan by opening the app in their Shopify admin (appBillingUrl) and approves the charge there. This API reads plan state and links there; it never creates or approves a charge.',
  };
}

/** How far back "failing now" looks: the event_stats bucket holding this long ago, and every one after. */
const RECENT_MINUTES = 5;

/** Attempts of the last RECENT_MINUTES (from its bucket's start) that failed transiently, and handoffs delivered. */
async function recentAttempts(ctx: OpContext<EventReads>, to: number): Promise<{ transient: number; delivered: number }> {
  const sums = await ctx.core.repo.sumStats(ctx.store.id, statsBucket(to - RECENT_MINUTES * 60_000));
  const n = (metric: string) => sums[metric] ?? 0;
  return {
    transient: n(METRIC.error('server_error')) + n(METRIC.error('network')) + n(METRIC.error('timeout')),
    delivered: n(METRIC.handoff('delivered')),
  };
}

/**
 * What happened in the window, from the event_stats counters (5-minute buckets; `from` is the first bucket's
 * start): receipts by outcome at receipt, handoffs by result, attempt errors, and the latency histogram.
 */
type ReliabilityRepo = EventReads & ConfirmationStore & AlertStore & Pick<EndpointStore, 'listEndpoints'> & { links: PlatformLinkStore };

async function reliability(ctx: OpContext<ReliabilityRepo>, subject: 'tenant' | 'destination', window: Window) {
  const { core, store } = ctx;
  const to = core.clock.now();
  const from = statsBucket(to - WINDOW_MS[window]);
  const sums = await core.repo.sumStats(store.id, from);
  const n = (metric: string) => sums[metric] ?? 0;
  const errors = {
    throttled: n(METRIC.error('throttled')),
    serverErrors: n(METRIC.error('server_error')),
    network: n(METRIC.error('network')),
    userErrors: n(METRIC.error('user_errors')) + n(METRIC.error('http_error')),
    timeouts: n(METRIC.error('timeout')),
    credentials: n(METRIC.error('credentials')),
  };
  const link = await core.repo.links.get(store.id);
  const handoff = handoffState(link, { publicUrl: core.config.publicUrl, shopDomain: store.shopDomain });
  const budget = platformOf(store.destination).budgetView(link, to);
  const authFailures = subject === 'tenant' ? (await core.repo.countAuthFailures(store.id, from)).map((r) => ({ endpointId: r.endpointId, count: r.n })) : [];
  const pending = await core.repo.pendingStats(store.id);
  const c = (outcome: string) => n(METRIC.handoff(outcome));
  const handedOff = c('delivered') + c('failed') + c('no_workflow');
  const reasons: string[] = [];
  // Events waiting for the budget are no fault: said when the wait is long (the backlog beyond a minute of budget).
  if (budget?.pacedUntil && Date.parse(budget.pacedUntil) - to > 60_000) {
    reasons.push(
      `Handoffs are paced by the store's Shopify budget (${budget.restoreRate} points a second): the last waiting event is due at ${budget.pacedUntil}.`,
    );
  }
  if (handoff.state === 'paused')
    reasons.push(`Handoff is paused since ${handoff.since} (${handoff.code}); events wait. ${handoff.recommendedAction ?? ''}`.trim());
  else {
    // Failing now, before any event runs out of retries (they last a day) or the store pauses: the last minutes' attempts.
    const recent = await recentAttempts(ctx, to);
    if (recent.transient > 0 && recent.transient >= recent.delivered) {
      reasons.push(
        `The destination is failing: of the attempts in the last ${RECENT_MINUTES} minutes, ${recent.transient} got a 5xx, a timeout or no connection and ${recent.delivered} were delivered; events wait for their retries.`,
      );
    }
  }
  if (handedOff > 0 && c('failed') / handedOff > 0.05) reasons.push(`${c('failed')} of ${handedOff} handoffs failed.`);
  if (pending.oldestReceivedAt != null && to - pending.oldestReceivedAt > 15 * 60_000) reasons.push('An event has waited over 15 minutes for handoff.');
  if (errors.throttled > 0) reasons.push(`The platform throttled ${errors.throttled} attempts.`);
  if (subject === 'tenant' && authFailures.some((a) => a.count > 0)) reasons.push('Inbound authentication failures were seen; check senders.');
  if (c('no_workflow') > 0) reasons.push(`${c('no_workflow')} events had no enabled workflow.`);
  const alerts = await alertsSince(ctx, from);
  for (const a of alerts.open) reasons.push(`Open alert (${a.kind}): ${a.summary}`);
  const verdict = reasons.length === 0 ? 'healthy' : handedOff > 0 && c('failed') / handedOff > 0.25 ? 'unhealthy' : 'degraded';
  return {
    subject,
    window,
    from: iso(from),
    to: iso(to),
    counts: {
      accepted: n(METRIC.received('accepted')) + n(METRIC.received('held')),
      delivered: c('delivered'),
      failed: c('failed'),
      noWorkflow: c('no_workflow'),
      rejected: n(METRIC.received('rejected')),
      duplicate: n(METRIC.received('duplicate_suppressed')),
      held: n(METRIC.received('held')),
    },
    authFailuresByEndpoint: authFailures,
    handoffLatencyMs: { p50: latencyQuantile(sums, 0.5), p95: latencyQuantile(sums, 0.95) },
    retryBacklog: pending.backlog,
    oldestUndeliveredAgeSeconds: pending.oldestReceivedAt == null ? null : Math.floor((to - pending.oldestReceivedAt) / 1000),
    destinationErrors: errors,
    handoff,
    confirmations: subject === 'tenant' ? await confirmedShare(core.repo, store.id, from) : null,
    alerts,
    verdict: verdict as 'healthy' | 'degraded' | 'unhealthy',
    reasons,
  };
}

export const getTenantReliabilityHealth = (ctx: OpContext<ReliabilityRepo>, { query }: OperationInput<'getTenantReliabilityHealth'>) =>
  reliability(ctx, 'tenant', query.window);
export const getDestinationReliabilityHealth = (ctx: OpContext<ReliabilityRepo>, { query }: OperationInput<'getDestinationReliabilityHealth'>) =>
  reliability(ctx, 'destination', query.window);
