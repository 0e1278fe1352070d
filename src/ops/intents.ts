/**
 * The action-intent lifecycle, once for every preview_or_execute operation:
 * preview (nothing changes; a single-use confirmation token, 15 min) -> execute (token checked, state moved
 * with compare-and-set so a token works once) -> executed | refused | failed | expired.
 * Each kind supplies only its preview and its execution.
 */
import type { IntentStore } from '../../db/repo.ts';
import type { IntentRow } from '../../db/types.ts';
import { AppError, type Refusal } from '../contract/errors.ts';
import type { BulkReplaySelection, INTENT_KINDS } from '../contract/schemas.ts';
import { iso } from '../lib/clock.ts';
import { constantTimeEqual, sha256Hex } from '../lib/crypto.ts';
import { randomBase62 } from '../lib/ids.ts';
import { redactDocument, redactSecretsIn, redactText } from '../lib/redact.ts';
import type { OpContext } from './context.ts';

export const CONFIRMATION_TTL_MS = 15 * 60_000;

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
  /** Only a secret-rotation execute carries one; it is never stored. */
  secret?: string;
  /** Only a bulk replay's: events queued, and previewed events left alone. */
  queued?: number;
  skipped?: number;
}

/** `R`: the storage areas the kind's preview and execute use; the lifecycle adds IntentStore. */
export interface IntentKind<I, R = unknown> {
  kind: (typeof INTENT_KINDS)[number];
  /** Input fields that are free text (notes, summaries, reasons): email addresses go too, not only secrets. */
  freeText?: readonly string[];
  /** Checks the target and builds the preview. Throws refusals. Changes nothing. */
  preview(ctx: OpContext<R>, input: I, params: Record<string, string>): Promise<{ targetId: string | null; preview: IntentPreview }>;
  /** Performs the change, re-checking the target's state first. */
  execute(ctx: OpContext<R>, intent: IntentRow, input: I): Promise<IntentResult>;
}

type Body<I> =
  | { mode: 'preview'; input: I }
  | { mode: 'execute'; intentId: string; confirmationToken: string }
  | { mode: 'submit'; input: I; consent: true };

export function intentView(row: IntentRow, extra: { token?: string; secret?: string } = {}) {
  const result = row.result ? (JSON.parse(row.result) as IntentResult) : null;
  return {
    id: row.id,
    kind: row.kind as IntentKind<unknown>['kind'],
    state: row.state as 'previewed',
    targetId: row.targetId,
    preview: JSON.parse(row.preview) as IntentPreview,
    confirmation:
      extra.token && row.confirmationExpiresAt != null ? { token: extra.token, expiresAt: iso(row.confirmationExpiresAt) } : null,
    result: result ? { ...result, ...(extra.secret ? { secret: extra.secret } : {}) } : null,
    refusal: row.refusal ? (JSON.parse(row.refusal) as Refusal) : null,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** The handler of an intent operation: dispatches preview / execute / submit. */
export function intentHandler<I, R>(operationId: string, def: IntentKind<I, R>) {
  return async (ctx: OpContext<R & IntentStore>, { params, body }: { params?: Record<string, string>; body: Body<I> }) => {
    const p = params ?? {};
    if (body.mode === 'preview') return { intent: await preview(ctx, operationId, def, body.input, p) };
    if (body.mode === 'submit') {
      const previewed = await preview(ctx, operationId, def, body.input, p);
      return { intent: await execute(ctx, operationId, def, previewed.id, previewed.confirmation!.token, p) };
    }
    return { intent: await execute(ctx, operationId, def, body.intentId, body.confirmationToken, p) };
  };
}

/**
 * The input as the intent keeps it: no secret shape in any string, and free-text fields without email
 * addresses either. Preview, the stored row and execute all see this one, so what is previewed is what runs.
 */
function redactInput<I>(def: IntentKind<I>, input: I): I {
  const fields = Object.fromEntries((def.freeText ?? []).map((f) => [f, redactText]));
  return redactDocument(input ?? {}, { text: redactSecretsIn, secretField: redactSecretsIn, fields }) as I;
}

const REDACTED_WARNING = 'Parts of the input looked private (a secret, token, credential or email address) and were redacted; only the redacted text is kept or shared.';

async function preview<I, R>(ctx: OpContext<R & IntentStore>, operationId: string, def: IntentKind<I, R>, raw: I, params: Record<string, string>) {
  const { core } = ctx;
  const input = redactInput(def, raw);
  const { targetId, preview } = await def.preview(ctx, input, params);
  if (JSON.stringify(input) !== JSON.stringify(raw ?? {})) preview.warnings.unshift(REDACTED_WARNING);
  const now = core.clock.now();
  const token = `cfm_${randomBase62(24)}`;
  const row: IntentRow = {
    id: core.ids.next('int'),
    storeId: ctx.store.id,
    grantId: ctx.grant.id,
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

async function execute<I, R>(ctx: OpContext<R & IntentStore>, operationId: string, def: IntentKind<I, R>, intentId: string, token: string, params: Record<string, string>) {
  const { core } = ctx;
  const row = await core.repo.getIntent(ctx.store.id, intentId);
  const target = params.endpointId ?? params.eventId;
  if (!row || row.operationId !== operationId || (target !== undefined && row.targetId !== target)) {
    throw new AppError('not_found', 'No such intent for this operation and target.');
  }
  const now = core.clock.now();
  if (row.state !== 'previewed') {
    throw conflict('intent_not_previewed', `This intent is ${row.state}; a confirmation works once. Preview again.`, { state: row.state });
  }
  if (!row.confirmationHash || !constantTimeEqual(sha256Hex(token), row.confirmationHash)) {
    throw conflict('confirmation_mismatch', 'The confirmation token does not match this intent.');
  }
  if ((row.confirmationExpiresAt ?? 0) <= now) {
    await core.repo.transitionIntent(row.id, 'previewed', { state: 'expired', updatedAt: now, confirmationHash: null });
    throw conflict('confirmation_expired', 'The confirmation expired. Preview again.', { state: 'expired' });
  }
  if (!(await core.repo.transitionIntent(row.id, 'previewed', { state: 'executing', updatedAt: now, confirmationHash: null }))) {
    throw conflict('intent_executing', 'This intent is already being executed.', undefined, 'Wait for that execution; retry with its Idempotency-Key to get its result.');
  }
  const input = JSON.parse(row.input) as I;
  try {
    const result = await def.execute(ctx, row, input);
    const { secret, ...stored } = result;
    const done: Partial<IntentRow> = { state: 'executed', result: JSON.stringify(stored), updatedAt: core.clock.now() };
    await core.repo.transitionIntent(row.id, 'executing', done);
    return intentView({ ...row, ...done } as IntentRow, { secret });
  } catch (err) {
    const refusal = err instanceof AppError ? err.refusal : undefined;
    const state = refusal ? 'refused' : 'failed';
    await core.repo.transitionIntent(row.id, 'executing', {
      state,
      refusal: refusal ? JSON.stringify(refusal) : null,
      updatedAt: core.clock.now(),
    });
    throw err;
  }
}
