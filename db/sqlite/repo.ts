/**
 * SQLite storage, for one `serve` process (it holds the data directory's lock): what differs from PostgreSQL
 * (db/pg/repo.ts). The group-committed ingest over raw prepared statements, the handoff queue under one write lock,
 * rate windows in memory. Every other area is written once for both dialects (db/areas/) and runs on this file's
 * thin runner.
 */
import { randomUUID } from 'node:crypto';
import { Database, type SQLQueryBindings, type Statement } from 'bun:sqlite';
import { getTableColumns } from 'drizzle-orm';
import { sharedAreas } from '../areas/index.ts';
import { SQLITE, type Dialect } from '../dialect.ts';
import { runMigrations, type Migration } from '../migrate.ts';
import { batchSteps, withRunner, type BatchOutcome, type SqlRunner } from '../runner.ts';
import { migrations as sqliteMigrations } from '../migrations/sqlite/index.ts';
import { leaseToWorker, receiptRow } from '../areas/receipt-rules.ts';
import type { Instance, PendingAuthFailure, Repo } from '../repo.ts';
import type { AttemptResult, AttemptStart, CommittedReceipt, DueEvent, EventRow, IngestLease, PendingReceipt } from '../types.ts';
import * as s from './schema.ts';
import { METRIC, STATS_WIDTHS_MS, UNDELIVERED, statsBucket, withEndpointsAndStores } from '../types.ts';

export interface SqliteOptions {
  /** File path, or `:memory:`. */
  path: string;
  /** `FULL` (default) makes every commit survive power loss; `NORMAL` only for benchmarks. */
  synchronous?: 'FULL' | 'NORMAL';
}

/**
 * The events columns of an EventRow as [row key, column] pairs, in schema order: the raw insert and RETURNING rows
 * derive from it. Every column but the body's key (`body_key`), which only the ingest commit and the body read use.
 */
const EVENT_COLUMNS = Object.entries(getTableColumns(s.events)).filter(([, col]) => col !== s.events.bodyKey);

/**
 * Per column, the conversion to and from the driver value, decided once from drizzle's column metadata: on
 * the hot paths (ingest, the worker's claim) calling drizzle's mappers per value cost more than the query.
 */
const EVENT_CODECS = EVENT_COLUMNS.map(([key, col]) => {
  if (!['SQLiteText', 'SQLiteInteger', 'SQLiteBoolean'].includes(col.columnType)) {
    throw new Error(`events.${col.name}: add a codec for ${col.columnType}`);
  }
  const boolean = col.columnType === 'SQLiteBoolean';
  return {
    key: key as keyof EventRow,
    name: col.name,
    toDriver: boolean ? (v: unknown) => (v ? 1 : 0) : (v: unknown) => v as SQLQueryBindings,
    fromDriver: boolean ? (v: unknown) => v === 1 : (v: unknown) => v,
  };
});

/**
 * A typed events row as driver values, in EVENT_COLUMNS order, written into `out` from `at` (a RowBatch's next row):
 * no array per row copied in afterwards.
 */
function putEventValues(e: EventRow, out: SQLQueryBindings[], at: number): void {
  for (let i = 0; i < EVENT_CODECS.length; i++) {
    const c = EVENT_CODECS[i]!;
    const v = e[c.key];
    out[at + i] = v == null ? null : (c.toDriver(v) as SQLQueryBindings);
  }
}

/** Rows per multi-row INSERT in a commit (see RowBatch). */
const ROWS_PER_INSERT = 16;
/** The message of an attempt whose result no one can know (see claimTransaction). */
const UNKNOWN_MESSAGE = 'The worker stopped or lost its lease after starting this handoff; Flow may have received the trigger.';

/**
 * The two INSERTs a RowBatch uses: `ROWS_PER_INSERT` rows at once, and one row for the remainder. `OR FAIL`
 * keeps SQLite from writing a statement journal for the multi-row form (a temporary file holding the pages it
 * changes, so that a failure half-way could undo the statement's earlier rows): the commit's transaction rolls
 * back whole on any failure, so undoing part of one statement is never needed.
 */
