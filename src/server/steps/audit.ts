/**
 * The audit step: one row per call (who, what, which target, the outcome and any refusal; never inputs or
 * secrets), and one summary row for a window's refusals that had no row of their own.
 */
import type { AuditLog, MeteredAudit } from '../../../db/repo.ts';
import type { AuditRow } from '../../../db/types.ts';
import { defaultRefusal, type AppError, type ErrorCode } from '../../contract/errors.ts';
import type { Operation } from '../../contract/operations.ts';
import type { Meter } from '../../contract/plans.ts';
import type { CoreWith } from '../../core.ts';
import { metrics } from '../../lib/instruments.ts';
import type { Surface } from '../../mcp/surface.ts';
import type { OpContext } from '../../ops/context.ts';
import { usageUnits } from '../../ops/usage.ts';

/**
 * One audit row per call, counted on the agent-call series too. The MCP transport writes its own calls (session
 * start, refused connects) through this as well. An answer holding an intent names it, its state and its target.
 * `meter`: the plan meter the call counts (a handled read or preview), one unit written with the row in one
 * transaction, so a call is metered exactly when it is audited as answered.
 */
export async function audit(
  core: CoreWith<AuditLog & MeteredAudit>,
  op: Pick<Operation, 'operationId'>,
  ctx: Pick<OpContext, 'store' | 'grant' | 'scopes' | 'actor'> | null,
  params: Record<string, string>,
  status: number,
  data: unknown,
  err: AppError | null,
  requestId: string,
  replayed: boolean,
  surface: Surface,
  meter: Meter | null = null,
): Promise<void> {
  metrics.agentCall(ctx?.store.id ?? null, op.operationId, status);
  const intent = (data as { intent?: { id: string; state: string; targetId: string | null } } | null)?.intent;
  const row: AuditRow = {
    id: core.ids.next('aud'),
    at: core.clock.now(),
    storeId: ctx?.store.id ?? null,
    grantId: ctx?.grant?.id ?? null,
    actorKind: ctx ? ctx.actor.kind : 'anonymous',
    actorLabel: ctx?.actor.label ?? 'unauthenticated',
    operationId: op.operationId,
    scopes: JSON.stringify(ctx?.scopes ?? []),
    targetId: params.endpointId ?? params.eventId ?? intent?.targetId ?? null,
    intentId: intent?.id ?? null,
    transition: intent ? (replayed ? `${intent.state} (idempotent replay)` : intent.state) : null,
    outcome: err ? (err.refusal ? 'refused' : 'error') : 'ok',
    status,
    errorCode: err?.code ?? null,
    refusalCategory: err?.refusal?.category ?? null,
    refusalCode: err?.refusal?.code ?? null,
    requestId,
    surface,
  };
  if (meter && ctx) await core.repo.insertAuditMetered(row, usageUnits(core, ctx.store, meter));
  else await core.repo.insertAudit(row);
}

/**
 * One audit row standing for a window's refusals that had no row of their own (failed authentications, 429s): the
 * count is in `transition`.
 */
export async function auditSummary(
  core: CoreWith<AuditLog>,
  f: {
    storeId: string | null;
    grantId: string | null;
    actorKind: 'agent' | 'human' | 'anonymous';
    actorLabel: string;
    operationId: string;
    lastAt: number;
    status: number;
    errorCode: ErrorCode;
    transition: string;
  },
): Promise<void> {
  const refusal = defaultRefusal(f.errorCode, '');
  await core.repo.insertAudit({
    id: core.ids.next('aud'),
    at: f.lastAt,
    storeId: f.storeId,
    grantId: f.grantId,
    actorKind: f.actorKind,
    actorLabel: f.actorLabel,
    operationId: f.operationId,
    scopes: '[]',
    targetId: null,
    intentId: null,
    transition: f.transition,
    outcome: refusal ? 'refused' : 'error',
    status: f.status,
    errorCode: f.errorCode,
    refusalCategory: refusal?.category ?? null,
    refusalCode: refusal?.code ?? null,
    requestId: null,
    surface: null,
  });
}
