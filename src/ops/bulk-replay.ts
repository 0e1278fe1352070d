/**
 * Bulk replay: every retained event a filter selects handed off again as one intent, one replay execution however
 * many events. The preview binds what it showed (the newest event matched and the time it matched): execute leaves
 * out events received or attempted after it, so a replay made singly meanwhile is not made twice.
 */
import type { BulkReplayFilter } from '../../db/areas/bulk-replay.ts';
import type { EndpointStore, ReadinessStore, Repo, Signals, UsageStore } from '../../db/repo.ts';
import { refuse } from '../contract/errors.ts';
import { BULK_REPLAY_MAX_EVENTS } from '../contract/limits.ts';
import type { BulkReplayInput, BulkReplaySelection, EventOutcome } from '../contract/schemas.ts';
import { TRIGGERS } from '../contract/triggers.ts';
import { iso } from '../lib/clock.ts';
import { idFloor } from '../lib/ids.ts';
import type { OpContext } from './context.ts';
import type { IntentKind, IntentPreview, IntentResult } from './intents.ts';
import { outcomeNotReplayable, REPLAY_METER_COST } from './replay.ts';
import { ensureCapacity } from './usage.ts';

type Storage = EndpointStore & ReadinessStore & UsageStore & Signals & Pick<Repo, 'bulkReplays'>;

const SAMPLE_SIZE = 10;

const storage = (ctx: OpContext<Storage>) => ctx.core.repo.bulkReplays;