function batchInserts(sqlite: Database, table: string, columns: string[]): [many: Statement, one: Statement] {
  const row = `(${columns.map(() => '?').join(', ')})`;
  const head = `INSERT OR FAIL INTO ${table} (${columns.join(', ')}) VALUES `;
  return [sqlite.prepare(head + Array(ROWS_PER_INSERT).fill(row).join(', ')), sqlite.prepare(head + row)];
}

/**
 * Collects a commit's rows for one table and inserts them `ROWS_PER_INSERT` per statement. Each statement
 * opens a cursor on the table and on every one of its indexes; per row, that cost more than the row itself
 * (storage microbenchmark, ingest commit of 64: 16.2 against 12.8 µs per receipt, same bytes written).
 */
class RowBatch {
  /** One statement's values, filled in place; bun:sqlite binds an array's items as the positional parameters. */
  readonly values: SQLQueryBindings[];
  private filled = 0;
  constructor(
    private readonly statements: [many: Statement, one: Statement],
    private readonly width: number,
  ) {
    this.values = new Array(width * ROWS_PER_INSERT);
  }

  /**
   * Where the next row's values go in `values`: the caller writes its `width` values from there, then calls `added`.
   * A row written in place, not passed as an array of its own and copied (see commitInTransaction).
   */
  next(): number {
    return this.filled;
  }

  added(): void {
    const n = this.filled + this.width;
    if (n === this.values.length) {
      this.statements[0].run(this.values);
      this.filled = 0;
    } else this.filled = n;
  }

  /** Inserts what is left, one row per statement. */
  flush(): void {
    for (let i = 0; i < this.filled; i += this.width) this.statements[1].run(this.values.slice(i, i + this.width));
    this.filled = 0;
  }
}

/** A raw events row (snake_case driver values) as the typed row. */
function rowToEvent(raw: Record<string, unknown>): EventRow {
  const row: Record<string, unknown> = {};
  for (const c of EVENT_CODECS) {
    const v = raw[c.name];
    row[c.key] = v == null ? null : c.fromDriver(v);
  }
  return row as EventRow;
}

/** Page size of a database this process creates. */
export const PAGE_SIZE = 8192;

export function openSqliteDatabase(opts: SqliteOptions): Database {
  const sqlite = new Database(opts.path, { create: true, strict: true });
  // The busy timeout first: the pragmas after it take a lock to read the file's header, and with no timeout set a
  // lock held elsewhere at that moment (another connection closing checkpoints under an exclusive one) failed the
  // open at once with "database is locked" instead of waiting (serve, once in CI: test/cli/moved-box.test.ts).
  sqlite.exec('PRAGMA busy_timeout = 5000');
  // 8 KiB pages for a new database (an existing one keeps its size: WAL mode cannot change it). A commit writes
  // whole pages to the WAL, two write calls each; with 4 KiB pages a 1 KiB body left a quarter of its page
  // unused and every index split rewrote more, smaller pages. Paired against 4 KiB: 0.970–0.984 of the CPU per
  // receipt, with 30% more bytes written.
  sqlite.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
  sqlite.exec('PRAGMA journal_mode = WAL');
  sqlite.exec(`PRAGMA synchronous = ${opts.synchronous ?? 'FULL'}`);
  sqlite.exec('PRAGMA foreign_keys = ON');
  return sqlite;
}

/**
 * A write transaction that takes SQLite's write lock at BEGIN (IMMEDIATE). serve's relay thread writes on a
 * connection of its own: a deferred transaction that read first would fail at once with SQLITE_BUSY (a stale
 * snapshot; busy_timeout does not apply) when the other connection committed in between. IMMEDIATE waits for
 * the lock instead.
 */
export function writeTransaction<A extends unknown[], R>(sqlite: Database, fn: (...args: A) => R): (...args: A) => R {
  return sqlite.transaction(fn).immediate as (...args: A) => R;
}

