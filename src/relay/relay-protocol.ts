/** The messages between `serve`'s request thread and its relay thread (relay-host.ts ↔ relay-thread.ts). */
import type { PendingAuthFailure } from '../../db/repo.ts';
import type { CommittedReceipt, EventRow, PendingReceipt } from '../../db/types.ts';
import type { Config } from '../core.ts';
import { faultCode } from './storage-health.ts';

/** Config without its functions (`env` reads the shared process.env in the thread). */
export type ThreadConfig = Omit<Config, 'env'>;

export type ToThread =
  /** `secretKey`: the box key, so the thread's handoff can seal and open the platform tokens it obtains. */
  | { t: 'init'; sqlitePath: string; synchronous: 'FULL' | 'NORMAL'; config: ThreadConfig; worker: boolean; secretKey: Uint8Array }
  | { t: 'commit'; id: number; receipts: PackedReceipt[]; failures: PendingAuthFailure[] }
  | { t: 'endpoint'; id: string }
  | { t: 'stop' };

/** An error as it crosses the thread boundary: its fault code (see faultCode, what storageFault reads), its name and message. */
export interface ThreadError {
  name: string;
  code: string | null;
  message: string;
}

export type FromThread =
  | { t: 'ready' }
  | { t: 'failed'; error: ThreadError }
  | { t: 'committed'; id: number; committed: PackedCommitted[] }
  | { t: 'refused'; id: number; error: ThreadError }
  | { t: 'log'; lines: [level: 'info' | 'warn' | 'error', message: string][] }
  | { t: 'handoffs'; counts: [storeId: string, result: string, n: number][] }
  | { t: 'stopped' };

/** An error as the other thread needs it: its fault code (see faultCode), its name and message. */
export function toThreadError(err: unknown): ThreadError {
  const name = err instanceof Error ? err.name : 'Error';
  return { name, code: faultCode(err), message: err instanceof Error ? err.message : String(err) };
}

/** The error again, on the receiving side: storageFault reads its `code` as it would the driver's. */
export function fromThreadError(e: ThreadError): Error & { code?: string } {
  const err = new Error(e.message) as Error & { code?: string };
  err.name = e.name;
  if (e.code) err.code = e.code;
  return err;
}

/**
 * Every events column, in one fixed order: a receipt crosses the boundary as an array of values. Bun's structured
 * clone writes each object's property names with every value; arrays of values cost a third as much (3.2 against
 * 1.1 µs per receipt serialised, measured with bun:jsc's serialize), paid on both threads for every receipt.
 */
const EVENT_KEYS = [
  'id',
  'receiptId',
  'storeId',
  'endpointId',
  'configVersion',
  'outcome',
  'code',
  'externalEventId',
  'eventType',
  'isTest',
  'duplicateOf',
  'resourceId',
  'relatedResourceId',
  'bodyBytes',
  'bodyRetention',
  'receivedAt',
  'attempts',
  'lastAttemptAt',
  'nextAttemptAt',
  'leaseUntil',
  'deliveredAt',
] as const satisfies readonly (keyof EventRow)[];

/** A key of EventRow missing from EVENT_KEYS fails to compile here. */
type Missing = Exclude<keyof EventRow, (typeof EVENT_KEYS)[number]>;
const _complete: [Missing] extends [never] ? true : Missing = true;
void _complete;

const N = EVENT_KEYS.length;

export type PackedReceipt = unknown[];

export function packReceipt(r: PendingReceipt): PackedReceipt {
  const out: unknown[] = new Array(N + 6);
  const e = r.event;
  for (let i = 0; i < N; i++) out[i] = e[EVENT_KEYS[i]!];
  out[N] = r.body;
  out[N + 1] = r.bodyExpiresAt;
  out[N + 2] = r.dedupeSince;
  const c = r.capacity;
  out[N + 3] = c ? c.meter : null;
  out[N + 4] = c ? c.periodStart : null;
  out[N + 5] = c ? c.hardLimit : null;
  return out;
}

export function unpackReceipt(p: PackedReceipt): PendingReceipt {
  const event = {} as Record<string, unknown>;
  for (let i = 0; i < N; i++) event[EVENT_KEYS[i]!] = p[i];
  const meter = p[N + 3] as string | null;
  return {
    event: event as EventRow,
    body: p[N] as Uint8Array | null,
    bodyExpiresAt: p[N + 1] as number,
    dedupeSince: p[N + 2] as number | null,
    capacity: meter === null ? null : { meter, periodStart: p[N + 4] as number, hardLimit: p[N + 5] as number },
  };
}

export type PackedCommitted = [eventId: string, receiptId: string, outcome: string, duplicateOf: string | null, leased: boolean];

export function packCommitted(c: CommittedReceipt): PackedCommitted {
  return [c.eventId, c.receiptId, c.outcome, c.duplicateOf, c.leased === true];
}

export function unpackCommitted(p: PackedCommitted): CommittedReceipt {
  return { eventId: p[0], receiptId: p[1], outcome: p[2], duplicateOf: p[3], leased: p[4] };
}
