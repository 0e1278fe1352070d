/** node-postgres's errors without a SQLSTATE as storage faults, and what the writer and /status make of a stalled database. */
import { describe, expect, it } from 'bun:test';
import pg from 'pg';
import { answeredByServer, CommitUnknownError } from '../../db/pg/client.ts';
import type { IngestStore } from '../../db/repo.ts';
import type { CommittedReceipt, PendingReceipt } from '../../db/types.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { faultCode, outcomeUnknown, stalled, StorageHealth, storageFault } from '../../src/relay/storage-health.ts';
import { ReceiptWriter } from '../../src/relay/writer.ts';
import { eventRow } from '../helpers.ts';

const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
/** How the query builder hands a driver error on: its own message, the driver's error as the cause. */
const wrapped = (cause: unknown) => new Error('Failed query: select "id" from "stores"\nparams: ', { cause });

describe('storageFault of PostgreSQL driver errors', () => {
  it('names the errors pg raises without a SQLSTATE: lost connections, connect timeouts', () => {
    expect(faultCode(new Error('Connection terminated unexpectedly'))).toBe('PG_CONNECTION_LOST');
    expect(faultCode(new Error('Client has encountered a connection error and is not queryable'))).toBe('PG_CONNECTION_LOST');
    expect(faultCode(new Error('Client was closed and is not queryable'))).toBe('PG_CONNECTION_LOST');
    expect(faultCode(new Error('timeout exceeded when trying to connect'))).toBe('PG_CONNECT_TIMEOUT');
    expect(faultCode(new Error('Connection terminated due to connection timeout', { cause: new Error('Connection terminated unexpectedly') }))).toBe(
      'PG_CONNECT_TIMEOUT',
    );
    expect(storageFault(wrapped(new Error('Connection terminated unexpectedly')))).toBe('unreachable');
    expect(storageFault(wrapped(new Error('timeout exceeded when trying to connect')))).toBe('timeout');
  });

  it('classifies the deadline, statement_timeout, a shutting-down server and an unanswered COMMIT', () => {
    expect(storageFault(coded('The database did not answer within 6000 ms', 'PG_QUERY_TIMEOUT'))).toBe('timeout');
    expect(storageFault(coded('canceling statement due to statement timeout', '57014'))).toBe('busy');
    expect(storageFault(coded('terminating connection due to administrator command', '57P01'))).toBe('unreachable');
    expect(storageFault(coded('write EPIPE', 'EPIPE'))).toBe('unreachable');
    const unknown = new CommitUnknownError(new Error('Connection terminated unexpectedly'), 'hookrelay abc');
    expect(storageFault(unknown)).toBe('unreachable');
    expect(outcomeUnknown(unknown)).toBe(true);
    expect(outcomeUnknown(wrapped(unknown))).toBe(true);
    expect(outcomeUnknown(new Error('Connection terminated unexpectedly'))).toBe(false);
  });

  it('leaves bugs and statement errors alone: an internal error stays one', () => {
    expect(storageFault(new Error('boom'))).toBeNull();
    expect(storageFault(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBeNull();
    // A coded error is read by its code only, whatever its text.
    expect(storageFault(coded('Connection terminated unexpectedly', '23505'))).toBeNull();
  });

  it('stalled: only a database that did not answer in time', () => {
    expect(stalled(coded('x', 'PG_QUERY_TIMEOUT'))).toBe(true);
    expect(stalled(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(stalled(coded('x', '57014'))).toBe(true);
    expect(stalled(new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(stalled(coded('x', 'ECONNREFUSED'))).toBe(false);
    expect(stalled(coded('database is locked', 'SQLITE_BUSY'))).toBe(false);
  });

  it('answeredByServer: a SQLSTATE from a live session means a failed COMMIT did not commit; a lost connection does not say', () => {
    const fromServer = (code: string) => Object.assign(new pg.DatabaseError('x', 0, 'error'), { code });
    expect(answeredByServer(fromServer('40001'))).toBe(true);
    expect(answeredByServer(fromServer('57P01'))).toBe(false);
    expect(answeredByServer(fromServer('08006'))).toBe(false);
    expect(answeredByServer(new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(answeredByServer(coded('x', 'PG_QUERY_TIMEOUT'))).toBe(false);
  });
});

describe('StorageHealth.reachable', () => {
  it("ends a fault of reaching the database, not a disk's", () => {
    const log = memoryLog();
    const health = new StorageHealth(new ManualClock(), log);
    health.failed(new Error('Connection terminated unexpectedly'));
    expect(health.state()).toMatchObject({ status: 'degraded', fault: 'unreachable' });
    expect(log.lines.filter((l) => l.startsWith('error'))).toEqual([
      'error storage: writes are failing (unreachable); ingest and the API answer 503 storage_unavailable code=PG_CONNECTION_LOST',
    ]);
    health.reachable();
    expect(health.state().status).toBe('operational');
    health.failed(coded('x', 'PG_QUERY_TIMEOUT'));
    health.reachable();
    expect(health.state().status).toBe('operational');
    health.failed(coded('database or disk is full', 'SQLITE_FULL'));
    health.reachable();
    expect(health.state()).toMatchObject({ status: 'degraded', fault: 'full' });
  });
});

describe('ReceiptWriter on a stalled database', () => {
  const receipt = (key: string): PendingReceipt => {
    const event = eventRow({
      id: `evt_${key}`,
      receivedAt: Date.now(),
      outcome: 'rejected',
      code: 'SVC_INVALID_JSON',
      bodyRetention: 'none',
      nextAttemptAt: null,
    });
    return { event, body: null, bodyExpiresAt: event.receivedAt, dedupeSince: null };
  };
  /** A target whose first commit fails with `err` after 50 ms, and which commits everything after it. */
  function target(err: Error) {
    const commits: string[][] = [];
    const store = {
      async commitIngest(receipts: PendingReceipt[]): Promise<CommittedReceipt[]> {
        commits.push(receipts.map((r) => r.event.id));
        if (commits.length === 1) {
          await Bun.sleep(50);
          throw err;
        }
        return receipts.map((r) => ({ eventId: r.event.id, receiptId: r.event.receiptId, outcome: r.event.outcome, duplicateOf: null, leased: false }));
      },
    } as unknown as IngestStore;
    return { store, commits };
  }
  const settle = (p: Promise<CommittedReceipt>) =>
    p.then(
      () => 'committed',
      (e: Error) => faultCode(e) ?? e.message,
    );

  it('refuses what queued behind a commit the database did not answer, without sending it', async () => {
    const { store, commits } = target(coded('The database did not answer within 6000 ms', 'PG_QUERY_TIMEOUT'));
    const writer = new ReceiptWriter(store);
    const first = writer.submit(receipt('a'));
    await Bun.sleep(10); // the first commit is in flight
    const behind = [writer.submit(receipt('b')), writer.submit(receipt('c'))];
    expect(await Promise.all([first, ...behind].map(settle))).toEqual(['PG_QUERY_TIMEOUT', 'PG_QUERY_TIMEOUT', 'PG_QUERY_TIMEOUT']);
    expect(commits).toEqual([['evt_a']]);
    expect(await settle(writer.submit(receipt('d')))).toBe('committed');
  });

  it('refuses them with the cause, not with "may be stored", after an unanswered COMMIT', async () => {
    const { store } = target(new CommitUnknownError(coded('The database did not answer within 6000 ms', 'PG_QUERY_TIMEOUT'), 'hookrelay x'));
    const writer = new ReceiptWriter(store);
    const first = writer.submit(receipt('a'));
    await Bun.sleep(10);
    const behind = writer.submit(receipt('b'));
    expect(await settle(first)).toBe('PG_COMMIT_UNKNOWN');
    expect(await settle(behind)).toBe('PG_QUERY_TIMEOUT');
  });

  it('leaves them queued after any other failure (SQLite busy, a lost connection): the next commit takes them', async () => {
    for (const err of [coded('database is locked', 'SQLITE_BUSY'), new Error('Connection terminated unexpectedly')]) {
      const { store, commits } = target(err);
      const writer = new ReceiptWriter(store);
      const first = writer.submit(receipt('a'));
      await Bun.sleep(10);
      const behind = writer.submit(receipt('b'));
      expect(await settle(first)).not.toBe('committed');
      expect(await settle(behind)).toBe('committed');
      expect(commits).toEqual([['evt_a'], ['evt_b']]);
    }
  });
});