/** The storage filter of the input: bodies count as retained while received within the body retention, as reads say. */
function filterOf(ctx: OpContext<Storage>, f: BulkReplayInput['filter']): BulkReplayFilter {
  const since = f.since === undefined ? undefined : Date.parse(f.since);
  return {
    storeId: ctx.store.id,
    outcome: f.outcome,
    code: f.code,
    endpointId: f.endpointId,
    since,
    sinceId: since === undefined ? undefined : idFloor('evt', since),
    until: f.until === undefined ? undefined : Date.parse(f.until),
    retainedAfter: ctx.core.clock.now() - ctx.core.config.bodyRetentionMs,
  };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Warnings about the endpoints of the matched events: deleted, archived, or a trigger Flow runs no workflow for. */
async function endpointWarnings(ctx: OpContext<Storage>, endpointIds: string[]): Promise<string[]> {
  const readiness = await ctx.core.repo.listTriggerReadiness(ctx.store.id);
  const deleted: string[] = [];
  const archived: string[] = [];
  const noWorkflow = new Map<string, string[]>();
  for (const id of endpointIds) {
    const endpoint = await ctx.core.repo.getEndpoint(ctx.store.id, id);
    if (!endpoint) {
      deleted.push(id);
      continue;
    }
    if (endpoint.status === 'archived') archived.push(id);
    const handle = TRIGGERS[endpoint.triggerVariant as keyof typeof TRIGGERS]?.handle;
    if (handle && readiness.find((r) => r.handle === handle)?.hasEnabledFlow === false) noWorkflow.set(handle, [...(noWorkflow.get(handle) ?? []), id]);
  }
  const warnings: string[] = [];
  if (deleted.length) warnings.push(`Deleted endpoints (${deleted.join(', ')}): their events replay with the mapping recorded with each event.`);
  if (archived.length) warnings.push(`Archived endpoints (${archived.join(', ')}): the replay still hands their events off.`);
  for (const [handle, ids] of noWorkflow) {
    warnings.push(`Flow reports no enabled workflow for ${handle} (endpoints ${ids.join(', ')}); their events would end no_workflow.`);
  }
  return warnings;
}

export const bulkReplayIntent: IntentKind<BulkReplayInput, Storage> = {
  kind: 'bulk_replay',
  freeText: ['reason'],
  async preview(ctx, input) {
    const { filter } = input;
    const refusal = outcomeNotReplayable(filter.outcome);
    if (refusal) throw refuse(refusal);
    const bulk = storage(ctx);
    const f = filterOf(ctx, filter);
    const counts = await bulk.counts(f);
    if (counts.count === 0) {
      const expired = counts.bodyNotRetained
        ? ` (${plural(counts.bodyNotRetained, 'matching event')} no longer ${counts.bodyNotRetained === 1 ? 'has its' : 'have their'} raw body)`
        : '';
      throw refuse(
        {
          category: 'target_state',
          code: 'nothing_to_replay',
          reason: `No ${filter.outcome} event of this store with a retained body matches the filter${expired}.`,
          recommendedAction:
            'Read GET /agent/v1/events with the same outcome and window to see what there is, then widen the filter; events whose body expired must be sent again by the sender.',
        },
        { bodyNotRetained: counts.bodyNotRetained },
      );
    }
    if (counts.count > BULK_REPLAY_MAX_EVENTS) {
      const splitAt = await bulk.receivedAtAfter(f, BULK_REPLAY_MAX_EVENTS);
      const until = splitAt === null ? null : iso(splitAt);
      throw refuse(
        {
          category: 'safety',
          code: 'bulk_replay_too_many',
          reason: `The filter matches ${counts.count} events; one bulk replay hands off at most ${BULK_REPLAY_MAX_EVENTS}.`,
          recommendedAction: `Narrow the filter (window, endpoint or code)${until ? `: until ${until} keeps the oldest ${BULK_REPLAY_MAX_EVENTS} at most` : ''}; replay the rest with a second intent.`,
        },
        { count: counts.count, max: BULK_REPLAY_MAX_EVENTS, ...(until ? { suggestedUntil: until } : {}) },
      );
    }
    await ensureCapacity(ctx.core, ctx.store, 'replay_executions');
    const [sample, endpointIds] = await Promise.all([bulk.sample(f, SAMPLE_SIZE), bulk.endpointIds(f)]);
    const warnings = await endpointWarnings(ctx, endpointIds);
    if (counts.bodyNotRetained)
      warnings.push(
        `${plural(counts.bodyNotRetained, 'matching event')} no longer ${counts.bodyNotRetained === 1 ? 'has its' : 'have their'} raw body and ${counts.bodyNotRetained === 1 ? 'is' : 'are'} left out.`,
      );
    if (input.reason === undefined) warnings.push('No reason given; the audit trail records the replay without one.');
    const selection: BulkReplaySelection = {
      filter: { outcome: filter.outcome, code: filter.code, endpointId: filter.endpointId, since: filter.since, until: filter.until },
      count: counts.count,
      excluded: { bodyNotRetained: counts.bodyNotRetained },
      window: { oldestReceivedAt: iso(counts.oldestReceivedAt!), newestReceivedAt: iso(counts.newestReceivedAt!) },
      throughEventId: counts.throughId!,
      asOf: iso(ctx.core.clock.now()),
      sample: sample.map((e) => ({ ...e, outcome: e.outcome as EventOutcome, receivedAt: iso(e.receivedAt) })),
    };
    return {
      targetId: null,
      preview: {
        summary: `Hand ${plural(counts.count, `${filter.outcome} event`)} received ${selection.window.oldestReceivedAt} to ${selection.window.newestReceivedAt} to Shopify Flow again, as one replay.`,
        changes: [
          { field: 'outcome', from: filter.outcome, to: 'queued' },
          { field: 'attempts', from: 'n', to: 'n + 1' },
        ],
        sideEffects: [
          'Workflows that start from these triggers run again, once per event; downstream actions (emails, tags, fulfilment changes) may repeat.',
          'Duplicate suppression is bypassed for these replays.',
          "The events queue at once and are handed off as the store's handoff allows, paced like any other.",
          'Execute leaves out events received after this preview, and events attempted again since (replayed singly, retried).',
        ],
        meterCost: REPLAY_METER_COST,
        warnings,
        selection,
      },
    };
  },
  async plan(ctx, intent, input) {
    const { selection } = JSON.parse(intent.preview) as IntentPreview;
    await ensureCapacity(ctx.core, ctx.store, 'replay_executions');
    const requeue = storage(ctx).requeueWrite(
      filterOf(ctx, input.filter),
      { throughId: selection!.throughEventId, lastAttemptAtMost: Date.parse(selection!.asOf) },
      ctx.core.clock.now(),
    );
    return {
      writes: [{ ...requeue, mustChange: true }],
      meters: ['replay_executions'],
      refusals: {
        0: {
          category: 'target_state',
          code: 'nothing_to_replay',
          reason: 'Every event this preview matched was replayed, attempted again or lost its body since; nothing was queued.',
          recommendedAction: 'Read GET /agent/v1/events to see where they stand, and preview again if some still need a replay.',
        },
      },
      result: ([queued = 0]) => replayed(selection!.count, queued),
      after: () => ctx.core.repo.notify?.('due', ''),
    };
  },
};

/** A bulk replay's result: events queued, and previewed events left alone. */
function replayed(previewed: number, queued: number): IntentResult {
  // An event in flight at the preview whose attempt ended before it but was recorded after can join: never below 0.
  const skipped = Math.max(0, previewed - queued);
  return {
    summary: `${plural(queued, 'event')} queued for another handoff${skipped ? `; ${skipped} of the ${previewed} previewed left alone (replayed, attempted again or no longer retained since the preview)` : ''}.`,
    resourceId: null,
    queued,
    skipped,
  };
}
