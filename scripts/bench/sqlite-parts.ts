/**
 * `bun scripts/bench/sqlite-parts.ts [--batch 64] [--rounds 300]`: what a receipt costs in SQLite storage, part by
 * part, as CPU time (user + system) of this process per receipt. Receipts of 1 KiB go through SqliteRepo.commitIngest
 * `--batch` at a time, leased to the worker as serve's direct handoff stores them, and each batch is then recorded
 * as a delivered local send (recordAttempts, as the worker's round does):
 *
 * - the ingest commit and the record, on a file at synchronous FULL and NORMAL, and in memory (no I/O at all);
 * - the ingest commit in memory without the five secondary events indexes (what they cost at ingest);
 * - the record's statements one at a time over the stored receipts, rolled back: its events UPDATE as it is (the
 *   event's `queued` outcome entry and its due entry go; a delivered event has no outcome entry), without the indexed
 *   columns, without the outcome alone; the attempt INSERT; the lookup by id its UPDATE makes.
 *
 * Run it pinned to one core (`taskset -c 1`) and more than once: a loaded host moves every figure.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type SqliteRepo, openSqliteRepo } from '../../db/sqlite/repo.ts';
import type { AttemptResult, EventRow, PendingReceipt } from '../../db/types.ts';
import { createIdGenerator } from '../../src/lib/ids.ts';
import { HOOK_BODY, receivedEvent, round } from './_lib.ts';

const { values: a } = parseArgs({ options: { batch: { type: 'string', default: '64' }, rounds: { type: 'string', default: '300' } } });
const BATCH = Number(a.batch);
const ROUNDS = Number(a.rounds);
const STORE = 'st_01jz0000000000000000000000';
const EP = 'ep_01jz0000000000000000000000';
const LEASE_MS = 60_000;
const SECONDARY = ['events_store_idx', 'events_store_endpoint_idx', 'events_store_outcome_idx', 'events_dedupe_idx', 'events_due_idx'];
const body = new TextEncoder().encode(HOOK_BODY);
const ids = createIdGenerator();

/** CPU time of this process so far, in µs. */
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

function received(at: number): PendingReceipt {
  const id = ids.next('evt');
  const event = receivedEvent({ id, receiptId: ids.next('rcpt'), storeId: STORE, endpointId: EP, bodyBytes: body.byteLength, at, eventType: 'order.flagged' });
  return { event, body, bodyExpiresAt: at + 30 * 86400_000, dedupeSince: at - 86400_000, capacity: null };
}

/** A delivered local send of a leased receipt, as the worker's round records it. */
function delivered(e: EventRow, at: number): AttemptResult {
  const attempt = {
    eventId: e.id,
    number: 1,
    destination: 'log',
    startedAt: at,
    finishedAt: at + 1,
    outcome: 'delivered',
    httpStatus: null,
    code: null,
    message: null,
    retryAt: null,
    fieldCounts: null,
  } as const;
  return {
    attempt,
    unjournaled: { leaseUntil: e.leaseUntil },
    storeId: STORE,
    metrics: ['attempt:delivered', 'handoff:delivered', 'latency_le:10'],
    event: { outcome: 'delivered', code: null, nextAttemptAt: null, leaseUntil: null, deliveredAt: at + 1 },
  };
}

/** Commits and records ROUNDS batches; µs of CPU per receipt for each. Returns the events stored. */
async function run(repo: SqliteRepo, record: boolean): Promise<{ ingest: number; record: number; stored: string[] }> {
  let ingest = 0;
  let recorded = 0;
  const stored: string[] = [];
  const t0 = Date.now();
  for (let r = 0; r < ROUNDS; r++) {
    const at = t0 + r;
    const batch = Array.from({ length: BATCH }, () => received(at));
    let c = cpu();
    const committed = await repo.commitIngest(batch, [], { until: at + LEASE_MS, max: BATCH });
    ingest += cpu() - c;
    const leased = batch.filter((_, i) => committed[i]!.leased).map((p) => p.event);
    for (const e of leased) stored.push(e.id);
    if (!record) continue;
    c = cpu();
    await repo.recordAttempts(leased.map((e) => delivered(e, at)));
    recorded += cpu() - c;
  }
  const n = ROUNDS * BATCH;
  return { ingest: round(ingest / n, 2)!, record: round(recorded / n, 2)!, stored };
}

