/**
 * The action-intent lifecycle, once for every preview_or_execute operation:
 * preview (nothing changes; a single-use confirmation token, 15 min) -> execute (token checked, state moved
 * with compare-and-set so a token works once) -> executed | refused | failed | expired.
 * Each kind supplies only its preview and its execution.
 */
import type { IntentRow } from '../../db/types.ts';
import { AppError, type Refusal } from '../contract/errors.ts';
import { iso } from '../lib/clock.ts';
import { constantTimeEqual, sha256Hex } from '../lib/crypto.ts';
import { randomBase62 } from '../lib/ids.ts';
import type { OpContext } from './context.ts';

export const CONFIRMATION_TTL_MS = 15 * 60_000;

export interface IntentPreview {
  summary: string;
  changes: { field: string; from: unknown; to: unknown }[];
  sideEffects: string[];
  meterCost: { meter: string; units: number }[];
  warnings: string[];
}

export interface IntentResult {
  summary: string;
  resourceId: string | null;
  /** Only a secret-rotation execute carries one; it is never stored. */
  secret?: string;
}

export interface IntentKind<I> {
  kind: 'endpoint_edit' | 'endpoint_delete' | 'secret_rotation' | 'replay' | 'diagnostics_share' | 'support_request';
  /** Checks the target and builds the preview. Throws refusals. Changes nothing. */
  preview(ctx: OpContext, input: I, params: Record<string, string>): Promise<{ targetId: string | null; preview: IntentPreview }>;
  /** Performs the change, re-checking the target's state first. */
  execute(ctx: OpContext, intent: IntentRow, input: I): Promise<IntentResult>;
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
export function intentHandler<I>(operationId: string, def: IntentKind<I>) {
  return async (ctx: OpContext, { params, body }: { params?: Record<string, string>; body: Body<I> }) => {
    const p = params ?? {};
    if (body.mode === 'preview') return { intent: await preview(ctx, operationId, def, body.input, p) };
    if (body.mode === 'submit') {
      const previewed = await preview(ctx, operationId, def, body.input, p);
      return { intent: await execute(ctx, operationId, def, previewed.id, previewed.confirmation!.token, p) };
    }
    return { intent: await execute(ctx, operationId, def, body.intentId, body.confirmationToken, p) };
  };
}

async function preview<I>(ctx: OpContext, operationId: string, def: IntentKind<I>, input: I, params: Record<string, string>) {
  const { core } = ctx;
  const { targetId, preview } = await def.preview(ctx, input, params);
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
    input: JSON.stringify(input ?? {}),
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

async function execute<I>(ctx: OpContext, operationId: string, def: IntentKind<I>, intentId: string, token: string, params: Record<string, string>) {
  const { core } = ctx;
  const row = await core.repo.getIntent(ctx.store.id, intentId);
  const target = params.endpointId ?? params.eventId;
  if (!row || row.operationId !== operationId || (target !== undefined && row.targetId !== target)) {
    throw new AppError('not_found', 'No such intent for this operation and target.');
  }
  const now = core.clock.now();
  if (row.state !== 'previewed') {
    throw new AppError('conflict', `This intent is ${row.state}; a confirmation works once. Preview again.`, { state: row.state });
  }
  if (!row.confirmationHash || !constantTimeEqual(sha256Hex(token), row.confirmationHash)) {
    throw new AppError('conflict', 'The confirmation token does not match this intent.');
  }
  if ((row.confirmationExpiresAt ?? 0) <= now) {
    await core.repo.transitionIntent(row.id, 'previewed', { state: 'expired', updatedAt: now, confirmationHash: null });
    throw new AppError('conflict', 'The confirmation expired. Preview again.', { state: 'expired' });
  }
  if (!(await core.repo.transitionIntent(row.id, 'previewed', { state: 'executing', updatedAt: now, confirmationHash: null }))) {
    throw new AppError('conflict', 'This intent is already being executed.');
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
