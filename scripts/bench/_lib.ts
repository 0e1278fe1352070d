/** Shared bench plumbing: pinned child processes, /proc readings, percentiles, signing, the 1 KiB body. */
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import type { Subprocess } from 'bun';
import type { LoadSpec } from './load.ts';
import type { EventRow } from '../../db/types.ts';

export const ROOT = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');

/** `taskset` is used when present: the server on core 0, the load generator (and fakes) on core 1. */
const TASKSET = Bun.which('taskset');
const CORES = cpus().length;
export const PINNED = TASKSET !== null && CORES >= 2;

export function pinned(core: 0 | 1, cmd: string[]): string[] {
  return PINNED ? [TASKSET!, '-c', String(core), ...cmd] : cmd;
}

/** Lowercase hex HMAC-SHA256 of the exact bytes, as senders compute it. */
export function sign(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * A realistic 1 KiB (1024-byte) JSON event. No external_event_id: dedupe is per external id, and a load
 * generator repeats one body, so every copy would be suppressed as a duplicate instead of accepted.
 */
function oneKiBEvent(): string {
  const head = { event_type: 'order.flagged', source: 'bench', order: { id: 4501, name: '#4501', tags: ['bench'] } };
  const shell = JSON.stringify({ ...head, note: '' });
  const note = 'x'.repeat(1024 - Buffer.byteLength(shell));
  const body = JSON.stringify({ ...head, note });
  if (Buffer.byteLength(body) !== 1024) throw new Error('body is not 1 KiB');
  return body;
}

export interface Child {
  proc: Subprocess<'ignore', 'pipe', number | 'pipe' | 'ignore'>;
  pid: number;
  /** The first JSON line the child printed on stdout. */
  ready: Record<string, any>;
  /** Resolves with the remaining stdout once the child exits. */
  rest: Promise<string>;
}

/**
 * Spawns a child pinned to `core`, waits for its first stdout line (a JSON object) and returns it.
 * `stderrTo` is a file path (request logs) or 'ignore'.
 */
export async function spawnReady(
  core: 0 | 1,
  cmd: string[],
  opts: { stderrTo?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Child> {
  const stderr = opts.stderrTo && opts.stderrTo !== 'ignore' ? Bun.file(opts.stderrTo) : 'ignore';
  const proc = Bun.spawn(pinned(core, cmd), {
    cwd: ROOT,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: stderr as any,
    env: { ...process.env, ...opts.env },
  }) as Child['proc'];
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  while (!buf.includes('\n')) {
    let timer: Timer | undefined;
    const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), Math.max(1, deadline - Date.now()))));
    const chunk = await Promise.race([reader.read(), timeout]);
    clearTimeout(timer);
    if (chunk === 'timeout') {
      proc.kill();
      throw new Error(`${cmd.join(' ')}: no ready line in time`);
    }
    if (chunk.done) throw new Error(`${cmd.join(' ')}: exited (${await proc.exited}) before it was ready${buf ? `: ${buf}` : ''}`);
    buf += decoder.decode(chunk.value, { stream: true });
  }
  const nl = buf.indexOf('\n');
  const ready = JSON.parse(buf.slice(0, nl)) as Record<string, any>;
  const restStart = buf.slice(nl + 1);
  const rest = (async () => {
    let out = restStart;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return out;
      out += decoder.decode(value, { stream: true });
    }
  })();
  return { proc, pid: proc.pid, ready, rest };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the child is gone. */
export async function stop(child: Child | Subprocess, graceMs = 15_000): Promise<void> {
  const proc = 'proc' in child ? child.proc : child;
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await proc.exited;
  clearTimeout(t);
}

const CLK_TCK = (() => {
  const r = Bun.spawnSync(['getconf', 'CLK_TCK']);
  const n = Number(r.stdout?.toString().trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

/**
 * CPU seconds (user + system) a process has used so far, from /proc; null where /proc is missing. `children`: its
 * children's instead, those that ended and that it reaped (cutime + cstime) and those still running (a sandbox
 * process kept for its grant's next run is counted as it goes, not when it ends).
 */
export function cpuSeconds(pid: number, { children = false } = {}): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const at = children ? 13 : 11;
    const own = (Number(fields[at]) + Number(fields[at + 1])) / CLK_TCK;
    return children ? own + runningChildren(pid).reduce((sum, child) => sum + (cpuSeconds(child) ?? 0), 0) : own;
  } catch {
    return null;
  }
}

/** The pids of a process's children still running (any of its threads may have started them). */
function runningChildren(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) => {
    try {
      return readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  });
}

/**
 * CPU seconds of every process named `postgres` on this machine (the server and all its backends): what the
 * database costs beside the relay. Other clients of the same server (test suites) count too.
 */
export function postgresCpuSeconds(): number | null {
  let total = 0;
  let seen = false;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    const s = cpuSeconds(Number(pid));
    if (s != null) {
      total += s;
      seen = true;
    }
  }
  return seen ? total : null;
}

