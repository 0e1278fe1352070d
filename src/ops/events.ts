/** Event reads: receipts, attempts, where handoff stopped and recovery options. Never a raw body. */
import type { ConfirmationStore } from '../../db/areas/confirmations.ts';
import type { PlatformLinkStore } from '../../db/areas/platform-links.ts';
import type { EventReads } from '../../db/repo.ts';
import type { AttemptRow, EventRow } from '../../db/types.ts';
import { AppError } from '../contract/errors.ts';
import type { DestinationName } from '../contract/platform.ts';
import type { OperationInput } from '../contract/operations.ts';
import { REPLAYABLE_OUTCOMES, type EventOutcome, type EventSummary } from '../contract/schemas.ts';
import { iso, isoOrNull } from '../lib/clock.ts';
import { idFloor } from '../lib/ids.ts';
import { eventConfirmation } from './confirmations.ts';
import type { OpContext } from './context.ts';
import { handoffState } from './platform-link.ts';

const REPLAYABLE: ReadonlySet<string> = new Set(REPLAYABLE_OUTCOMES);

const MEANING: Record<EventOutcome, string> = {
  accepted: 'Authenticated and durably recorded; waiting for handoff.',
  queued: 'Recorded; handoff is in progress or scheduled for a retry.',
  delivered:
    "Handed to the store's workflow platform. This does not mean any workflow branch, app call, fulfilment change or email completed; a workflow ending with the Flow action Confirm hookrelay event confirms it (see confirmation).",
  no_workflow: 'The platform reports no enabled workflow for this trigger. Enable one, then replay.',
  failed: 'Handoff stopped; see the code and attempts. Fix the cause, then replay.',
  duplicate_suppressed: 'The same external_event_id arrived on this endpoint within 24 hours; the first receipt was handed off, this one was not.',
  rejected: 'Authenticated but not deliverable (see code); never handed off. Fix the sender and send a fresh event.',
  held: 'Over plan capacity: stored and handed off when capacity returns. Never dropped.',
  test: 'A synthetic test event: authentication passed. Not handed off.',
};

const STOPPED_AT: Record<EventOutcome, string> = {
  accepted: 'queue',
  queued: 'queue',
  delivered: 'none',
  no_workflow: 'platform',
  failed: 'platform',
  duplicate_suppressed: 'deduplication',
  rejected: 'validation',
  held: 'capacity',
  test: 'none',
};

function bodyRetention(e: EventRow, now: number, retentionMs: number): EventSummary['bodyRetention'] {
  if (e.bodyRetention === 'retained' && e.receivedAt + retentionMs <= now) return 'expired';
  return e.bodyRetention as EventSummary['bodyRetention'];
}

export function eventSummary(e: EventRow, now: number, retentionMs: number): EventSummary {
  const retention = bodyRetention(e, now, retentionMs);
  return {
    id: e.id,
    receiptId: e.receiptId,
    endpointId: e.endpointId,
    outcome: e.outcome as EventOutcome,
    code: e.code,
    externalEventId: e.externalEventId,
    eventType: e.eventType,
    isTest: e.isTest,
    receivedAt: iso(e.receivedAt),
    lastAttemptAt: isoOrNull(e.lastAttemptAt),
    attempts: e.attempts,
    replayable: retention === 'retained' && REPLAYABLE.has(e.outcome),
    bodyRetention: retention,
  };
}

function attemptView(a: AttemptRow) {
  return {
    number: a.number,
    destination: a.destination as DestinationName,
    startedAt: iso(a.startedAt),
    finishedAt: a.outcome === 'sending' ? null : iso(a.finishedAt),
    outcome: a.outcome as 'sending' | 'delivered' | 'retry' | 'failed' | 'no_workflow' | 'unknown',
    httpStatus: a.httpStatus,
    code: a.code,
    message: a.message,
    retryAt: isoOrNull(a.retryAt),
    fields: a.fieldCounts ? (JSON.parse(a.fieldCounts) as { found: number; missing: string[]; wrongType: string[]; bodyCut: string | null }) : null,
  };
}

function recoveryOptions(summary: EventSummary) {
  const replayReason = summary.replayable
    ? 'Preview a replay; it hands the retained event off again as a new attempt.'
    : summary.bodyRetention !== 'retained'
      ? 'The body is no longer retained, so this event cannot be replayed.'
      : `Events that ended ${summary.outcome} cannot be replayed.`;
  const options: { action: string; operationId: string | null; available: boolean; reason: string }[] = [
    { action: 'replay', operationId: 'createReplayIntent', available: summary.replayable, reason: replayReason },
    { action: 'share_diagnostics', operationId: 'createDiagnosticsShareIntent', available: true, reason: 'Share a redacted diagnostics package with support.' },
    { action: 'request_support', operationId: 'createSupportRequestIntent', available: true, reason: 'Ask for help with this event.' },
  ];
  if (summary.outcome === 'rejected') {
    options.unshift({ action: 'fix_sender', operationId: null, available: true, reason: 'Correct the sender (see code) and send a fresh event.' });
  }
  return options;
}

