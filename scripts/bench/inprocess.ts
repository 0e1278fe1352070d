/**
 * `bun run bench:inprocess [--n=40000] [--connections=64]`: the receipt path without sockets or a load
 * generator. Signed 1 KiB events go straight into the app's fetch, `connections` at a time, with the real
 * synchronous=FULL group commit and the running handoff worker (log destination; log lines are counted, not
 * written). It waits until every receipt is delivered and reports the process's CPU per receipt, handoff
 * included. `--relay-thread=1` commits and hands off on a relay thread (serve with HOOKRELAY_RELAY_THREAD=on).
 *
 * The socket bench (`bun run bench`) is the verdict; this one leaves out HTTP parsing and the loader, so it
 * moves less when the host is busy, and it is quick to compare two trees with.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { SqliteRepo } from '../../db/sqlite/repo.ts';
import { openCore } from '../../src/boot.ts';
import type { Log } from '../../src/lib/log.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { initStore } from '../../src/ops/stores.ts';
import { reexecWithJscEnv } from '../../src/server/runtime-env.ts';
import { startServer } from '../../src/server/serve.ts';
import { HOOK_BODY, hookHeaders } from './_lib.ts';

// The receipt path runs as in `hookrelay serve`, with serve's JavaScriptCore options.
reexecWithJscEnv();

const { values: a } = parseArgs({
  options: { n: { type: 'string', default: '40000' }, connections: { type: 'string', default: '64' }, 'relay-thread': { type: 'string', default: '0' } },
});
const N = Number(a.n);
const C = Number(a.connections);
const WARMUP = 8_000;

let lines = 0;
const log: Log = { info: () => void lines++, warn: () => void lines++, error: (m) => process.stderr.write(`${m}\n`) };
const dir = mkdtempSync(join(tmpdir(), 'hookrelay-inprocess-'));
try {
  const core = await openCore({ dataDir: dir, log, synchronous: 'FULL' });
  await initStore(core, { shopDomain: 'bench.myshopify.com', plan: 'scale' });
  const grant = await issueGrant(core, { shopDomain: 'bench.myshopify.com', tier: 'admin_assistant', ttlMs: 3600_000, label: 'bench' });
  const running = await startServer(core, { port: 0, host: '127.0.0.1', worker: true, logRequests: false, relayThread: a['relay-thread'] === '1' });
  const app = running.app;
  const created = await app.fetch(
    new Request('http://bench.local/agent/v1/endpoints', {
      method: 'POST',
      headers: { authorization: `Bearer ${grant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ triggerVariant: 'generic', name: 'bench' }),
    }),
  );
  const { data } = (await created.json()) as { data: { endpoint: { id: string }; secret: string } };
  const body = new TextEncoder().encode(HOOK_BODY);
  const url = `http://bench.local/hooks/${data.endpoint.id}`;
  const headers = { ...hookHeaders(data.secret), 'content-length': String(body.byteLength) };

  const drive = async (count: number) => {
    let sent = 0;
    const client = async () => {
      while (sent < count) {
        sent++;
        const res = await app.fetch(new Request(url, { method: 'POST', headers, body }));
        if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: C }, client));
  };
  const sqlite = (core.repo as SqliteRepo).sqlite;
  const undelivered = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM events WHERE outcome != 'delivered'");
  const settle = async () => {
    // A count over every receipt: often enough to end soon after the last handoff, seldom enough to cost little.
    while (undelivered.get()!.n > 0) await Bun.sleep(50);
  };

  await drive(WARMUP);
  await settle();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await drive(N);
  const driven = process.cpuUsage(cpu0);
  const drivenSeconds = (performance.now() - t0) / 1000;
  await settle();
  const cpu = process.cpuUsage(cpu0);
  const seconds = (performance.now() - t0) / 1000;
  await running.stop();

  const result = {
    receipts: N,
    connections: C,
    cpuUsPerReceipt: Math.round(((cpu.user + cpu.system) / N) * 10) / 10,
    userUsPerReceipt: Math.round((cpu.user / N) * 10) / 10,
    systemUsPerReceipt: Math.round((cpu.system / N) * 10) / 10,
    receiptsPerSecond: Math.round(N / seconds),
    /** Until the last 202 only: what the receipts cost before the handoffs still running finish. */
    acceptedCpuUsPerReceipt: Math.round(((driven.user + driven.system) / N) * 10) / 10,
    acceptedPerSecond: Math.round(N / drivenSeconds),
  };
  process.stderr.write(
    `in process: ${result.cpuUsPerReceipt} µs CPU per receipt, handoff included (user ${result.userUsPerReceipt}, system ${result.systemUsPerReceipt}); ${result.receiptsPerSecond} receipts/s delivered; until the last 202: ${result.acceptedCpuUsPerReceipt} µs, ${result.acceptedPerSecond} receipts/s\n`,
  );
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
