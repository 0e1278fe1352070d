/**
 * The error answer of a call that threw: an AppError as it is, a storage fault as 503 `storage_unavailable`,
 * anything else as 500 `internal_error` with a support code logged beside the request id (never the error's values).
 * Audited like every call.
 */
import { AppError } from '../../contract/errors.ts';
import type { Operation } from '../../contract/operations.ts';
import type { Core } from '../../core.ts';
import type { Surface } from '../../mcp/surface.ts';
import type { OpContext } from '../../ops/context.ts';
import { errorLine } from '../../lib/log.ts';
import { storageFault, storageUnavailable, type StorageHealth } from '../../relay/storage-health.ts';
import { errorAnswer, newSupportCode, type Answer } from '../http.ts';
import { audit } from './audit.ts';

/** Throws `err` again when the caller has hung up (`aborted`): nobody to answer, and not our failure. */
export async function failure(
  deps: { core: Core; storage?: StorageHealth },
  op: Operation,
  ctx: OpContext | null,
  call: { params: Record<string, string>; requestId: string; surface: Surface; aborted?: () => boolean },
  err: unknown,
): Promise<Answer> {
  let appErr: AppError;
  let supportCode: string | undefined;
  const fault = err instanceof AppError ? null : (deps.storage?.failed(err) ?? storageFault(err));
  if (err instanceof AppError) appErr = err;
  else if (call.aborted?.()) throw err;
  else if (fault) appErr = storageUnavailable(fault);
  else {
    supportCode = newSupportCode();
    deps.core.log.error(`internal error in ${op.operationId} request=${call.requestId} support=${supportCode}: ${errorLine(err)}`);
    appErr = new AppError('internal_error', 'Something went wrong on our side. Quote the support code.');
  }
  await audit(deps.core, op, ctx, call.params, appErr.status, null, appErr, call.requestId, false, call.surface).catch(() => {});
  return errorAnswer(ctx, appErr, supportCode, call.requestId);
}
