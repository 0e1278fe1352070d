/** The store's audit trail, as its own read (listAuditEntries): who did what, humans and agents, newest first. */
import type { AuditReads } from '../../db/repo.ts';
import type { AuditRow } from '../../db/types.ts';
import { AppError } from '../contract/errors.ts';
import type { OperationInput } from '../contract/operations.ts';
import { iso } from '../lib/clock.ts';
import type { OpContext } from './context.ts';

/** `cur_`, the row's time in base 36 and its id's lowercase part: nothing the redactor takes for a secret. */
const encodeCursor = (r: AuditRow) => `cur_${r.at.toString(36)}_${r.id.slice('aud_'.length)}`;

function decodeCursor(cursor: string): { at: number; id: string } {
  const m = /^cur_([0-9a-z]{1,12})_([0-9a-z]{1,60})$/.exec(cursor);
  if (!m) throw new AppError('invalid_input', 'The cursor is not one this API issued.', [{ path: 'cursor', code: 'invalid', message: 'Unknown cursor' }]);
  return { at: Number.parseInt(m[1]!, 36), id: `aud_${m[2]}` };
}

export async function listAuditEntries(ctx: OpContext<AuditReads>, { query }: OperationInput<'listAuditEntries'>) {
  const rows = await ctx.core.repo.pageAudit({
    storeId: ctx.store.id,
    actorKind: query.actorKind,
    operationId: query.operationId,
    grantId: query.grantId,
    since: query.since ? Date.parse(query.since) : undefined,
    until: query.until ? Date.parse(query.until) : undefined,
    before: query.cursor ? decodeCursor(query.cursor) : undefined,
    limit: query.limit + 1,
  });
  const page = rows.slice(0, query.limit);
  return {
    entries: page.map((r) => ({
      id: r.id,
      at: iso(r.at),
      actorKind: r.actorKind as 'human' | 'agent' | 'anonymous',
      actorLabel: r.actorLabel,
      grantId: r.grantId,
      operationId: r.operationId,
      targetId: r.targetId,
      intentId: r.intentId,
      transition: r.transition,
      outcome: r.outcome,
      status: r.status,
      errorCode: r.errorCode,
      refusalCategory: r.refusalCategory,
      refusalCode: r.refusalCode,
      requestId: r.requestId,
      surface: r.surface,
    })),
    nextCursor: rows.length > query.limit ? encodeCursor(page[page.length - 1]!) : null,
  };
}
