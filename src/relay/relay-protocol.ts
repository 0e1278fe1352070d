/** The messages between `serve`'s request thread and its relay thread (relay-host.ts ↔ relay-thread.ts). */
import type { PendingAuthFailure } from '../../db/repo.ts';
import type { CommittedReceipt, PendingReceipt } from '../../db/types.ts';
import type { Config } from '../core.ts';

/** Config without its functions (`env` reads the shared process.env in the thread). */
export type ThreadConfig = Omit<Config, 'env'>;

export type ToThread =
  | { t: 'init'; sqlitePath: string; synchronous: 'FULL' | 'NORMAL'; config: ThreadConfig; worker: boolean }
  | { t: 'commit'; id: number; receipts: PendingReceipt[]; failures: PendingAuthFailure[] }
  | { t: 'wake' }
  | { t: 'endpoint'; id: string }
  | { t: 'stop' };

/** An error as it crosses the thread boundary: its driver code (see storageFault), never more than its name. */
export interface ThreadError {
  name: string;
  code: string | null;
  message: string;
}

export type FromThread =
  | { t: 'ready' }
  | { t: 'failed'; error: ThreadError }
  | { t: 'committed'; id: number; committed: CommittedReceipt[] }
  | { t: 'refused'; id: number; error: ThreadError }
  | { t: 'log'; lines: [level: 'info' | 'warn' | 'error', message: string][] }
  | { t: 'handoffs'; counts: [storeId: string, result: string, n: number][] }
  | { t: 'stopped' };

/** The first driver code along the `cause` chain (drizzle wraps the driver's error), for storageFault on the other side. */
export function toThreadError(err: unknown): ThreadError {
  let code: string | null = null;
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5 && !code; e = (e as { cause?: unknown }).cause, depth++) {
    const c = (e as { code?: unknown }).code;
    if (typeof c === 'string') code = c;
  }
  const name = err instanceof Error ? err.name : 'Error';
  return { name, code, message: err instanceof Error ? err.message : String(err) };
}

/** The error again, on the receiving side: storageFault reads its `code` as it would the driver's. */
export function fromThreadError(e: ThreadError): Error & { code?: string } {
  const err = new Error(e.message) as Error & { code?: string };
  err.name = e.name;
  if (e.code) err.code = e.code;
  return err;
}