export async function migrateSqlite(sqlite: Database, list: Migration[] = sqliteMigrations): Promise<string[]> {
  sqlite.exec('CREATE TABLE IF NOT EXISTS __hookrelay_migrations (tag TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)');
  return runMigrations(
    {
      exec: (q) => void sqlite.exec(q),
      appliedTags: () =>
        sqlite
          .query<{ tag: string }, []>('SELECT tag FROM __hookrelay_migrations')
          .all()
          .map((r) => r.tag),
      apply: (m, statements) =>
        writeTransaction(sqlite, () => {
          for (const st of statements) sqlite.exec(st);
          sqlite.query('INSERT INTO __hookrelay_migrations (tag, applied_at) VALUES (?, ?)').run(m.tag, Date.now());
        })(),
    },
    list,
  );
}

/**
 * The areas' runner (db/runner.ts): statements through bun:sqlite's cache of prepared statements; one that writes
 * takes the write lock first (see writeTransaction).
 */
function sqliteRunner(sqlite: Database, dialect: Dialect, relaxed: <T>(fn: () => T) => T): SqlRunner {
  const exec = <T>(q: string, params: unknown[], rows: boolean) => {
    const st = sqlite.query(q);
    const go = () => (rows ? st.all(...(params as SQLQueryBindings[])) : st.run(...(params as SQLQueryBindings[])).changes);
    return (/^\s*SELECT\b/i.test(q) ? go() : writeTransaction(sqlite, go)()) as T;
  };
  const rollback = new Error('batch rolled back');
  return {
    dialect,
    all: async <T>(q: string, params: unknown[], opts?: { relaxed?: boolean }) =>
      opts?.relaxed ? relaxed(() => exec<T[]>(q, params, true)) : exec<T[]>(q, params, true),
    run: async (q, params, opts) => (opts?.relaxed ? relaxed(() => exec<number>(q, params, false)) : exec<number>(q, params, false)),
    batch: async (writes, opts) => {
      let outcome!: BatchOutcome;
      const commit = writeTransaction(sqlite, () => {
        const steps = batchSteps(writes, dialect);
        let step = steps.next();
        while (!step.done) step = steps.next(sqlite.query(step.value[0]).run(...(step.value[1] as SQLQueryBindings[])).changes);
        outcome = step.value;
        if (!outcome.ok) throw rollback;
      });
      try {
        if (opts?.relaxed) relaxed(commit);
        else commit();
      } catch (err) {
        if (err !== rollback) throw err;
      }
      return outcome;
    },
  };
}

/** A SQLite handle: every area, and the database it runs on (for tests, benchmarks and the backup). */
export type SqliteRepo = Repo & { readonly sqlite: Database };

