/**
 * Sandbox processes: `hookrelay __sandbox` (the same executable, a hidden subcommand) spawned with an IPC channel
 * and an OS bound on its address space, kept warm in a small pool. A grant's first run takes one from the pool; a
 * run that ended by itself may hand its process on to the same grant's next run (SANDBOX_REUSE), any other ends it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Subprocess } from 'bun';
import { SANDBOX_PROCESS, SANDBOX_REUSE } from '../contract/limits.ts';
import { COMPILED } from '../lib/compiled.ts';
import type { FromChild, ToChild } from './sandbox-child.ts';

/** The compiled binary runs the subcommand itself; from source, bun runs the entry. */
const COMMAND = COMPILED
  ? [process.execPath, '__sandbox']
  : [process.execPath, fileURLToPath(new URL('../../commands/index.ts', import.meta.url)), '__sandbox'];
/**
 * JavaScriptCore reserves its JIT's executable memory up front, more than the address-space bound leaves room for:
 * under `ulimit -v` it then runs with no JIT at all, QuickJS's WebAssembly interpreted. A smaller reservation fits,
 * and a process that serves a grant's runs gets QuickJS compiled.
 */
const JIT_RESERVATION_BYTES = 64 * 1024 * 1024;
/** Warm processes kept ready per memory size, so a run does not wait for a process to start. */
const POOL_SIZE = 2;
/** Starting a process and instantiating QuickJS; past this the sandbox counts as unable to load. */
const BOOT_TIMEOUT_MS = 15_000;
const PAGE_BYTES = 4096;
/** Clock ticks per second of /proc/PID/stat's CPU times (USER_HZ: 100 on every Linux build Bun runs on). */
const TICKS_PER_SECOND = 100;

export interface SandboxProcess {
  readonly pid: number;
  send(m: ToChild): void;
  /** Receives every message after `ready`. */
  onMessage: (m: FromChild) => void;
  /** Resolves once the process has ended, however it ended. */
  readonly exited: Promise<unknown>;
  readonly alive: boolean;
  /** Runs this process was handed. */
  runs: number;
  /** Resident memory in bytes, where the OS tells (Linux /proc); null elsewhere. */
  residentBytes(): number | null;
  /** CPU time the process has used (user and system), ms, where the OS tells (Linux /proc); null elsewhere. */
  cpuMs(): number | null;
  kill(): void;
}

const pools = new Map<number, Promise<SandboxProcess | null>[]>();
/** Processes handed to a run and not yet ended or kept. */
const inUse = new Set<SandboxProcess>();
/** Processes waiting for their grant's next run, the one idle longest first. */
const idle: { key: string; proc: SandboxProcess; since: number; timer: ReturnType<typeof setTimeout> }[] = [];

const keyOf = (grantId: string, memoryBytes: number) => `${grantId} ${memoryBytes}`;

/**
 * A process for a run with this memory cap, or null when none can start (code mode unavailable): one its grant's
 * last run left (`keepProcess`), else a fresh one from the pool. `grantId` null: never one another run used.
 */
export async function takeProcess(memoryBytes: number, grantId: string | null): Promise<SandboxProcess | null> {
  let proc = grantId === null ? null : takeIdle(keyOf(grantId, memoryBytes));
  if (!proc) {
    const pool = pools.get(memoryBytes) ?? [];
    pools.set(memoryBytes, pool);
    proc = await (pool.shift() ?? start(memoryBytes));
    if (proc && !proc.alive) proc = await start(memoryBytes);
    while (pool.length < POOL_SIZE) pool.push(start(memoryBytes));
  }
  if (proc) {
    proc.runs++;
    inUse.add(proc);
    void proc.exited.then(() => inUse.delete(proc));
  }
  return proc;
}

function takeIdle(key: string): SandboxProcess | null {
  for (let i = idle.length - 1; i >= 0; i--) {
    const kept = idle[i]!;
    if (kept.key !== key) continue;
    idle.splice(i, 1);
    clearTimeout(kept.timer);
    if (kept.proc.alive && Date.now() - kept.since < SANDBOX_REUSE.idleMs) return kept.proc;
    kept.proc.kill();
  }
  return null;
}

