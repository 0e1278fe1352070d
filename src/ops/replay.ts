/** Replay: hands a retained event off again as a new attempt, bypassing duplicate suppression. */
import { requeueEvent } from '../../db/areas/events.ts';
import type { EndpointStore, EventReads, HandoffQueue, ReadinessStore, Signals, UsageStore } from '../../db/repo.ts';
import { AppError, refuse, type Refusal } from '../contract/errors.ts';
import { TRIGGERS } from '../contract/triggers.ts';
import type { OpContext } from './context.ts';
import { eventSummary } from './events.ts';
import { stalePreview, type IntentKind } from './intents.ts';
import { ensureCapacity } from './usage.ts';

type ReplayInput = { reason?: string };

/** What a replay costs on the meters, one event or many: one replay execution, one executed action. */
export const REPLAY_METER_COST = [
  { meter: 'replay_executions', units: 1 },
  { meter: 'executed_actions', units: 1 },
];

async function replayable(ctx: OpContext<EventReads>, eventId: string) {
  const { core, store } = ctx;
  if (eventId.startsWith('af_')) {
    throw refuse({
      category: 'safety',
      code: 'auth_failure_not_replayable',
      reason: 'A request that failed authentication was never recorded as an event and is never replayed.',
      recommendedAction: 'Fix the sender (header name, secret, exact-bytes signing) and send a fresh event.',
    });
  }
  const event = await core.repo.getEvent(store.id, eventId);
  if (!event) throw new AppError('not_found', 'No such event.');
  const summary = eventSummary(event, core.clock.now(), core.config.bodyRetentionMs);
  // `summary.replayable` is the one rule; the table below only says why an event is not.
  if (!summary.replayable) throw refuse(whyNotReplayable(event.outcome, event.duplicateOf));
  return event;
}

type NotReplayable = [code: string, reason: string, action: string, category?: 'product_boundary'];

const NOT_REPLAYABLE: Record<string, NotReplayable> = {
  rejected: [
    'event_rejected',
    'The event was authenticated but is not deliverable; replaying it would fail the same way.',
    'Fix the sender (see the code) and send a fresh event.',
  ],
  test: [
    'test_event',
    'Test events prove authentication; hookrelay never hands them to the workflow platform.',
    'Have the sender send a real event.',
    'product_boundary',
  ],
  duplicate_suppressed: [
    'duplicate_event',
    'This receipt was suppressed as a duplicate; its first receipt carries the body.',
    'Replay the first receipt instead (see duplicateOf).',
  ],
  accepted: ['handoff_in_progress', 'The event is still waiting for its handoff.', 'Wait for the handoff to finish, then read the event again.'],
  queued: ['handoff_in_progress', 'The event is being handed off or waits for a retry.', 'Wait for the handoff to finish, then read the event again.'],
  held: ['held_for_capacity', 'The event is held for plan capacity and will be handed off when capacity returns.', 'Read GET /agent/v1/plan-usage.'],
};

function whyNotReplayable(outcome: string, duplicateOf: string | null) {
  const known = NOT_REPLAYABLE[outcome];
  if (known) {
    const action = outcome === 'duplicate_suppressed' && duplicateOf ? `Replay the first receipt instead (${duplicateOf}).` : known[2];
    return { category: known[3] ?? ('target_state' as const), code: known[0], reason: known[1], recommendedAction: action };
  }
  return RETENTION_EXPIRED;
}

/** The refusal for an outcome no replay takes, single or bulk; null when events that ended so can be replayed. */
export function outcomeNotReplayable(outcome: string): Refusal | null {
  return NOT_REPLAYABLE[outcome] ? whyNotReplayable(outcome, null) : null;
}

const RETENTION_EXPIRED = {
  category: 'target_state' as const,
  code: 'SVC_RETENTION_EXPIRED',
  reason: 'The raw body is no longer retained, so the event cannot be replayed.',
  recommendedAction: 'Ask the sender to send the event again.',
};

/** The event's state a replay was previewed on. */
type EventState = { outcome: string; attempts: number };

export const replayIntent: IntentKind<ReplayInput, EventReads & EndpointStore & ReadinessStore & UsageStore & HandoffQueue & Signals, EventState> = {
  kind: 'replay',
  freeText: ['reason'],
  async preview(ctx, input, params) {
    const event = await replayable(ctx, params.eventId!);
    await ensureCapacity(ctx.core, ctx.store, 'replay_executions');
    const endpoint = await ctx.core.repo.getEndpoint(ctx.store.id, event.endpointId);
    const warnings: string[] = [];
    if (!endpoint) warnings.push('The endpoint was deleted; the replay uses the mapping recorded with the event.');
    else if (endpoint.configVersion !== event.configVersion) {
      warnings.push(
        `The endpoint is at config version ${endpoint.configVersion}; the event was received under version ${event.configVersion}. The replay sends the mapping recorded with the event.`,
      );
    }
    if (endpoint?.status === 'archived') warnings.push('The endpoint is archived; the replay still hands the event off.');
    const readiness = endpoint
      ? (await ctx.core.repo.listTriggerReadiness(ctx.store.id)).find((r) => r.handle === TRIGGERS[endpoint.triggerVariant as keyof typeof TRIGGERS]?.handle)
      : undefined;
    if (readiness && !readiness.hasEnabledFlow) warnings.push('Flow reports no enabled workflow for this trigger; the replay would end no_workflow.');
    if (input.reason === undefined) warnings.push('No reason given; the audit trail records the replay without one.');
    return {
      targetId: event.id,
      basis: { outcome: event.outcome, attempts: event.attempts },
      preview: {
        summary: `Hand event ${event.id} (${event.outcome}) to Shopify Flow again as attempt ${event.attempts + 1}.`,
        changes: [
          { field: 'outcome', from: event.outcome, to: 'queued' },
          { field: 'attempts', from: event.attempts, to: event.attempts + 1 },
        ],
        sideEffects: [
          'Workflows that start from this trigger run again; downstream actions (emails, tags, fulfilment changes) may repeat.',
          'Duplicate suppression is bypassed for this replay.',
        ],
        meterCost: REPLAY_METER_COST,
        warnings,
      },
    };
  },
  async plan(ctx, intent, _input, basis) {
    const event = await replayable(ctx, intent.targetId!);
    if (event.outcome !== basis?.outcome || event.attempts !== basis.attempts) {
      throw stalePreview(
        `the event is ${event.outcome} after ${event.attempts} attempt(s); the preview showed it ${basis ? `${basis.outcome} after ${basis.attempts}` : 'in another state'}`,
      );
    }
    await ensureCapacity(ctx.core, ctx.store, 'replay_executions');
    if (!(await ctx.core.repo.getEventBody(event.id))) {
      throw refuse(RETENTION_EXPIRED);
    }
    return {
      writes: [requeueEvent(event.id, basis, ctx.core.clock.now())],
      meters: ['replay_executions'],
      result: () => ({ summary: `Event ${event.id} is queued for attempt ${event.attempts + 1}.`, resourceId: event.id }),
      after: () => ctx.core.repo.notify?.('due', event.id),
    };
  },
};
