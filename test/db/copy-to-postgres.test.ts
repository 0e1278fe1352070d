/**
 * Moving a SQLite box to PostgreSQL: after the copy the same grant, endpoint secret and history work against
 * the PostgreSQL storage, and dedupe keeps its memory of the ids already received.
 */
import { afterAll, describe, expect, it } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copySqliteToPostgres } from '../../db/copy.ts';
import { migratePg, openPgPool, PgRepo } from '../../db/pg/repo.ts';
import { SqliteRepo } from '../../db/sqlite/repo.ts';
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

    const before = envOn(await SqliteRepo.open({ path }), key, clock);
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

    const after = envOn(await PgRepo.open({ url: TEST_DATABASE_URL!, schema }), key, clock);
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
});
