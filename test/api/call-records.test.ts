/**
 * A call's records (src/server/steps/audit.ts): a read's unit on its usage meter and its audit row are written in
 * one transaction, both or neither, on either backend; a read call costs one commit for them.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { countStatements } from '../../scripts/bench/statement-counter.ts';
import { operations, type Operation } from '../../src/contract/operations.ts';
import { authenticateBearer, type Principal } from '../../src/ops/grants.ts';
import type { Call, Invoke } from '../../src/server/pipeline.ts';
import { addGrant, addStore, backend, count, createTestEnv, execSql, row, type TestEnv, testInvoke } from '../helpers.ts';

const counter = countStatements();

let env: TestEnv;
let invoke: Invoke;
let principal: Principal;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
  invoke = testInvoke(env);
  principal = await authenticateBearer(env.core, `Bearer ${await addGrant(env, 'observer')}`);
});

const getSetupState = operations.getSetupState as Operation;
const read = (requestId: string): Call => ({
  principal,
  expected: new Headers(),
  params: {},
  idempotencyKey: null,
  requestId,
  client: () => null,
  surface: 'mcp',
});
const simpleReads = async () => (await row<{ n: number }>(env, "SELECT COALESCE(SUM(used), 0) AS n FROM usage_counters WHERE meter = 'simple_reads'"))!.n;
const auditRows = (requestId: string, outcome: string) => count(env, 'audit_log', 'request_id = ? AND outcome = ?', requestId, outcome);

/** Makes every insert into `table` fail in the database itself, as a storage fault would. */
async function refuseInserts(table: 'audit_log' | 'usage_counters'): Promise<void> {
  if (backend === 'postgres') {
    await execSql(env, `CREATE FUNCTION refuse_${table}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
    await execSql(env, `CREATE TRIGGER refuse_${table} BEFORE INSERT OR UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_${table}()`);
  } else {
    await execSql(env, `CREATE TRIGGER refuse_${table}_insert BEFORE INSERT ON ${table} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    await execSql(env, `CREATE TRIGGER refuse_${table}_update BEFORE UPDATE ON ${table} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
  }
}

describe('a read call writes its meter and its audit row together', () => {
  it('both, when the call is answered', async () => {
    const before = await simpleReads();
    expect((await invoke(getSetupState, read('req_both'))).status).toBe(200);
    expect((await simpleReads()) - before).toBe(1);
    expect(await auditRows('req_both', 'ok')).toBe(1);
  });

  it('neither, when the audit row cannot be written: the call is not metered and fails', async () => {
    expect((await invoke(getSetupState, read('req_first'))).status).toBe(200); // the meter's row exists: the next count is an update
    const before = await simpleReads();
    await refuseInserts('audit_log');
    const a = await invoke(getSetupState, read('req_unaudited'));
    expect(a.status).toBeGreaterThanOrEqual(500);
    expect(await simpleReads()).toBe(before);
    expect(await count(env, 'audit_log', 'request_id = ?', 'req_unaudited')).toBe(0);
  });

  it('neither, when the meter cannot be counted: the call fails, audited as an error and not as answered', async () => {
    expect((await invoke(getSetupState, read('req_first'))).status).toBe(200);
    const before = await simpleReads();
    await refuseInserts('usage_counters');
    const a = await invoke(getSetupState, read('req_unmetered'));
    expect(a.status).toBeGreaterThanOrEqual(500);
    expect(await simpleReads()).toBe(before);
    expect(await auditRows('req_unmetered', 'ok')).toBe(0);
    expect(await auditRows('req_unmetered', 'error')).toBe(1);
  });

  it('in one commit: a read call begins one transaction that writes (on PostgreSQL one more, the rate windows)', async () => {
    await invoke(getSetupState, read('req_warm'));
    const before = counter.transactions;
    for (let i = 0; i < 10; i++) expect((await invoke(getSetupState, read(`req_count_${i}`))).status).toBe(200);
    // SQLite counts the rate windows in memory (one process); PostgreSQL in the database, across instances.
    expect(counter.transactions - before).toBe(backend === 'postgres' ? 20 : 10);
  });
});