async function storage(kind: 'FULL' | 'NORMAL' | 'memory', drop: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-parts-'));
  const repo = await openSqliteRepo(kind === 'memory' ? { path: ':memory:' } : { path: join(dir, 'db.sqlite'), synchronous: kind });
  for (const index of drop) repo.sqlite.exec(`DROP INDEX ${index}`);
  const done = async () => {
    await repo.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { repo, done };
}

const out: Record<string, unknown> = { batch: BATCH, rounds: ROUNDS };
for (const kind of ['FULL', 'NORMAL', 'memory'] as const) {
  const s = await storage(kind);
  const r = await run(s.repo, true);
  out[kind] = { ingestUs: r.ingest, recordUs: r.record };
  await s.done();
}
{
  const s = await storage('memory', SECONDARY);
  out.memoryWithoutSecondaryIndexes = { ingestUs: (await run(s.repo, false)).ingest };
  await s.done();
}
{
  // The record's statements alone, each over every stored receipt in one transaction that is rolled back.
  const s = await storage('memory');
  const { stored } = await run(s.repo, false);
  const db = s.repo.sqlite;
  // Each batch was leased until its own time: the UPDATEs below match the row, lease and all, as a record does.
  const lease = new Map(
    db
      .query<{ id: string; l: number }, []>('SELECT id, lease_until AS l FROM events')
      .all()
      .map((r) => [r.id, r.l]),
  );
  const at = Date.now();
  const each = (statement: string, args: (id: string) => (string | number | null)[]) => {
    const st = db.prepare(statement);
    db.exec('BEGIN');
    const c = cpu();
    let changed = 0;
    for (const id of stored) changed += st.run(...args(id)).changes;
    const us = round((cpu() - c) / stored.length, 2)!;
    db.exec('ROLLBACK');
    // A statement that matched nothing would measure a miss, not the write.
    if (!statement.startsWith('SELECT') && changed !== stored.length) throw new Error(`${statement.slice(0, 40)}: ${changed} of ${stored.length} rows`);
    return us;
  };
  const parts = () => ({
    updateAsRecorded: each(
      'UPDATE events SET outcome = ?, code = ?, next_attempt_at = ?, delivered_at = ?, lease_until = ?, attempts = ?, last_attempt_at = ? WHERE id = ? AND lease_until IS ?',
      (id) => ['delivered', null, null, at, null, 1, at, id, lease.get(id)!],
    ),
    updateNoIndexedColumn: each(
      'UPDATE events SET code = ?, delivered_at = ?, lease_until = ?, attempts = ?, last_attempt_at = ? WHERE id = ? AND lease_until IS ?',
      (id) => [null, at, null, 1, at, id, lease.get(id)!],
    ),
    updateWithoutOutcome: each(
      'UPDATE events SET code = ?, next_attempt_at = ?, delivered_at = ?, lease_until = ?, attempts = ?, last_attempt_at = ? WHERE id = ? AND lease_until IS ?',
      (id) => [null, null, at, null, 1, at, id, lease.get(id)!],
    ),
    insertAttempt: each(
      `INSERT INTO attempts (event_id, number, destination, started_at, finished_at, outcome, http_status, code, message, retry_at, field_counts)
       VALUES (?, 1, 'log', ?, ?, 'delivered', NULL, NULL, NULL, NULL, NULL) ON CONFLICT DO NOTHING`,
      (id) => [id, at, at],
    ),
    lookupById: each('SELECT rowid FROM events WHERE id = ?', (id) => [id]),
  });
  parts(); // warm: the statements' first runs compile and page the tables in
  out.recordStatementsUs = parts();
  await s.done();
}
process.stdout.write(`${JSON.stringify(out)}\n`);
