import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SqliteRepo, openSqliteRepo } from '../../db/sqlite/repo.ts';
import { openCore } from '../../src/boot.ts';
import type { ManualClock } from '../../src/lib/clock.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { until } from '../fixtures/handoff.ts';
import { addGrant, addStore, BASE, call, createEndpoint, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

setDefaultTimeout(60_000);

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** serve as `hookrelay serve` runs it: a SQLite file, the receipt commit and the handoff worker on the relay thread. */
async function serveWithRelayThread() {
  const dataDir = mkdtempSync(join(tmpdir(), 'hookrelay-relay-thread-'));
  dirs.push(dataDir);
  const log = memoryLog();
  const core = await openCore({ dataDir, log, config: { publicUrl: BASE } });
  const running = await startServer(core, { port: 0, host: '127.0.0.1', relayThread: true, logRequests: false });
  const env: TestEnv = { core, app: running.app, clock: core.clock as ManualClock, log, repo: core.repo as SqliteRepo };
  await addStore(env);
  const grant = await addGrant(env);
  const { endpoint, secret } = await createEndpoint(env, grant);
  return { dataDir, log, core, running, env, grant, endpoint, secret };
}

async function handoffCount(running: RunningServer, grant: string): Promise<number> {
  const res = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${grant}` } });
  const line = (await res.text()).split('\n').find((l) => l.startsWith('hookrelay_handoff_attempts_total{result="delivered"}'));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('serve on a SQLite file: the relay thread', () => {
  it('commits receipts off the request thread and hands them off there, with its log lines and counts in this process', async () => {
    const s = await serveWithRelayThread();
    expect(s.running.relay).not.toBeNull();
    // The request thread's connection never runs a receipt commit: the relay thread's own connection does.
    let commitsHere = 0;
    const commitIngest = s.core.repo.commitIngest.bind(s.core.repo);
    s.core.repo.commitIngest = (...args) => {
      commitsHere++;
      return commitIngest(...args);
    };
    const before = await handoffCount(s.running, s.grant);

    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => sendHook(s.env, s.endpoint, s.secret, orderEvent(`ext-thread-${i}`, 4500 + i))));
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(202));
    expect(commitsHere).toBe(0);

    // Each 202 is a stored receipt, and the thread's worker hands every one off.
    const delivered = async () => {
      const r = await call(s.env, 'GET', '/agent/v1/events?limit=100', { token: s.grant });
      return (r.json.data.events as { outcome: string }[]).filter((e) => e.outcome === 'delivered').length;
    };
    await until(async () => (await delivered()) === 40, 20_000);
    const ids = new Set(answers.map((a) => a.json.eventId));
    // The thread's lines reach this process's log a turn after its record commit.
    const logged = () => s.log.lines.filter((l) => l.includes('handoff (log destination)') && [...ids].some((id) => l.includes(id))).length;
    await until(async () => logged() === 40, 5_000);
    await until(async () => (await handoffCount(s.running, s.grant)) - before === 40, 5_000);
    await s.running.stop();
  });

  it("commits beside the request thread's own writes without a storage error (both connections write)", async () => {
    const s = await serveWithRelayThread();
    // Every agent call writes an audit row on the request thread's connection while the thread commits receipts,
    // which read before they write. The race this guards is shown deterministically in test/db/write-transaction.test.ts
    // (the torture suite's fuzz met it as three 503s before commits took the write lock at BEGIN).
    const hooks: Promise<{ status: number }>[] = [];
    const calls: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 300; i++) {
      hooks.push(sendHook(s.env, s.endpoint, s.secret, orderEvent(`ext-both-${i}`, 4700 + i)));
      if (i % 3 === 0) calls.push(call(s.env, 'GET', '/agent/v1/events?limit=5', { token: s.grant }));
    }
    const statuses = (await Promise.all(hooks)).map((h) => h.status);
    expect(statuses.filter((st) => st !== 202)).toEqual([]);
    // Past the read quota they answer 429, audited too: either way a row written, never a 5xx.
    expect((await Promise.all(calls)).filter((c) => c.status !== 200 && c.status !== 429)).toEqual([]);
    expect(((await (await fetch(`${s.running.url}/status`)).json()) as { status: string }).status).toBe('operational');
    await s.running.stop();
  });

  it('stops cleanly: what was answered 202 is on disk, and the thread is gone', async () => {
    const s = await serveWithRelayThread();
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => sendHook(s.env, s.endpoint, s.secret, orderEvent(`ext-stop-${i}`, 4600 + i))));
    await s.running.stop();
    const accepted = answers.filter((a) => a.status === 202).map((a) => a.json.eventId as string);
    expect(accepted.length).toBe(25);
    const reopened = await openSqliteRepo({ path: join(s.dataDir, 'hookrelay.db') });
    const storeId = (await reopened.listStores())[0]!.id;
    for (const id of accepted) expect(await reopened.getEvent(storeId, id)).not.toBeNull();
    await reopened.close();
    // A stopped thread refuses as storage would: nothing is silently dropped.
    await expect(s.running.relay!.commitIngest([], [])).rejects.toThrow();
  });

  it('answers 503 storage_unavailable and reports storage degraded once the thread has ended unasked', async () => {
    const s = await serveWithRelayThread();
    (s.running.relay as unknown as { thread: Worker }).thread.terminate();
    await until(async () => (await fetch(`${s.running.url}/status`)).status === 503, 5_000);
    const status = (await (await fetch(`${s.running.url}/status`)).json()) as { components: { name: string; code?: string; fault?: string }[] };
    expect(status.components.find((c) => c.name === 'storage')).toMatchObject({ code: 'storage_unavailable', fault: 'io' });
    const r = await sendHook(s.env, s.endpoint, s.secret, orderEvent('ext-after-loss'));
    expect(r.status).toBe(503);
    expect(r.json.code).toBe('storage_unavailable');
    expect(s.log.lines.some((l) => l.startsWith('error relay thread ended'))).toBe(true);
    await s.running.stop();
  });
});
