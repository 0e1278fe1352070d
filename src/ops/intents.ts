/**
 * The action-intent lifecycle, once for every preview_or_execute operation:
 * preview (nothing changes; a single-use confirmation token, 15 min; the basis it was built on recorded) ->
 * execute (by the grant that previewed; token checked; claimed by compare-and-set so a token works once; the change
 * committed with the completion) -> executed | refused | expired. Each kind supplies only its preview and its plan.
 */
import { countUsage } from '../../db/areas/meters.ts';
import type { IntentStore, Repo, UsageStore, Write } from '../../db/repo.ts';
import type { IntentRow } from '../../db/types.ts';
import { AppError, inProgress, refuse, type Refusal } from '../contract/errors.ts';
import { limitOf, period, type Meter } from '../contract/plans.ts';
import type { BulkReplaySelection, INTENT_KINDS, IntentBody } from '../contract/schemas.ts';
import { iso } from '../lib/clock.ts';
import { crashPoint } from '../lib/crash-points.ts';
import { constantTimeEqual, sha256Hex } from '../lib/crypto.ts';
import { randomBase62 } from '../lib/ids.ts';
import { REDACTED_WARNING, redactInput } from '../lib/redact.ts';
import { holderOf, type OpContext } from './context.ts';
import { heldSecrets } from '../held-secrets.ts';
import { exhaustedNow } from './usage.ts';

/** What the lifecycle itself uses of storage: intents (and the batch an execute commits), meters, and this instance. */
type Journal = IntentStore & UsageStore & Pick<Repo, 'instance'>;

const CONFIRMATION_TTL_MS = 15 * 60_000;

export interface IntentPreview {
  summary: string;
  changes: { field: string; from: unknown; to: unknown }[];
  sideEffects: string[];
  meterCost: { meter: string; units: number }[];
  warnings: string[];
  /** Only a bulk replay's: the events matched, and the bound its execute keeps to. */
  selection?: BulkReplaySelection;
}

export interface IntentResult {
  summary: string;
  resourceId: string | null;
  /** Only a bulk replay's: events queued, and previewed events left alone. */
  queued?: number;
  skipped?: number;
}

/**
 * The change an execute makes, planned before anything is written: the lifecycle commits its writes, the meters and
 * the intent's completion in one transaction, so an intent still `executing` has changed nothing (a crash or a
 * storage failure mid-execute leaves nothing half done) and one that is `executed` has made its change once.
 */
export interface IntentPlan {
  /** Compare-and-set writes (built by db/areas/: endpoints, events, records), each from the state the preview showed. */
  writes: Write[];
  /** Meters counted with the change, besides executed_actions, which every execute counts. */
  meters?: Meter[];
  /** The refusal when the write at this index finds its state gone; else stale_preview. */
  refusals?: Record<number, Refusal>;
  /** The result, from the rows each write changed. */
  result(changes: number[]): IntentResult;
  /** A secret the execute shows once (a rotation's): never stored, not even in the result. */
  secret?: string;
  /** Told once the change is committed (the inbound path's cache, peers). */
  after?(): unknown;
}

/** `R`: the storage areas the kind's preview and plan use; the lifecycle adds IntentStore. `B`: what its preview was built on. */
export interface IntentKind<I, R = unknown, B = undefined> {
  kind: (typeof INTENT_KINDS)[number];
  /** Input fields that are free text (notes, summaries, reasons): email addresses go too, not only secrets. */
  freeText?: readonly string[];
  /**
   * Checks the target and builds the preview, with the basis it was built on (the config version, the secret,
   * the event's state it showed): recorded with the intent. Throws refusals. Changes nothing.
   */
  preview(ctx: OpContext<R>, input: I, params: Record<string, string>): Promise<{ targetId: string | null; preview: IntentPreview; basis?: B }>;
  /**
   * Re-checks the target against the basis (null for an intent previewed before bases were recorded), refusing
   * `stale_preview` (see stalePreview) when it moved since, and plans the change. Writes nothing.
   */
  plan(ctx: OpContext<R>, intent: IntentRow, input: I, basis: B | null): Promise<IntentPlan>;
  /** Said with the outcome of an execute whose answer was lost (what it showed once is gone). */
  recoveredNote?: string;
}

/** 409 `stale_preview`: the target changed since the preview, which showed `what`. */
export function stalePreview(what: string): AppError {
  return conflict(
    'stale_preview',
    `The target changed since this preview: ${what}. Executing it would make a change nobody previewed.`,
    undefined,
    'Read the target again, then preview again and execute the new preview with its confirmation token.',
  );
}

