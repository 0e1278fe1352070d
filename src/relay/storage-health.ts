/** Whether the database takes writes: failures recorded where writes happen, reported by GET /status. */
import { AppError } from '../contract/errors.ts';
import { iso, type Clock } from '../lib/clock.ts';
import type { Log } from '../lib/log.ts';

/** Why storage refuses writes, in words safe for a public status page (never the driver's text). */
export type StorageFault = 'full' | 'io' | 'busy' | 'read_only' | 'corrupt' | 'unreachable' | 'timeout';

const FAULTS: [RegExp, StorageFault][] = [
  [/^SQLITE_FULL/, 'full'],
  [/^SQLITE_(IOERR|CANTOPEN|NOLFS|PROTOCOL)/, 'io'],
  [/^SQLITE_(BUSY|LOCKED)/, 'busy'],
  [/^SQLITE_READONLY/, 'read_only'],
  [/^SQLITE_(CORRUPT|NOTADB)/, 'corrupt'],
  [/^(ENOSPC|EDQUOT)$/, 'full'],
  [/^(EIO|EROFS)$/, 'io'],
  // PostgreSQL SQLSTATEs (class 53: insufficient resources; 08: connection; 57P0x: the server shutting down) and
  // the socket errors of a database that cannot be reached.
  [/^53100$/, 'full'],
  [/^(53\d{3}|58030)$/, 'io'],
  [
    /^(08\d{3}|57P0[1-3]|ECONNREFUSED|ECONNRESET|ECONNABORTED|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|PG_CONNECTION_LOST|PG_COMMIT_UNKNOWN)$/,
    'unreachable',
  ],
  [/^25006$/, 'read_only'],
  // statement_timeout (57014): the server is there but did not finish; the driver's deadlines: no answer at all.
  [/^57014$/, 'busy'],
  [/^(PG_QUERY_TIMEOUT|PG_CONNECT_TIMEOUT)$/, 'timeout'],
];

/**
 * node-postgres raises these without a SQLSTATE or errno: the connection failed, not the statement. Named here by
 * their text (the only thing they carry), as the codes FAULTS reads.
 */
const DRIVER_MESSAGES: [RegExp, string][] = [
  [/^(timeout exceeded when trying to connect|Connection terminated due to connection timeout|timeout expired)$/, 'PG_CONNECT_TIMEOUT'],
  [/^Query read timeout$/, 'PG_QUERY_TIMEOUT'],
  [
    /^(Connection terminated( unexpectedly)?|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|Cannot use a pool after calling end on the pool)$/,
    'PG_CONNECTION_LOST',
  ],
];

/**
 * The driver code along an error's `cause` chain (the query builder wraps the driver's error) that names a storage
 * fault, or null. The relay thread passes it across (relay-protocol.ts) for storageFault on the other side.
 */
export function faultCode(err: unknown): string | null {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && FAULTS.some(([re]) => re.test(code))) return code;
    const message = (e as { message?: unknown }).message;
    if (code === undefined && typeof message === 'string') {
      const named = DRIVER_MESSAGES.find(([re]) => re.test(message));
      if (named) return named[1];
    }
  }
  return null;
}

/**
 * Whether the database stopped answering (a deadline passed) rather than refusing: the receipts queued behind such a
 * commit would wait as long again (see ReceiptWriter.flush).
 */
export function stalled(err: unknown): boolean {
  const code = faultCode(err);
  return code === 'PG_QUERY_TIMEOUT' || code === 'PG_CONNECT_TIMEOUT' || code === 'PG_COMMIT_UNKNOWN' || code === '57014';
}

/**
 * Whether a receipt's commit ended without its outcome known: COMMIT was sent, its answer lost, and the database could
 * not be asked afterwards. The receipt may be stored; its 503 names it so that the sender's retry is deduplicated.
 */
export function outcomeUnknown(err: unknown): boolean {
  return faultCode(err) === 'PG_COMMIT_UNKNOWN';
}

/** The storage fault an error stands for, or null for any other error (a bug stays an internal error). */
export function storageFault(err: unknown): StorageFault | null {
  const code = faultCode(err);
  return code === null ? null : FAULTS.find(([re]) => re.test(code))![1];
}

export interface StorageState {
  status: 'operational' | 'degraded';
  fault?: StorageFault;
  /** When writes started failing, and the newest failure (epoch ms). */
  failingSince?: number;
  lastFailureAt?: number;
}

/**
 * Storage health as writes see it. A read probe cannot tell a full disk (reads still work); a failed write
 * can. Degraded from the first failed write until a write succeeds again; one log line at each change, not
 * one per failed request (a full disk must not also fill with log lines).
 */
export class StorageHealth {
  private failing: { since: number; last: number; fault: StorageFault } | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly log: Log,
  ) {}

  /** Records `err` if it is a storage fault; returns the fault (null: not a storage error, nothing recorded). */
  failed(err: unknown): StorageFault | null {
    const fault = storageFault(err);
    if (!fault) return null;
    const now = this.clock.now();
    if (!this.failing || this.failing.fault !== fault) {
      this.log.error(`storage: writes are failing (${fault}); ingest and the API answer 503 storage_unavailable`, { code: faultCode(err) });
    }
    this.failing = { since: this.failing?.since ?? now, last: now, fault };
    return fault;
  }

  /**
   * The database answered a read (GET /status's probe): a fault that was only about reaching it (lost connections,
   * no answer in time) is over, so /status recovers by itself after an outage with no write to prove it. A disk
   * fault waits for a write.
   */
  reachable(): void {
    if (this.failing?.fault === 'unreachable' || this.failing?.fault === 'timeout') this.succeeded();
  }

  /** A write committed: storage takes writes again. */
  succeeded(): void {
    if (!this.failing) return;
    this.log.info(`storage: writes succeed again after failing since ${iso(this.failing.since)}`);
    this.failing = null;
  }

  state(): StorageState {
    if (!this.failing) return { status: 'operational' };
    return { status: 'degraded', fault: this.failing.fault, failingSince: this.failing.since, lastFailureAt: this.failing.last };
  }
}

const FAULT_WORDS: Record<StorageFault, string> = {
  full: 'the disk or the database is full',
  io: 'the disk reports I/O errors',
  busy: 'the database stayed locked',
  read_only: 'the database is read-only',
  corrupt: 'the database file is damaged',
  unreachable: 'the database cannot be reached',
  timeout: 'the database did not answer in time',
};

/** What a fault means, for people (the status page, error messages); never the driver's text. */
export function describeFault(fault: StorageFault): string {
  return FAULT_WORDS[fault];
}

/** The 503 every API operation answers on a storage fault (a stable code, Retry-After, no driver text). */
export function storageUnavailable(fault: StorageFault): AppError {
  return new AppError(
    'storage_unavailable',
    `Storage is unavailable: ${describeFault(fault)}. The request may not have been recorded; retry later (with the same Idempotency-Key for an execute step). GET /status shows storage health.`,
    { fault },
    undefined,
    { 'Retry-After': String(STORAGE_RETRY_AFTER_SECONDS) },
  );
}

/** How long clients are told to wait before retrying after a storage fault. */
export const STORAGE_RETRY_AFTER_SECONDS = 30;