/**
 * After a run that ended by itself: the process waits for the same grant's next run with the same memory cap, or
 * ends when it has served its runs, holds too much memory, waits too long or is the oldest of too many waiting.
 */
export function keepProcess(proc: SandboxProcess, memoryBytes: number, grantId: string): void {
  inUse.delete(proc);
  const rss = proc.residentBytes();
  if (!proc.alive || proc.runs >= SANDBOX_REUSE.runs || (rss !== null && rss > SANDBOX_REUSE.residentBytes)) {
    proc.kill();
    return;
  }
  proc.onMessage = () => proc.kill(); // an idle process has nothing to say
  const kept = { key: keyOf(grantId, memoryBytes), proc, since: Date.now(), timer: setTimeout(() => retire(kept), SANDBOX_REUSE.idleMs) };
  kept.timer.unref();
  idle.push(kept);
  while (idle.length > SANDBOX_REUSE.idleProcesses) retire(idle[0]!);
}

function retire(kept: (typeof idle)[number]): void {
  const i = idle.indexOf(kept);
  if (i >= 0) idle.splice(i, 1);
  clearTimeout(kept.timer);
  kept.proc.kill();
}

/** The pids of sandbox processes running code now (tests end one mid-run to prove the server survives). */
export const runningSandboxPids = () => [...inUse].map((p) => p.pid);

/** Ends the warm and the idle processes (server shutdown); runs in flight end by themselves, within their limits. */
export async function closeSandboxes(): Promise<void> {
  const waiting = [...pools.values()].flat();
  pools.clear();
  for (const kept of [...idle]) retire(kept);
  for (const p of await Promise.all(waiting)) p?.kill();
}

/** Spawns one process and waits until QuickJS is loaded in it. */
function start(memoryBytes: number): Promise<SandboxProcess | null> {
  let proc: Subprocess;
  try {
    proc = Bun.spawn(limited(COMMAND), {
      env: { PATH: process.env.PATH ?? '', BUN_JSC_jitMemoryReservationSize: String(JIT_RESERVATION_BYTES) },
      stdin: 'ignore',
      stdout: 'ignore',
      stderr: 'ignore',
      serialization: 'json',
      ipc: (m: FromChild) => handle.onMessage(m),
    });
  } catch {
    return Promise.resolve(null);
  }
  proc.unref();
  const handle: SandboxProcess = {
    pid: proc.pid,
    send: (m) => {
      try {
        proc.send(m);
      } catch {
        proc.kill('SIGKILL'); // the channel is gone: the process ends, and its run with `sandbox_failed`
      }
    },
    onMessage: () => {},
    exited: proc.exited,
    runs: 0,
    get alive() {
      return proc.exitCode === null && proc.signalCode === null;
    },
    residentBytes() {
      try {
        return Number(readFileSync(`/proc/${proc.pid}/statm`, 'latin1').split(' ')[1]) * PAGE_BYTES;
      } catch {
        return null;
      }
    },
    cpuMs() {
      try {
        const stat = readFileSync(`/proc/${proc.pid}/stat`, 'latin1');
        // After the command name (in parentheses, which may hold spaces): state is field 3, utime 14, stime 15.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
      } catch {
        return null;
      }
    },
    kill: () => {
      inUse.delete(handle);
      proc.kill('SIGKILL');
    },
  };
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      handle.kill();
      resolve(null);
    }, BOOT_TIMEOUT_MS);
    handle.onMessage = (m) => {
      if (m.type !== 'ready') return;
      clearTimeout(timer);
      handle.onMessage = () => {};
      resolve(handle);
    };
    void proc.exited.then(() => {
      clearTimeout(timer);
      resolve(null);
    });
    handle.send({ type: 'warm', memoryBytes });
  });
}

/** The command under an address-space limit where a POSIX shell can set one. */
function limited(command: string[]): string[] {
  if (process.platform !== 'linux') return command;
  return ['/bin/sh', '-c', `ulimit -v ${Math.floor(SANDBOX_PROCESS.addressSpaceBytes / 1024)} && exec "$@"`, 'sh', ...command];
}