const CURSOR = /^evt_[0-9a-z]+$/;

/**
 * `cur_` and the event id's lowercase part: nothing the redactor takes for a secret (a mixed-case run, as the base64
 * of earlier cursors was, is redacted from the CLI's output, and a redacted cursor pages nowhere).
 */
function encodeCursor(id: string): string {
  return `cur_${id.slice('evt_'.length)}`;
}

function decodeCursor(cursor: string): string {
  // Cursors issued before `cur_` were the id in base64url; they still page.
  const id = cursor.startsWith('cur_') ? `evt_${cursor.slice(4)}` : Buffer.from(cursor, 'base64url').toString('utf8');
  if (!CURSOR.test(id))
    throw new AppError('invalid_input', 'The cursor is not one this API issued.', [{ path: 'cursor', code: 'invalid', message: 'Unknown cursor' }]);
  return id;
}

export async function listEvents(ctx: OpContext<EventReads>, { query }: OperationInput<'listEvents'>) {
  const { core, store } = ctx;
  const since = query.since ? Date.parse(query.since) : undefined;
  const rows = await core.repo.listEvents({
    storeId: store.id,
    endpointId: query.endpointId,
    externalEventId: query.externalEventId,
    triggerVariant: query.triggerVariant,
    outcome: query.outcome,
    since,
    sinceId: since === undefined ? undefined : idFloor('evt', since),
    until: query.until ? Date.parse(query.until) : undefined,
    beforeId: query.cursor ? decodeCursor(query.cursor) : undefined,
    unconfirmedBefore: query.unconfirmedFor === undefined ? undefined : core.clock.now() - query.unconfirmedFor * 60_000,
    limit: query.limit + 1,
  });
  const page = rows.slice(0, query.limit);
  const now = core.clock.now();
  return {
    events: page.map((e) => eventSummary(e, now, core.config.bodyRetentionMs)),
    nextCursor: rows.length > query.limit ? encodeCursor(page[page.length - 1]!.id) : null,
  };
}

export async function getEventDetail(
  ctx: OpContext<EventReads & ConfirmationStore & { links: PlatformLinkStore }>,
  { params }: OperationInput<'getEventDetail'>,
) {
  const { core, store } = ctx;
  const e = await core.repo.getEvent(store.id, params.eventId);
  if (!e) throw new AppError('not_found', 'No such event.');
  const now = core.clock.now();
  const summary = eventSummary(e, now, core.config.bodyRetentionMs);
  const attempts = await core.repo.listAttempts(e.id);
  // A worker holds it (a claim, or its own commit's lease): the stored time is the lease end, not an attempt.
  const held = e.leaseUntil != null && e.leaseUntil > now;
  // A pending event of a paused store waits on the pause, not on the queue.
  const pause =
    summary.outcome === 'accepted' || summary.outcome === 'queued'
      ? handoffState(await core.repo.links.get(store.id), { publicUrl: core.config.publicUrl, shopDomain: store.shopDomain })
      : null;
  const paused = pause?.state === 'paused';
  return {
    event: {
      ...summary,
      configVersion: e.configVersion,
      duplicateOf: e.duplicateOf,
      bodyBytes: e.bodyBytes,
      deliveredAt: isoOrNull(e.deliveredAt),
      nextAttemptAt: held ? null : isoOrNull(e.nextAttemptAt),
      handoffStoppedAt: paused ? ('paused' as const) : (STOPPED_AT[summary.outcome] as 'none'),
      handoffPause: paused ? pause : null,
      meaning: paused
        ? `${MEANING[summary.outcome]} The store's handoff is paused (${pause.code}): it waits, and is handed off once a probe succeeds.`
        : MEANING[summary.outcome],
      attemptsDetail: attempts.map(attemptView),
      recoveryOptions: recoveryOptions(summary),
      confirmation: await eventConfirmation(core.repo, store.id, e.id),
    },
  };
}

export async function getLatestEventResult(ctx: OpContext<EventReads & ConfirmationStore>, { query }: OperationInput<'getLatestEventResult'>) {
  const { core, store } = ctx;
  let e: EventRow | null;
  if (query.eventId) {
    e = await core.repo.getEvent(store.id, query.eventId);
    if (e && query.endpointId && e.endpointId !== query.endpointId) e = null;
  } else {
    e = await core.repo.latestEvent(store.id, query.endpointId);
  }
  if (!e) return { result: null };
  const event = eventSummary(e, core.clock.now(), core.config.bodyRetentionMs);
  const confirmation = await eventConfirmation(core.repo, store.id, e.id);
  return { result: { event, meaning: MEANING[event.outcome], downstreamConfirmed: confirmation?.outcome === 'ok', confirmation } };
}