function intentView(row: IntentRow, extra: { token?: string; secret?: string } = {}) {
  const result = row.result ? (JSON.parse(row.result) as IntentResult) : null;
  return {
    id: row.id,
    kind: row.kind as IntentKind<unknown>['kind'],
    state: row.state as 'previewed',
    targetId: row.targetId,
    preview: JSON.parse(row.preview) as IntentPreview,
    confirmation: extra.token && row.confirmationExpiresAt != null ? { token: extra.token, expiresAt: iso(row.confirmationExpiresAt) } : null,
    result: result ? { ...result, ...(extra.secret ? { secret: extra.secret } : {}) } : null,
    refusal: row.refusal ? (JSON.parse(row.refusal) as Refusal) : null,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** The handler of an intent operation: dispatches preview / execute / submit. */
export function intentHandler<I, R, B>(operationId: string, def: IntentKind<I, R, B>) {
  return async (ctx: OpContext<R & Journal>, { params, body }: { params?: Record<string, string>; body: IntentBody<I> }) => {
    const p = params ?? {};
    if (body.mode === 'preview') return { intent: await preview(ctx, operationId, def, body.input, p) };
    if (body.mode === 'submit') {
      const previewed = await preview(ctx, operationId, def, body.input, p);
      return { intent: await execute(ctx, operationId, def, previewed.id, previewed.confirmation!.token, p) };
    }
    return { intent: await execute(ctx, operationId, def, body.intentId, body.confirmationToken, p) };
  };
}

async function preview<I, R, B>(ctx: OpContext<R & Journal>, operationId: string, def: IntentKind<I, R, B>, raw: I, params: Record<string, string>) {
  const { core } = ctx;
  // The input as the intent keeps it (src/lib/redact.ts): preview, the stored row and execute all see this one.
  const { input, redacted } = redactInput((raw ?? {}) as I, def.freeText, heldSecrets(core, [ctx.store]));
  const { targetId, preview, basis } = await def.preview(ctx, input, params);
  if (redacted) preview.warnings.unshift(REDACTED_WARNING);
  const now = core.clock.now();
  const token = `cfm_${randomBase62(24)}`;
  const row: IntentRow = {
    id: core.ids.next('int'),
    storeId: ctx.store.id,
    grantId: holderOf(ctx),
    kind: def.kind,
    operationId,
    targetId,
    state: 'previewed',
    input: JSON.stringify(input),
    preview: JSON.stringify(preview),
    confirmationHash: sha256Hex(token),
    confirmationExpiresAt: now + CONFIRMATION_TTL_MS,
    result: null,
    refusal: null,
    basis: basis === undefined ? null : JSON.stringify(basis),
    executor: null,
    executeKey: null,
    createdAt: now,
    updatedAt: now,
  };
  await core.repo.insertIntent(row);
  return intentView(row, { token });
}

/** 409 with a refusal naming which step of the lifecycle stood in the way. */
function conflict(code: string, reason: string, details?: unknown, recommendedAction = PREVIEW_AGAIN): AppError {
  return new AppError('conflict', reason, details, { category: 'target_state', code, reason, recommendedAction });
}

const PREVIEW_AGAIN = 'Preview the intent again and execute the new one with its confirmation token (it works once, for 15 minutes).';

/** Executions in flight in this process, by intent id: a claim of this instance's own that is no orphan. */
const executing = new Set<string>();

/**
 * Executes a previewed intent once. Only the grant that saw the preview may execute it. The same execute retried
 * with its Idempotency-Key after its answer was lost gets the outcome it had; an execution whose instance died is
 * taken over at once (it changed nothing: see IntentPlan). A refusal never advises a step that would repeat a
 * change already made.
 */
async function execute<I, R, B>(
  ctx: OpContext<R & Journal>,
  operationId: string,
  def: IntentKind<I, R, B>,
  intentId: string,
  token: string,
  params: Record<string, string>,
) {
  const { core } = ctx;
  const { repo } = core;
  const row = await repo.getIntent(ctx.store.id, intentId);
  const target = params.endpointId ?? params.eventId;
  if (!row || row.operationId !== operationId || (target !== undefined && row.targetId !== target)) {
    throw new AppError('not_found', 'No such intent for this operation and target.');
  }
  if (row.grantId !== holderOf(ctx)) {
    throw refuse({
      category: 'scope',
      code: 'intent_of_another_grant',
      reason: 'This intent was previewed by another grant or person; only the one who was shown a preview may confirm it.',
      recommendedAction: 'Preview the change with this grant and execute that preview with its own confirmation token.',
    });
  }
  const key = ctx.idempotencyKey ?? null;
  if (key !== null && row.executeKey === key && row.state === 'executed') return recovered(row, def.recoveredNote);
  const me = await repo.instance.id();
  let from: { state: 'previewed' } | { state: 'executing'; executor: string } = { state: 'previewed' };
  if (row.state === 'executing') {
    const mine = row.executor === me;
    if (row.executor !== null && (mine ? executing.has(row.id) : await repo.instance.alive(row.executor))) {
      throw inProgress('intent_executing', 'This intent is being executed.', { state: row.state });
    }
    // Its executor is gone: it committed nothing (an executed change completes the intent in the same transaction).
    from = { state: 'executing', executor: row.executor ?? '' };
  } else if (row.state !== 'previewed') {
    throw notPreviewed(row);
  }
  if (!row.confirmationHash || !constantTimeEqual(sha256Hex(token), row.confirmationHash)) {
    throw conflict('confirmation_mismatch', 'The confirmation token does not match this intent.');
  }
  const now = core.clock.now();
  if (from.state === 'previewed' && (row.confirmationExpiresAt ?? 0) <= now) {
    await repo.transitionIntent(row.id, 'previewed', { state: 'expired', updatedAt: now, confirmationHash: null });
    throw conflict('confirmation_expired', 'The confirmation expired. Preview again.', { state: 'expired' });
  }
  if (!(await repo.claimIntent(row.id, from, { executor: me, key, at: now }))) {
    throw inProgress('intent_executing', 'This intent is being executed.');
  }
  executing.add(row.id);
  crashPoint('intent-claimed');
  let planned: IntentPlan | null = null;
  try {
    const input = JSON.parse(row.input) as I;
    const plan = (planned = await def.plan(ctx, row, input, row.basis === null ? null : (JSON.parse(row.basis) as B)));
    crashPoint('planned');
    const meters = [...(plan.meters ?? []), 'executed_actions' as const];
    const start = period(ctx.store, now).start;
    // Each meter counted only below its cap, in the change's transaction: a full meter rolls the change back.
    const writes = [...plan.writes];
    const meterAt: Meter[] = [];
    for (const m of meters) {
      for (const w of countUsage(ctx.store.id, m, start, limitOf(ctx.store, m))) meterAt[writes.push(w) - 1] = m;
    }
    const at = core.clock.now();
    const out = await repo.executeIntent(row.id, me, writes, (changes) => JSON.stringify(plan.result(changes)), at);
    if (!out.ok) {
      if (out.failed === writes.length) {
        throw inProgress('intent_executing', 'Another instance took this execution over.');
      }
      const full = meterAt[out.failed];
      if (full) throw await exhaustedNow(ctx.core, ctx.store, full);
      throw plan.refusals?.[out.failed] ? refuse(plan.refusals[out.failed]!) : stalePreview('its state is no longer the one previewed');
    }
    crashPoint('committed');
    await Promise.resolve(plan.after?.()).catch(() => {});
    const result = plan.result(out.changes);
    return intentView(
      { ...row, state: 'executed', result: JSON.stringify(result), confirmationHash: null, executor: me, executeKey: key, updatedAt: at },
      { secret: plan.secret },
    );
  } catch (err) {
    const refusal = err instanceof AppError ? err.refusal : undefined;
    if (refusal && refusal.code !== 'intent_executing') {
      await repo.endIntent(row.id, me, 'refused', JSON.stringify(refusal), core.clock.now());
      throw err;
    }
    // A storage failure: whether the change committed is read back; when it did not, the confirmation works again.
    const after = await repo.getIntent(ctx.store.id, row.id).catch(() => null);
    if (after?.state === 'executed' && after.executor === me) return intentView(after, { secret: planned?.secret });
    if (after?.state === 'executing') await repo.reopenIntent(row.id, me, core.clock.now()).catch(() => {});
    throw err;
  } finally {
    executing.delete(row.id);
  }
}

/** The outcome of an execute retried with its Idempotency-Key after its answer was lost. */
function recovered(row: IntentRow, note: string | undefined) {
  const view = intentView(row);
  if (view.result && note) view.result.summary += ` ${note}`;
  return view;
}

/** Why an intent that is no longer previewed cannot be executed, and what to do that repeats nothing. */
function notPreviewed(row: IntentRow): AppError {
  if (row.state === 'executed') {
    const result = row.result ? (JSON.parse(row.result) as IntentResult) : null;
    return conflict(
      'intent_not_previewed',
      `This intent was executed at ${iso(row.updatedAt)}${result ? `: ${result.summary}` : ''}. A confirmation works once.`,
      { state: row.state, result },
      'Nothing to do: the change is made. Read the target to see it; preview again only if the change should be made a second time.',
    );
  }
  return conflict('intent_not_previewed', `This intent is ${row.state}; nothing was changed by it. A confirmation works once.`, { state: row.state });
}
