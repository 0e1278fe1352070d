/**
 * The relay thread of a SQLite `serve`: the receipt commit and the handoff worker, on a connection of their own.
 * bun:sqlite is synchronous, so every fsync of a commit stalled the thread that also parses and verifies the next
 * requests; here it stalls only this thread. One thread holds both because SQLite takes one writer at a time:
 * two writer threads would only queue on its lock, and the worker takes receipts straight from the commit
 * (DirectHandoff) in the same transaction that stores them. Opt-in (HOOKRELAY_RELAY_THREAD=on): on one core its
 * second runtime cost more CPU and memory than the stall it removes (docs/benchmarks.md, seventh session).
 */
import type { EndpointRow, StoreRow } from '../../db/types.ts';
import { openStorage } from '../../db/open.ts';
import { createCore, type Core } from '../core.ts';
import { SecretBox } from '../lib/crypto.ts';
import type { Log } from '../lib/log.ts';
import { packCommitted, toThreadError, unpackReceipt, type FromThread, type ToThread } from './relay-protocol.ts';
import { EndpointRowsCache } from './endpoint-cache.ts';
import { HandoffWorker } from './worker.ts';
import { ReceiptWriter } from './writer.ts';

declare const self: Worker;

// Signals reach this thread too, and with no listener here Bun ends the whole process: serve's handler on the
// request thread stops this thread in order (the 'stop' message) instead.
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => {});

const post = (m: FromThread) => self.postMessage(m);

/**
 * Lines go to the serving thread's log, so they keep its sink and its escaping: gathered for one turn (the log
 * destination writes a line per handoff), warnings and errors at once.
 */
let lines: [level: 'info' | 'warn' | 'error', message: string][] = [];
const flushLines = () => {
  if (lines.length) post({ t: 'log', lines });
  lines = [];
};
const line = (level: 'info' | 'warn' | 'error') => (message: string) => {
  if (!lines.length) setImmediate(flushLines);
  lines.push([level, message]);
  if (level !== 'info') flushLines();
};
const log: Log = { info: line('info'), warn: line('warn'), error: line('error') };

let core: Core | null = null;
let writer: ReceiptWriter | null = null;
let worker: HandoffWorker | null = null;
let commits: Promise<void> = Promise.resolve();
/** Endpoints and their stores for receipts taken from a commit; changes made by the serving thread arrive as messages. */
let endpoints: EndpointRowsCache<{ row: EndpointRow; store: StoreRow; loadedAt: number }> | null = null;
/** Attempts recorded since the last report, per store and result. */
const handoffs = new Map<string, number>();

async function init(m: Extract<ToThread, { t: 'init' }>): Promise<void> {
  const repo = await openStorage({ url: null, sqlitePath: m.sqlitePath, synchronous: m.synchronous });
  // The same key as the serving thread: the handoff seals the platform tokens it obtains, and setup state opens them.
  const box = new SecretBox(m.secretKey);
  const c = (core = createCore({ repo, box, log, config: { ...m.config, env: (name) => process.env[name] } }));
  writer = new ReceiptWriter(repo, () => worker?.wake());
  if (!m.worker) return;
  worker = new HandoffWorker(c);
  worker.recordHandoff = (storeId, result) => {
    const key = `${storeId}\u0000${result}`;
    if (!handoffs.size) setTimeout(reportHandoffs, 250);
    handoffs.set(key, (handoffs.get(key) ?? 0) + 1);
  };
  endpoints = new EndpointRowsCache(c, (row, store, now) => ({ row, store, loadedAt: now }));
  worker.start();
  writer.handOffTo(worker.directHandoff((id) => endpoints!.get(id)));
}

function reportHandoffs(): void {
  if (!handoffs.size) return;
  const counts = [...handoffs].map(([key, n]) => {
    const [storeId, result] = key.split('\u0000') as [string, string];
    return [storeId, result, n] as [string, string, number];
  });
  handoffs.clear();
  post({ t: 'handoffs', counts });
}

/** A batch from the serving thread, answered once durable; the writer joins batches that arrive meanwhile. */
function commit(m: Extract<ToThread, { t: 'commit' }>): void {
  const w = writer!;
  const done = Promise.all([Promise.all(m.receipts.map((r) => w.submit(unpackReceipt(r)))), Promise.all(m.failures.map((f) => w.recordAuthFailure(f)))]);
  commits = done.then(
    ([committed]) => post({ t: 'committed', id: m.id, committed: committed.map(packCommitted) }),
    (err: unknown) => post({ t: 'refused', id: m.id, error: toThreadError(err) }),
  );
}

async function stop(): Promise<void> {
  await commits;
  await writer?.close();
  await worker?.stop();
  reportHandoffs();
  flushLines();
  await core?.repo.close();
  post({ t: 'stopped' });
}

self.onmessage = (e: MessageEvent<ToThread>) => {
  const m = e.data;
  switch (m.t) {
    case 'init':
      init(m).then(
        () => post({ t: 'ready' }),
        (err: unknown) => post({ t: 'failed', error: toThreadError(err) }),
      );
      return;
    case 'commit':
      return commit(m);
    case 'endpoint':
      endpoints?.invalidate(m.id);
      return;
    case 'stop':
      void stop();
      return;
  }
};