/** Group commits so far, from the relay's /metrics: how many, their receipts and their time until durable. */
export async function commitCounters(base: string, token: string): Promise<{ commits: number; receipts: number; seconds: number }> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  const read = (name: string) => Number(new RegExp(`^${name}(?:\\{\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    commits: read('hookrelay_commit_batch_size_count'),
    receipts: read('hookrelay_commit_batch_size_sum'),
    seconds: read('hookrelay_commit_seconds_sum'),
  };
}

/** /proc/stat's cpu line: [busy, steal] CPU seconds (busy: every field but idle and iowait, steal included). */
function cpuLine(): [busy: number, steal: number] | null {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
    return [(user + nice + system + irq + softirq + steal) / CLK_TCK, steal / CLK_TCK];
  } catch {
    return null;
  }
}

/** CPU seconds all processes of the machine have been busy, steal included. */
export function machineBusySeconds(): number | null {
  return cpuLine()?.[0] ?? null;
}

/** CPU seconds the hypervisor gave to other guests while this VM wanted the CPU (noise no process here causes). */
export function machineStealSeconds(): number | null {
  return cpuLine()?.[1] ?? null;
}

function status(pid: number, field: string): number | null {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Peak resident set size (VmHWM) of a live process, in MiB. */
export const peakRssMiB = (pid: number) => status(pid, 'VmHWM');

/** Current resident set size (VmRSS) of a live process, in MiB. */
export const rssMiB = (pid: number) => status(pid, 'VmRSS');

function percentile(sorted: ArrayLike<number>, p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return percentile(s, 50);
}

export const round = (n: number | null | undefined, digits = 1) => (n == null || !Number.isFinite(n) ? null : Math.round(n * 10 ** digits) / 10 ** digits);

export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

export function machine() {
  const cpuinfo = (() => {
    try {
      return readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      return '';
    }
  })();
  const model = /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1]?.trim() ?? cpus()[0]?.model ?? 'unknown';
  const mhz = /cpu MHz\s*:\s*([\d.]+)/.exec(cpuinfo)?.[1];
  const uname = Bun.spawnSync(['uname', '-sr']).stdout?.toString().trim() ?? '';
  const fs = Bun.spawnSync(['df', '-T', '/tmp']).stdout?.toString().trim().split('\n')[1]?.split(/\s+/)[1] ?? 'unknown';
  return {
    nproc: CORES,
    cpuModel: model,
    cpuMHz: mhz ? Number(mhz) : null,
    memTotalGiB: round(totalmem() / 1024 ** 3, 1),
    kernel: uname,
    tmpFilesystem: fs,
    bun: Bun.version,
    taskset: PINNED,
  };
}

export const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

/** POST/GET JSON with a bearer token; throws on a non-2xx answer. */
export async function api(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as any;
}

/** The 1 KiB event every ingest run posts. */
export const HOOK_BODY = oneKiBEvent();

/** The headers of a hook request carrying HOOK_BODY, signed with the endpoint's secret. */
export function hookHeaders(secret: string): Record<string, string> {
  return { 'content-type': 'application/json', 'x-hookrelay-signature': sign(secret, HOOK_BODY) };
}

/** A generic endpoint created over the Agent API: its hook URL and its secret. */
export async function createHookEndpoint(base: string, token: string, name: string): Promise<{ url: string; secret: string }> {
  const created = await api(base, token, 'POST', '/agent/v1/endpoints', { triggerVariant: 'generic', name });
  return { url: `${base}/hooks/${created.data.endpoint.id}`, secret: created.data.secret };
}

/** A load of signed HOOK_BODY posts to `url`. */
export function hookLoad(url: string, secret: string, shape: Pick<LoadSpec, 'connections' | 'warmupS' | 'durationS'>): LoadSpec {
  return { url, method: 'POST', headers: hookHeaders(secret), body: HOOK_BODY, ...shape };
}

/** Runs one statement on a connection of its own (create and drop a run's database on the PostgreSQL server). */
export async function pgStatement(url: string, sql: string): Promise<void> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/**
 * `n` requests, `concurrency` in flight (at most `perSecond` a second when given), stopping after `capMs` when given:
 * how many were sent and the answers by status (`network` for a request that got none).
 */
export async function flood(
  n: number,
  concurrency: number,
  request: (i: number) => Promise<Response>,
  o: { perSecond?: number; capMs?: number } = {},
): Promise<{ sent: number; answers: Record<string, number> }> {
  const answers: Record<string, number> = {};
  let sent = 0;
  const start = Date.now();
  const deadline = o.capMs ? start + o.capMs : Number.POSITIVE_INFINITY;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < n && Date.now() < deadline) {
        const i = sent++;
        if (o.perSecond) await Bun.sleep(Math.max(0, start + (i * 1000) / o.perSecond - Date.now()));
        try {
          const res = await request(i);
          await res.arrayBuffer();
          answers[res.status] = (answers[res.status] ?? 0) + 1;
        } catch {
          answers.network = (answers.network ?? 0) + 1;
        }
      }
    }),
  );
  return { sent, answers };
}

/** An accepted receipt's row as the inbound path builds it, due at `at`: the storage benches' events. */
export function receivedEvent(e: {
  id: string;
  receiptId: string;
  storeId: string;
  endpointId: string;
  bodyBytes: number;
  at: number;
  eventType: string;
}): EventRow {
  return {
    id: e.id,
    receiptId: e.receiptId,
    storeId: e.storeId,
    endpointId: e.endpointId,
    configVersion: 1,
    outcome: 'accepted',
    code: null,
    externalEventId: null,
    eventType: e.eventType,
    isTest: false,
    duplicateOf: null,
    resourceId: null,
    relatedResourceId: null,
    bodyBytes: e.bodyBytes,
    bodyRetention: 'retained',
    receivedAt: e.at,
    attempts: 0,
    lastAttemptAt: null,
    nextAttemptAt: e.at,
    leaseUntil: null,
    deliveredAt: null,
  };
}
