/**
 * Moving a SQLite box to PostgreSQL: after the copy the same grant, endpoint secret and history work against
 * the PostgreSQL storage, and dedupe keeps its memory of the ids already received.
 */
import { Database } from 'bun:sqlite';
import { afterAll, describe, expect, it } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getTableColumns, getTableName, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import { copySqliteToPostgres } from '../../db/copy.ts';
import { migratePg, openPgPool, type PgRepo, openPgRepo } from '../../db/pg/repo.ts';
import * as pgSchema from '../../db/pg/schema.ts';
import { type SqliteRepo, openSqliteRepo } from '../../db/sqlite/repo.ts';
import { createCore, defaultConfig } from '../../src/core.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { createApp } from '../../src/server/app.ts';
import { TEST_DATABASE_URL, testSchema } from '../fixtures/storage.ts';
import { addGrant, addStore, BASE, call, createEndpoint, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function envOn(repo: SqliteRepo | PgRepo, key: Uint8Array, clock: ManualClock): TestEnv {
  const log = memoryLog();
  const core = createCore({ repo, box: new SecretBox(key), clock, log, config: defaultConfig({ publicUrl: BASE, env: () => undefined }) });
  return { core, app: createApp(core), clock, log, repo: repo as SqliteRepo };
}

describe.if(!!TEST_DATABASE_URL)('copy a SQLite box to PostgreSQL', () => {
  it('keeps every row: the grant, the endpoint secret, events with attempts and bodies, and dedupe memory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookrelay-copy-'));
    dirs.push(dir);
    const path = join(dir, 'hookrelay.db');
    const key = newSecretKey();
    const clock = new ManualClock();

    const before = envOn(await openSqliteRepo({ path }), key, clock);
    await addStore(before);
    const grant = await addGrant(before);
    const { endpoint, secret } = await createEndpoint(before, grant);
    for (let i = 0; i < 5; i++) expect((await sendHook(before, endpoint, secret, orderEvent(`ext-${i}`))).status).toBe(202);
    expect((await sendHook(before, endpoint, secret, orderEvent('ext-0'))).json.status).toBe('duplicate_suppressed');
    await new HandoffWorker(before.core).drain();
    const eventsBefore = (await call(before, 'GET', '/agent/v1/events?limit=100', { token: grant })).json.data.events;
    await before.app.writer.close();
    await before.core.repo.close();

    const schema = testSchema();
    const pool = openPgPool({ url: TEST_DATABASE_URL!, schema });
    await migratePg(pool, undefined, schema);
    const report = await copySqliteToPostgres(path, pool, clock.now() - 86400_000);
    expect(report.tables.events).toBe(6);
    expect(report.tables.attempts).toBe(5);
    expect(report.tables.event_bodies).toBe(5);
    expect(report.tables.dedupe_keys).toBe(5);
    // A second copy into the same database is refused and changes nothing.
    expect(copySqliteToPostgres(path, pool, 0)).rejects.toThrow('already holds stores');
    await pool.end();

    const after = envOn(await openPgRepo({ url: TEST_DATABASE_URL!, schema }), key, clock);
    try {
      const eventsAfter = (await call(after, 'GET', '/agent/v1/events?limit=100', { token: grant })).json.data.events;
      expect(eventsAfter).toEqual(eventsBefore);
      // The sealed secret opens with the same key: a signed event is accepted; a repeat id is still a duplicate.
      expect((await sendHook(after, endpoint, secret, orderEvent('ext-9'))).json.status).toBe('accepted');
      expect((await sendHook(after, endpoint, secret, orderEvent('ext-3'))).json.status).toBe('duplicate_suppressed');
      const detail = await call(after, 'GET', `/agent/v1/events/${eventsBefore.at(-1).id}`, { token: grant });
      expect(detail.json.data.event.attemptsDetail.map((a: { outcome: string }) => a.outcome)).toEqual(['delivered']);
    } finally {
      await after.app.writer.close();
      await after.core.repo.close();
    }
  });

  it('carries every column of every table with its type: one row in each SQLite table arrives equal on PostgreSQL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookrelay-copy-'));
    dirs.push(dir);
    const path = join(dir, 'hookrelay.db');
    await (await openSqliteRepo({ path })).close();

    const pgTables = new Map<string, PgTable>();
    for (const t of Object.values(pgSchema) as unknown[]) if (is(t, PgTable)) pgTables.set(getTableName(t), t);
    const STORE = 'st_01jz0000000000000000000000';
    const EP = 'ep_01jz0000000000000000000000';
    // A value of each column's own PostgreSQL type, none null, each distinct: bigints past 2^31, fractions
    // that need every bit of a double, text beyond ASCII, bytes that are not text. Keys that others point
    // at (the store, the endpoint) are shared so the foreign keys hold.
    const expected = new Map<string, Record<string, unknown>>();
    const sqlite = new Database(path, { strict: true });
    const names = (sqlite.query(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[])
      .map((r) => r.name)
      .filter((n) => n !== '__hookrelay_migrations' && !n.startsWith('sqlite_'));
    let i = 0;
    for (const name of names) {
      const table = pgTables.get(name);
      expect(table ? name : `${name} (no PostgreSQL table)`).toBe(name);
      const pgCols = new Map(Object.values(getTableColumns(table!)).map((c) => [c.name, c.getSQLType()]));
      const row: Record<string, unknown> = {};
      const sqliteOnly: Record<string, unknown> = {};
      for (const { name: col } of sqlite.query(`PRAGMA table_info(${name})`).all() as { name: string }[]) {
        i++;
        // How SQLite finds a body (its rowid, held on the event); PostgreSQL keys bodies by event id.
        if (`${name}.${col}` === 'events.body_key' || `${name}.${col}` === 'event_bodies.key') {
          sqliteOnly[col] = i;
          continue;
        }
        const type = pgCols.get(col);
        expect(type ? col : `${name}.${col} (no PostgreSQL column)`).toBe(col);
        if (col === 'store_id' || (name === 'stores' && col === 'id')) row[col] = STORE;
        else if (col === 'endpoint_id' || (name === 'endpoints' && col === 'id')) row[col] = EP;
        else if (type === 'text') row[col] = `${name}.${col} é€🙂 "'\\`;
        else if (type === 'integer') row[col] = 1_000_000 + i;
        else if (type === 'bigint') row[col] = 2 ** 41 + i;
        else if (type === 'double precision') row[col] = (i + 1) / 3;
        else if (type === 'boolean') row[col] = true;
        else if (type === 'bytea') row[col] = new Uint8Array([0, 255, 128, 10, i % 256]);
        else throw new Error(`${name}.${col}: no test value for PostgreSQL type ${type}`);
      }
      const all = { ...row, ...sqliteOnly };
      const cols = Object.keys(all);
      sqlite
        .query(`INSERT INTO ${name} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`)
        .run(...(cols.map((c) => (all[c] === true ? 1 : all[c])) as never[]));
      expected.set(name, row);
    }
    sqlite.close();
    // Every table the box can hold, the Shopify ones (budgets, links, webhooks, installs) among them.
    for (const name of [
      'platform_links',
      'shopify_webhooks',
      'oauth_states',
      'alerts',
      'alert_handoffs',
      'confirmations',
      'intents',
      'audit_log',
      'auth_failures',
      'records',
    ])
      expect(expected.has(name)).toBe(true);

    const schema = testSchema();
    const pool = openPgPool({ url: TEST_DATABASE_URL!, schema });
    try {
      await migratePg(pool, undefined, schema);
      const report = await copySqliteToPostgres(path, pool, 0);
      for (const [name, row] of expected) {
        expect([name, report.tables[name]]).toEqual([name, 1]);
        const got = await pool.query(`SELECT ${Object.keys(row).join(', ')} FROM ${name}`);
        const want = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v instanceof Uint8Array ? Buffer.from(v) : v]));
        expect({ [name]: got.rows }).toEqual({ [name]: [want] });
      }
    } finally {
      await pool.end();
    }
  });
});
