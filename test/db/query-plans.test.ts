/**
 * The read paths stay index-backed at any size: EXPLAIN QUERY PLAN of the exact SQL the SQLite repo issues (captured
 * as it is prepared, drizzle and raw statements alike) never shows a full scan of `events`. No ANALYZE runs in
 * production, so the planner's choices here, on a small in-memory database, are the ones it makes at 1M events.
 */
import { Database, type Statement } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { SqliteRepo } from '../../db/sqlite/repo.ts';
import { addGrant, addStore, createEndpoint, createTestEnv, orderEvent, sendHook, sqliteOnly, sqliteRepo, type TestEnv } from '../helpers.ts';

/** Every SQL text prepared while capture is on (bun:sqlite's `query` and `prepare`, which drizzle uses). */
const prepared: string[] = [];
let capturing = false;
const originalPrepare = Database.prototype.prepare;
const originalQuery = Database.prototype.query;

function startCapture() {
  prepared.length = 0;
  capturing = true;
}

/** Runs `fn` and returns the distinct statements it prepared that touch `table`. */
async function sqlOf(fn: () => unknown, table = 'events'): Promise<string[]> {
  startCapture();
  try {
    await fn();
  } finally {
    capturing = false;
  }
  return [...new Set(prepared)].filter((q) => new RegExp(`\\b"?${table}"?\\b`).test(q));
}

/** EXPLAIN QUERY PLAN details of one statement, parameters left unbound (NULL): the plan does not depend on them. */
function plan(sqlite: Database, sql: string): string[] {
  const st = originalPrepare.call(sqlite, `EXPLAIN QUERY PLAN ${sql}`) as Statement<{ detail: string }>;
  const rows = st.all(...(Array(st.paramsCount).fill(null) as null[]));
  st.finalize();
  return rows.map((r) => r.detail);
}

/** A full scan of `events`: a plan row `SCAN events` (with or without USING [COVERING] INDEX: all of it, either way). */
const FULL_SCAN = /^SCAN "?events"?\b/;

let env: TestEnv;
let repo: SqliteRepo;
let storeId: string;
let endpointId: string;
let eventId: string;
/** Statements prepared while the repo was built: the raw ingest, dedupe and claim statements live there. */
let constructed: string[];

beforeAll(async () => {
  if (!sqliteOnly) return; // SQLite's own planner: the describe below runs only there
  Database.prototype.prepare = function (this: Database, sql: string, ...rest: unknown[]) {
    if (capturing) prepared.push(sql);
    return (originalPrepare as (...a: unknown[]) => Statement).call(this, sql, ...rest);
  } as typeof Database.prototype.prepare;
  Database.prototype.query = function (this: Database, sql: string) {
    if (capturing) prepared.push(sql);
    return originalQuery.call(this, sql);
  } as typeof Database.prototype.query;

  startCapture();
  env = await createTestEnv();
  capturing = false;
  constructed = [...prepared];
  repo = sqliteRepo(env);
  const store = await addStore(env);
  storeId = store.storeId;
  const token = await addGrant(env);
  const ep = await createEndpoint(env, token);
  endpointId = ep.endpoint.id;
  const sent = await sendHook(env, ep.endpoint, ep.secret, orderEvent('ext-1'));
  eventId = sent.json.eventId;
});

afterAll(() => {
  Database.prototype.prepare = originalPrepare;
  Database.prototype.query = originalQuery;
});

/** HOOKRELAY_PRINT_PLANS=1 bun test test/db/query-plans.test.ts prints every statement with its plan. */
const PRINT = process.env.HOOKRELAY_PRINT_PLANS === '1';

function expectIndexed(sqls: string[]) {
  expect(sqls.length).toBeGreaterThan(0);
  for (const sql of sqls) {
    const details = plan(repo.sqlite, sql);
    if (PRINT) process.stderr.write(`${sql.replace(/\s+/g, ' ')}\n    ${details.join('\n    ')}\n`);
    expect({ sql, scans: details.filter((d) => FULL_SCAN.test(d)) }).toEqual({ sql, scans: [] });
  }
}