/** The handle of an open, migrated database (see openSqliteRepo). */
export function sqliteRepo(sqlite: Database): SqliteRepo {
  const fullSync = (sqlite.query<{ synchronous: number }, []>('PRAGMA synchronous').get()?.synchronous ?? 2) >= 2;
  /**
   * Runs worker bookkeeping (leases, attempt rows) without an fsync at commit. Losing it to a power cut means
   * an event is handed off again (at-least-once), never that an acknowledged receipt is lost: receipts commit
   * with synchronous=FULL, and that fsync of the WAL also covers these earlier commits.
   */
  const relaxed = <T>(fn: () => T): T => {
    if (!fullSync) return fn();
    sqlite.exec('PRAGMA synchronous = NORMAL');
    try {
      return fn();
    } finally {
      sqlite.exec('PRAGMA synchronous = FULL');
    }
  };
  /** The only live handle of this box as far as claims go (serve holds the data directory's lock). */
  const instance: Instance = ((id) => ({ id: async () => id, alive: async (other: string) => other === id }))(`local:${randomUUID()}`);
  const sql = sqliteRunner(sqlite, SQLITE, relaxed);
  const path = sqlite.filename;
  const areas = sharedAreas(sql, instance, {
    multiInstance: false,
    relayFile: path && path !== ':memory:' ? { path, synchronous: fullSync ? 'FULL' : 'NORMAL' } : null,
  });
  const insertEvents = batchInserts(sqlite, 'events', [...EVENT_COLUMNS.map(([, col]) => col.name), s.events.bodyKey.name]);
  const insertBodies = batchInserts(sqlite, 'event_bodies', ['key', 'event_id', 'expires_at', 'body']);
  const lastBodyKey = sqlite.prepare<{ key: number | null }, []>('SELECT max(key) AS key FROM event_bodies');
  const bodyOfEvent = sqlite.prepare<{ body: Uint8Array }, [string]>(
    'SELECT b.body FROM events e JOIN event_bodies b ON b.key = e.body_key WHERE e.id = ? AND b.event_id = e.id',
  );
  const bodiesHead = sqlite.prepare<{ key: number; expiresAt: number; eventId: string }, [number]>(
    'SELECT key, expires_at AS expiresAt, event_id AS eventId FROM event_bodies ORDER BY key LIMIT ?',
  );
  const deleteBodiesThrough = sqlite.prepare('DELETE FROM event_bodies WHERE key <= ?');
  const findFirstByExternalId = sqlite.prepare<{ id: string }, [string, string, number]>(
    `SELECT id FROM events WHERE endpoint_id = ? AND external_event_id = ? AND received_at >= ?
       AND outcome NOT IN ('duplicate_suppressed', 'rejected', 'test') ORDER BY received_at, id LIMIT 1`,
  );
  const getCounter = sqlite.prepare<{ used: number }, [string, string, number]>(
    'SELECT used FROM usage_counters WHERE store_id = ? AND meter = ? AND period_start = ?',
  );
  const bumpCounter = sqlite.prepare(
    `INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (store_id, meter, period_start) DO UPDATE SET used = used + ?4`,
  );
  const insertAuthFailure = sqlite.prepare('INSERT INTO auth_failures (id, store_id, endpoint_id, code, diagnosis, at, count) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const recentAuthFailures = sqlite.prepare<{ id: string }, [string, number, string, number]>(
    'SELECT id FROM auth_failures WHERE endpoint_id = ? AND at >= ? AND code = ? ORDER BY at DESC, id DESC LIMIT ?',
  );
  const foldAuthFailure = sqlite.prepare(
    'UPDATE auth_failures SET count = count + ?1, at = max(at, ?2), diagnosis = CASE WHEN ?3 THEN ?4 ELSE diagnosis END WHERE id = ?5',
  );
  // Only while the event's lease holds at the start (as on PostgreSQL, where the lease also carries its holder's
  // token): an attempt of an event never claimed, or claimed again after its lease ended, is never journaled.
  const journalAttempt = sqlite.prepare(
    `INSERT INTO attempts (event_id, number, destination, started_at, finished_at, outcome)
     SELECT ?1, ?2, ?3, ?4, ?4, 'sending' WHERE EXISTS (SELECT 1 FROM events WHERE id = ?1 AND lease_until > ?4)
     ON CONFLICT DO NOTHING`,
  );
  const closeAttempt = sqlite.prepare(
    `UPDATE attempts SET started_at = ?, finished_at = ?, outcome = ?, http_status = ?, code = ?, message = ?, retry_at = ?, field_counts = ?
     WHERE event_id = ? AND number = ? AND outcome = 'sending'`,
  );
  const updateAfterAttempt = sqlite.prepare(
    `UPDATE events SET outcome = ?, code = ?, next_attempt_at = ?, delivered_at = ?, lease_until = ?, attempts = ?, last_attempt_at = ?
     WHERE id = ?`,
  );
  const dropSending = sqlite.prepare("DELETE FROM attempts WHERE event_id = ? AND number = ? AND outcome = 'sending'");
  const deferEvent = sqlite.prepare("UPDATE events SET outcome = 'queued', next_attempt_at = ?, lease_until = NULL WHERE id = ?");
  const markUnknown = sqlite.prepare<{ number: number }, [number, string, string]>(
    `UPDATE attempts SET outcome = 'unknown', finished_at = ?, code = 'unknown', message = ?
     WHERE event_id = ? AND outcome = 'sending' RETURNING number`,
  );
  const countUnknown = sqlite.prepare<unknown, [number, number, string]>('UPDATE events SET attempts = max(attempts, ?), last_attempt_at = ? WHERE id = ?');
  const journalBatch = writeTransaction(sqlite, (rows: AttemptStart[]) =>
    rows.filter((a) => journalAttempt.run(a.eventId, a.number, a.destination, a.startedAt).changes === 1),
  );
  const bumpStat = sqlite.prepare(
    `INSERT INTO event_stats (store_id, width, bucket, metric, n) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (store_id, width, bucket, metric) DO UPDATE SET n = n + ?5`,
  );
  // A local send's record (AttemptResult.unjournaled): the event only while it holds the lease it was sent under, then
  // its attempt written once.
  const updateLeased = sqlite.prepare(
    `UPDATE events SET outcome = ?, code = ?, next_attempt_at = ?, delivered_at = ?, lease_until = ?, attempts = ?, last_attempt_at = ?
     WHERE id = ? AND lease_until IS ?`,
  );
  const deferLeased = sqlite.prepare("UPDATE events SET outcome = 'queued', next_attempt_at = ?, lease_until = NULL WHERE id = ? AND lease_until IS ?");
  const insertAttempt = sqlite.prepare(
    `INSERT INTO attempts (event_id, number, destination, started_at, finished_at, outcome, http_status, code, message, retry_at, field_counts)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  // What an ended attempt writes, in the column order insertAttempt and closeAttempt share after its key.
  const attemptEnd = (a: AttemptResult['attempt']) =>
    [a.startedAt, a.finishedAt, a.outcome, a.httpStatus, a.code, a.message, a.retryAt, a.fieldCounts ?? null] as const;
  const recordBatch = writeTransaction(sqlite, (results: AttemptResult[]) => {
    const stats = statsBatch();
    for (const { attempt: a, event: e, storeId, metrics, unsent, unjournaled } of results) {
      if (unjournaled) {
        const lease = unjournaled.leaseUntil;
        if (unsent) {
          if (deferLeased.run(e.nextAttemptAt, a.eventId, lease).changes === 0) continue;
        } else {
          const held = updateLeased.run(e.outcome, e.code, e.nextAttemptAt, e.deliveredAt, e.leaseUntil, a.number, a.finishedAt, a.eventId, lease);
          if (held.changes === 0) continue;
          insertAttempt.run(a.eventId, a.number, a.destination, ...attemptEnd(a));
        }
        for (const m of metrics) stats.add(storeId, a.finishedAt, m);
        continue;
      }
      if (unsent) {
        if (dropSending.run(a.eventId, a.number).changes === 0) continue;
        deferEvent.run(e.nextAttemptAt, a.eventId);
        for (const m of metrics) stats.add(storeId, a.finishedAt, m);
        continue;
      }
      const { changes } = closeAttempt.run(...attemptEnd(a), a.eventId, a.number);
      // No journaled attempt to close: its lease ran out and a claim marked it `unknown`. This worker writes nothing.
      if (changes === 0) continue;
      updateAfterAttempt.run(e.outcome, e.code, e.nextAttemptAt, e.deliveredAt, e.leaseUntil, a.number, a.finishedAt, a.eventId);
      for (const m of metrics) stats.add(storeId, a.finishedAt, m);
    }
    stats.flush();
  });
  const claimStatement = sqlite.prepare<Record<string, unknown>, [number, number, number]>(
    `UPDATE events SET lease_until = ?1, outcome = 'queued'
     WHERE id IN (SELECT id FROM events WHERE next_attempt_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
                  ORDER BY next_attempt_at LIMIT ?3)
     RETURNING *`,
  );
  const claimTransaction = writeTransaction(sqlite, (leaseUntil: number, now: number, limit: number) => {
    const claimed = claimStatement.all(leaseUntil, now, limit).map(rowToEvent);
    // A claimed event whose attempt is still `sending` was left by a worker that stopped or lost its lease
    // mid-send: Flow may have the trigger. The attempt ends `unknown` and counts, so the next one is visible as a repeat.
    for (const e of claimed) {
      const left = markUnknown.all(now, UNKNOWN_MESSAGE, e.id);
      if (!left.length) continue;
      const number = Math.max(...left.map((r) => r.number));
      countUnknown.run(number, now, e.id);
      e.attempts = Math.max(e.attempts, number);
      e.lastAttemptAt = now;
    }
    return claimed;
  });
  const commitBatch = writeTransaction(sqlite, (batch: PendingReceipt[], failures: PendingAuthFailure[], lease: IngestLease | null) =>
    commitInTransaction(batch, failures, lease),
  );

  /** One process owns a SQLite file (the data directory lock): its rate windows live in memory. */
  const windows = new Map<string, number>();
  let takenStart = -1;
  /** addRate's windows, apart from takeRate's: the two callers' windows need not line up. */
  const added = new Map<string, number>();
  let addedStart = -1;

  function commitInTransaction(batch: PendingReceipt[], authFailures: PendingAuthFailure[], lease: IngestLease | null): CommittedReceipt[] {
    let leases = lease?.max ?? 0;
    for (const f of authFailures) recordAuthFailure(f);
    const seen = new Map<string, string>();
    // Accepted-events meter per store and period, read once per batch and written back once.
    type Meter = { storeId: string; meter: string; periodStart: number; used: number; added: number };
    const meters = new Map<string, Meter>();
    let lastMeter: Meter | undefined;
    const out: CommittedReceipt[] = [];
    const stats = statsBatch();
    const events = new RowBatch(insertEvents, EVENT_COLUMNS.length + 1);
    const bodies = new RowBatch(insertBodies, 4);
    // Bodies are keyed in the order they are stored (see event_bodies): the next keys after the last one.
    let bodyKey = lastBodyKey.get()?.key ?? 0;
    // Receipts of a batch mostly share one meter: check the last one before building a key.
    const takeRoom = (e: EventRow, capacity: NonNullable<PendingReceipt['capacity']>) => {
      const { meter, periodStart } = capacity;
      let m = lastMeter && lastMeter.storeId === e.storeId && lastMeter.meter === meter && lastMeter.periodStart === periodStart ? lastMeter : undefined;
      if (!m) {
        const key = `${e.storeId}\u0000${meter}\u0000${periodStart}`;
        m = meters.get(key);
        if (!m) {
          const used = getCounter.get(e.storeId, meter, periodStart)?.used ?? 0;
          meters.set(key, (m = { storeId: e.storeId, meter, periodStart, used, added: 0 }));
        }
        lastMeter = m;
      }
      if (m.used + m.added >= capacity.hardLimit) return false;
      m.added++;
      return true;
    };
    const eventWidth = EVENT_CODECS.length;
    // A batch's receipts mostly share an outcome: its metric's name is made once, not concatenated per receipt.
    let lastOutcome = '';
    let lastMetric = '';
    for (const p of batch) {
      const e = p.event;
      let duplicateOf: string | null = null;
      if (e.externalEventId != null && p.dedupeSince != null) {
        const key = `${e.endpointId}\u0000${e.externalEventId}`;
        duplicateOf = seen.get(key) ?? findFirstByExternalId.get(e.endpointId, e.externalEventId, p.dedupeSince)?.id ?? null;
        if (duplicateOf == null) seen.set(key, e.id);
      }
      const row = receiptRow(e, duplicateOf, p.capacity, takeRoom);
      const outcome = row.outcome;
      // Claimed in the same transaction (see IngestLease); the pending event becomes the stored row.
      const leased = leaseToWorker(row, lease, leases);
      if (leased) leases--;
      // The row's values straight into the statement's (RowBatch), the body's key last.
      const at = events.next();
      putEventValues(row, events.values, at);
      if (!duplicateOf && p.body) {
        const b = bodies.next();
        const v = bodies.values;
        v[b] = ++bodyKey;
        v[b + 1] = e.id;
        v[b + 2] = p.bodyExpiresAt;
        v[b + 3] = p.body;
        bodies.added();
        events.values[at + eventWidth] = bodyKey;
      } else {
        events.values[at + eventWidth] = null;
      }
      events.added();
      if (outcome !== lastOutcome) {
        lastOutcome = outcome;
        lastMetric = METRIC.received(outcome);
      }
      stats.add(row.storeId, row.receivedAt, lastMetric);
      out.push({ eventId: row.id, receiptId: row.receiptId, outcome, duplicateOf, leased });
    }
    events.flush();
    bodies.flush();
    for (const m of meters.values()) if (m.added) bumpCounter.run(m.storeId, m.meter, m.periodStart, m.added);
    stats.flush();
    return out;
  }

  /** Inserts the failure, or folds it into the newest row of its endpoint and code once the window holds keepRows (its diagnosis the newest examined: PendingAuthFailure). */
  function recordAuthFailure(f: PendingAuthFailure): void {
    const count = f.count ?? 1;
    if (f.keepRows !== undefined && f.foldSince !== undefined) {
      const recent = recentAuthFailures.all(f.endpointId, f.foldSince, f.code, f.keepRows);
      if (recent.length >= f.keepRows && recent[0]) return void foldAuthFailure.run(count, f.at, f.diagnosis !== undefined, f.diagnosis ?? null, recent[0].id);
    }
    insertAuthFailure.run(f.id, f.storeId, f.endpointId, f.code, f.diagnosis ?? null, f.at, count);
  }
  function sweepBodies(now: number, limit: number, beforeId: string): number {
    let through = 0;
    for (const b of bodiesHead.all(limit)) {
      if (b.expiresAt > now && !(b.eventId < beforeId)) break;
      through = b.key;
    }
    return through ? deleteBodiesThrough.run(through).changes : 0;
  }

  /**
   * Adds up event_stats increments in memory; flush() writes one upsert per (store, width, bucket, metric).
   * Events of a batch mostly share store and 5-minute bucket, so add() checks the metric's last entry first:
   * building a map key per event cost more than the rest of the bookkeeping.
   */
  function statsBatch() {
    type Entry = { storeId: string; metric: string; at: number; bucket: number; n: number };
    const entries = new Map<string, Entry>();
    // Per metric: a round's attempts add several metrics each, so one last entry for all would miss on every call.
    const lastOf = new Map<string, Entry>();
    return {
      add: (storeId: string, at: number, metric: string) => {
        const bucket = statsBucket(at);
        const last = lastOf.get(metric);
        if (last && last.bucket === bucket && last.storeId === storeId) {
          last.n++;
          return;
        }
        const key = `${storeId}\u0000${metric}\u0000${bucket}`;
        let entry = entries.get(key);
        if (entry) entry.n++;
        else entries.set(key, (entry = { storeId, metric, at, bucket, n: 1 }));
        lastOf.set(metric, entry);
      },
      flush: () => {
        const rows = new Map<string, { storeId: string; width: number; bucket: number; metric: string; n: number }>();
        for (const e of entries.values()) {
          for (const width of STATS_WIDTHS_MS) {
            const bucket = statsBucket(e.at, width);
            const key = `${e.storeId}\u0000${width}\u0000${bucket}\u0000${e.metric}`;
            const hit = rows.get(key);
            if (hit) hit.n += e.n;
            else rows.set(key, { storeId: e.storeId, width, bucket, metric: e.metric, n: e.n });
          }
        }
        for (const c of rows.values()) bumpStat.run(c.storeId, c.width, c.bucket, c.metric, c.n);
      },
    };
  }

  return withRunner(
    {
      ...areas,
      sqlite,
      async commitIngest(receipts: PendingReceipt[], authFailures: PendingAuthFailure[], lease: IngestLease | null = null): Promise<CommittedReceipt[]> {
        return commitBatch(receipts, authFailures, lease);
      },

      async claimDue(now: number, limit: number, leaseUntil: number): Promise<DueEvent[]> {
        const claimed = relaxed(() => claimTransaction(leaseUntil, now, limit));
        return withEndpointsAndStores(claimed, areas);
      },

      async journalAttempts(starts: AttemptStart[]): Promise<AttemptStart[]> {
        if (!starts.length) return [];
        // Written to the WAL before any send, so a killed process leaves it for the next claim to find. Not fsynced
        // on its own (synchronous = NORMAL, as the round's record): the next group commit, a millisecond away under
        // load, syncs it. A power loss inside that window can lose the entry with the round's record, so its sends
        // could repeat unrecorded; a process crash cannot. A FULL commit of its own cost a quarter more server CPU per
        // receipt (bench:pair against the tree without the journal).
        return relaxed(() => journalBatch(starts));
      },

      async recordAttempts(results: AttemptResult[]) {
        if (!results.length) return;
        relaxed(() => recordBatch(results));
      },

      async releaseAllLeases(now: number) {
        // A receipt leased by its own commit waits until its lease ends (next_attempt_at = lease_until): due now.
        return sqlite.prepare('UPDATE events SET lease_until = NULL, next_attempt_at = min(next_attempt_at, ?) WHERE lease_until IS NOT NULL').run(now).changes;
      },

      async getEventBody(eventId: string) {
        const row = bodyOfEvent.get(eventId);
        return row ? new Uint8Array(row.body) : null;
      },
      async releaseHeld(storeId: string, capacity: { meter: string; periodStart: number; hardLimit: number }, now: number) {
        return writeTransaction(sqlite, () => {
          const used = getCounter.get(storeId, capacity.meter, capacity.periodStart)?.used ?? 0;
          const room = capacity.hardLimit - used;
          if (room <= 0) return 0;
          const { changes } = sqlite
            .query(
              `UPDATE events SET outcome = 'accepted', code = NULL, next_attempt_at = ?1
           WHERE id IN (SELECT id FROM events WHERE store_id = ?2 AND outcome = 'held' AND ${UNDELIVERED} ORDER BY id LIMIT ?3)`,
            )
            .run(now, storeId, room);
          if (changes) bumpCounter.run(storeId, capacity.meter, capacity.periodStart, changes);
          return changes;
        })();
      },
      /**
       * Bodies go from the lowest key up while they are past their expiry or their event was received before
       * `bodiesBeforeId` (a retention shortened since they were stored), and the sweep stops at the first that is
       * neither: keys follow the order bodies were stored, and so their receipt and expiry (see event_bodies). It
       * reads at most `limit` keys from the head of the table, never the whole of it.
       */
      async sweepExpired(now: number, keysBefore: number, limit: number, bodiesBeforeId = '') {
        return relaxed(() => ({
          bodies: sweepBodies(now, limit, bodiesBeforeId),
          idempotencyKeys: sqlite
            .query('DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE created_at < ? LIMIT ?)')
            .run(keysBefore, limit).changes,
        }));
      },

      async takeRate(keys: { key: string; limit: number }[], windowStart: number) {
        if (windowStart !== takenStart) {
          takenStart = windowStart;
          windows.clear();
        }
        const full = keys.findIndex((k) => (windows.get(k.key) ?? 0) >= k.limit);
        if (full >= 0) return full;
        for (const k of keys) windows.set(k.key, (windows.get(k.key) ?? 0) + 1);
        return -1;
      },
      async addRate(counts: { key: string; n: number }[], windowStart: number) {
        if (windowStart !== addedStart) {
          addedStart = windowStart;
          added.clear();
        }
        return counts.map(({ key, n }) => {
          const after = (added.get(key) ?? 0) + n;
          added.set(key, after);
          return after;
        });
      },

      async close() {
        sqlite.close();
      },
    },
    sql,
  );
}

/** Opens and migrates a SQLite file. */
export async function openSqliteRepo(opts: SqliteOptions): Promise<SqliteRepo> {
  const sqlite = openSqliteDatabase(opts);
  await migrateSqlite(sqlite);
  return sqliteRepo(sqlite);
}