// SQLite-only: EXPLAIN QUERY PLAN of the SQLite repo's statements.
describe.if(sqliteOnly)('read query plans', () => {
  it('listEvents without filters searches events_store_idx', async () => {
    expectIndexed(await sqlOf(() => repo.listEvents({ storeId, limit: 26 })));
  });
  it('listEvents with a cursor', async () => {
    expectIndexed(await sqlOf(() => repo.listEvents({ storeId, beforeId: eventId, limit: 26 })));
  });
  it('listEvents filtered by endpoint, with a cursor', async () => {
    expectIndexed(await sqlOf(() => repo.listEvents({ storeId, endpointId, beforeId: eventId, limit: 26 })));
  });
  it('listEvents filtered by outcome', async () => {
    expectIndexed(await sqlOf(() => repo.listEvents({ storeId, outcome: 'failed', limit: 26 })));
  });
  it('listEvents filtered by time', async () => {
    expectIndexed(await sqlOf(() => repo.listEvents({ storeId, since: 0, until: Date.now(), limit: 26 })));
    // `since` bounds the index range through its id floor instead of filtering every newer event.
    const [sql] = await sqlOf(() => repo.listEvents({ storeId, since: 0, sinceId: 'evt_0000000000', limit: 26 }));
    expect(plan(repo.sqlite, sql!).some((d) => /\bid>\?/.test(d))).toBe(true);
  });
  it("listEvents filtered by external event id or by trigger (the seat's Events search)", async () => {
    expectIndexed(await sqlOf(() => repo.listEvents({ storeId, externalEventId: 'ext-1', limit: 26 })));
    expectIndexed(await sqlOf(() => repo.listEvents({ storeId, triggerVariant: 'order', outcome: 'failed', beforeId: eventId, limit: 26 })));
    const [sql] = await sqlOf(() => repo.listEvents({ storeId, triggerVariant: 'order', limit: 26 }));
    // The trigger's endpoints are found on endpoints_store_idx, once, not per event.
    expect(plan(repo.sqlite, sql!).some((d) => /endpoints_store_idx/.test(d))).toBe(true);
  });
  it('listEvents with every filter and a cursor', async () => {
    expectIndexed(await sqlOf(() => repo.listEvents({ storeId, endpointId, outcome: 'delivered', since: 0, until: Date.now(), beforeId: eventId, limit: 26 })));
  });
  it("listEvents of unconfirmed deliveries: the store's events newest first on (store_id, id), each delivered one probed on confirmations_event_idx", async () => {
    const sqls = await sqlOf(() => repo.listEvents({ storeId, unconfirmedBefore: Date.now(), limit: 26 }));
    expectIndexed(sqls);
    const detail = plan(repo.sqlite, sqls[0]!);
    if (PRINT) process.stderr.write(`${detail.join('\n')}\n`);
    // Delivered events are not in events_store_outcome_idx (db/types.ts, UNDELIVERED).
    expect(detail.some((d) => /^SEARCH "?events"? USING INDEX events_store_idx \(store_id=\?\)/.test(d))).toBe(true);
    expect(detail.some((d) => /SEARCH c USING (COVERING )?INDEX confirmations_event_idx \(store_id=\? AND event_id=\?\)/.test(d))).toBe(true);
    expect(detail.filter((d) => /^SCAN|TEMP B-TREE/.test(d))).toEqual([]);
  });
  it("confirmations: a run by its key, an event's newest, and the confirmed share of a window's deliveries", async () => {
    const sqls = [
      ...(await sqlOf(() => repo.getConfirmationRun('run-1'), 'confirmations')),
      ...(await sqlOf(() => repo.eventConfirmation(storeId, eventId), 'confirmations')),
      ...(await sqlOf(() => repo.confirmedShare(storeId, 0, 'evt_0000000000'), 'confirmations')),
    ];
    expect(sqls).toHaveLength(3);
    for (const sql of sqls) {
      const detail = plan(repo.sqlite, sql);
      if (PRINT) process.stderr.write(`${sql.replace(/\s+/g, ' ')}\n    ${detail.join('\n    ')}\n`);
      expect({ sql, scans: detail.filter((d) => /^SCAN/.test(d)) }).toEqual({ sql, scans: [] });
    }
    // The share ranges over the window's events only: (store_id, id) from the window's id floor.
    expect(plan(repo.sqlite, sqls[2]!).some((d) => /^SEARCH e USING INDEX events_store_idx \(store_id=\? AND id>\?\)/.test(d))).toBe(true);
  });
  it('getEvent', async () => {
    expectIndexed(await sqlOf(() => repo.getEvent(storeId, eventId)));
  });
  it('latestEvent, for the store and for one endpoint', async () => {
    expectIndexed([...(await sqlOf(() => repo.latestEvent(storeId))), ...(await sqlOf(() => repo.latestEvent(storeId, endpointId)))]);
  });
  it('listAttempts', async () => {
    expectIndexed(await sqlOf(() => repo.listAttempts(eventId), 'attempts'));
  });
  it("the worker's claim statement and its next-due lookup", async () => {
    const claim = constructed.filter((q) => /UPDATE events SET lease_until/.test(q));
    expect(claim).toHaveLength(1);
    expectIndexed([...claim, ...(await sqlOf(() => repo.nextDueAt()))]);
  });
  it('setup state and reliability reads: outcome counts, attempts since, backlog, auth failures', async () => {
    expectIndexed([
      ...(await sqlOf(() => repo.pendingStats(storeId))),
      ...(await sqlOf(() => repo.pendingStats(storeId, endpointId))),
      ...(await sqlOf(() => repo.hasOutcome(storeId, 'test'))),
      ...(await sqlOf(() => repo.hasOutcome(storeId, 'delivered'))),
    ]);
    // Every outcome but delivered is one probe on the partial outcome index; delivered the store's events newest first.
    const [test] = await sqlOf(() => repo.hasOutcome(storeId, 'test'));
    expect(plan(repo.sqlite, test!)).toEqual(['SEARCH events USING COVERING INDEX events_store_outcome_idx (store_id=? AND outcome=?)']);
    const [delivered] = await sqlOf(() => repo.hasOutcome(storeId, 'delivered'));
    expect(plan(repo.sqlite, delivered!)).toEqual(['SEARCH events USING INDEX events_store_idx (store_id=?)']);
    for (const sql of [
      ...(await sqlOf(() => repo.countAuthFailures(storeId, 0), 'auth_failures')),
      ...(await sqlOf(() => repo.listAuthFailures(storeId, endpointId, 2), 'auth_failures')),
    ]) {
      expect(plan(repo.sqlite, sql).filter((d) => /^SCAN "?auth_failures"?\b/.test(d))).toEqual([]);
    }
  });
  it('the /metrics backlog: the count from the covering index, the oldest by one index search per pending outcome', async () => {
    const [sql] = await sqlOf(() => repo.handoffBacklog(storeId));
    expectIndexed([sql!]);
    const detail = plan(repo.sqlite, sql!);
    expect(detail.filter((d) => /SEARCH "?events"? USING COVERING INDEX events_store_outcome_idx/.test(d))).toHaveLength(1);
    expect(detail.filter((d) => /SEARCH "?events"? USING INDEX events_store_outcome_idx \(store_id=\? AND outcome=\?\)/.test(d))).toHaveLength(3);
    expect(detail.filter((d) => /TEMP B-TREE/.test(d))).toEqual([]);
  });
  it("reliability sums only the window's stats buckets, on the primary key", async () => {
    const [sql] = await sqlOf(() => repo.sumStats(storeId, 0), 'event_stats');
    const detail = plan(repo.sqlite, sql!);
    // One bounded range per width (5 minutes, hour, day), never a scan of the store's history.
    const ranges = detail.filter((d) =>
      /SEARCH "?event_stats"? USING (PRIMARY KEY|INDEX sqlite_autoindex_event_stats_1) \(store_id=\? AND width=\? AND bucket>\?( AND bucket<\?)?\)/.test(d),
    );
    expect(ranges).toHaveLength(3);
    expect(detail.filter((d) => /^SCAN "?event_stats"?/.test(d))).toEqual([]);
  });
  it("an event's body: the event by its key, then the body by its integer key", async () => {
    const sqls = constructed.filter((q) => /^\s*SELECT b\.body FROM events/.test(q));
    expect(sqls).toHaveLength(1);
    expect(new TextDecoder().decode((await repo.getEventBody(eventId))!)).toBe(orderEvent('ext-1'));
    const detail = plan(repo.sqlite, sqls[0]!);
    expect(detail).toEqual([
      expect.stringMatching(/^SEARCH e USING INDEX sqlite_autoindex_events_1 \(id=\?\)$/),
      expect.stringMatching(/^SEARCH b USING INTEGER PRIMARY KEY \(rowid=\?\)$/),
    ]);
  });
  it('the retention sweep reads the head of event_bodies in key order, a bounded number of rows, with no sort', async () => {
    const sqls = constructed.filter((q) => /\bevent_bodies\b/.test(q) && !/^\s*(INSERT|SELECT max|SELECT b\.body)/.test(q));
    expect(sqls).toHaveLength(2);
    for (const sql of sqls) {
      const detail = plan(repo.sqlite, sql);
      if (/^SELECT/.test(sql)) {
        expect(sql).toMatch(/ORDER BY key LIMIT \?$/);
        expect(detail).toEqual(['SCAN event_bodies']); // in rowid order: LIMIT ends it
      } else {
        expect(detail).toEqual(['SEARCH event_bodies USING INTEGER PRIMARY KEY (rowid<?)']);
      }
    }
  });
  it('the dedupe lookup', () => {
    const dedupe = constructed.filter((q) => /external_event_id = \?/.test(q) && /^\s*SELECT/.test(q));
    expect(dedupe).toHaveLength(1);
    expectIndexed(dedupe);
  });
});
