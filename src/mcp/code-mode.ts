/**
 * Runs agent code for `execute`: in a sandbox process (sandbox-process.ts) that no other grant's run has used, in a
 * fresh QuickJS instance, its `api.*` calls answered here, and hard stops the OS enforces. QuickJS's interrupt
 * handler ends ordinary runaway code on time; a loop of heavy native operations only reaches it every few thousand
 * steps, so a watchdog here kills the process once the CPU time it used running the code passes the CPU limit by a
 * grace, and a memory watch kills it past its resident-memory bound. Whatever ends the process ends the run, not
 * the server.
 *
 * The limit is CPU time, not time on the clock: on a busy host a run waits for a core without being charged for
 * it (where the OS does not tell a process's CPU time, its time running code on the clock is counted instead). A run
 * the host never lets run is still ended, at WALL_BACKSTOP times the limit on the clock.
 */
import { EXECUTE_CONCURRENCY, SANDBOX_PROCESS } from '../contract/limits.ts';
import type { McpConfig, SandboxLimits } from '../core.ts';
import type { SandboxError, SandboxOutcome } from './sandbox.ts';
import type { FromChild } from './sandbox-child.ts';
import { keepProcess, takeProcess } from './sandbox-process.ts';

const GRACE_MS = 250;
const MEMORY_WATCH_MS = 50;
/** A run is ended past this many times its CPU limit on the clock, however little CPU it was given meanwhile. */
const WALL_BACKSTOP = 20;

export type HostAnswer = { ok: true; value: unknown } | { ok: false; error: SandboxError };
/** Answers one `api.call` / `api.request` of the agent code (the request as the sandbox sent it). */
export type Host = (request: unknown) => Promise<HostAnswer>;

let running = 0;
const runningByStore = new Map<string, number>();

/**
 * Runs `code` for a store's grant in a sandbox process; always resolves, with a result or a stable error code. The
 * process is fresh or one the same grant's last run left (`grantId` null: always fresh); it is handed on only
 * after a run that ended by itself. Each store gets its fair share of the server's runs: past either cap the run
 * is refused with `sandbox_busy`.
 */
export async function runCode(code: string, limits: SandboxLimits, host: Host, storeId: string, grantId: string | null): Promise<SandboxOutcome> {
  const mine = runningByStore.get(storeId) ?? 0;
  const full = mine >= EXECUTE_CONCURRENCY.perStore ? 'store' : running >= EXECUTE_CONCURRENCY.perServer ? 'server' : null;
  if (full) return { ok: false, error: busy(full), logs: [], calls: 0 };
  running++;
  runningByStore.set(storeId, mine + 1);
  try {
    return await inProcess(code, limits, host, grantId);
  } finally {
    running--;
    const left = runningByStore.get(storeId)! - 1;
    if (left) runningByStore.set(storeId, left);
    else runningByStore.delete(storeId);
  }
}

function busy(scope: 'store' | 'server'): SandboxError {
  const { perStore, perServer, retryAfterSeconds } = EXECUTE_CONCURRENCY;
  const cap = scope === 'store' ? `${perStore} execute runs are in progress for this store` : `${perServer} execute runs are in progress on this server`;
  return {
    code: 'sandbox_busy',
    message: `${cap}; retry in ${retryAfterSeconds} s.`,
    scope,
    limit: scope === 'store' ? perStore : perServer,
    retryAfterSeconds,
  };
}

/**
 * Whether a run ended by itself, with a result or the code's own error (an uncaught exception, an API error it did
 * not catch), and not at a limit or a failure: only then may its process serve the grant's next run.
 */
const endedByItself = (o: SandboxOutcome) =>
  o.ok || o.error.code === 'sandbox_code_error' || !(o.error.code.startsWith('sandbox_') || o.error.code === 'internal_error');

async function inProcess(code: string, limits: SandboxLimits, host: Host, grantId: string | null): Promise<SandboxOutcome> {
  const proc = await takeProcess(limits.memoryBytes, grantId);
  if (!proc) return { ok: false, error: { code: 'mcp_code_mode_unavailable', message: 'The sandbox failed to load.' }, logs: [], calls: 0 };
  return new Promise((resolve) => {
    let finished = false;
    let calls = 0;
    let inflight = 0;
    /** Time on the clock the code ran before its current stretch, and when that stretch began (ms). */
    let ranMs = 0;
    let since = 0;
    /** The process's CPU time when the code started (null: the OS does not tell). */
    let cpuAtStart: number | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let ending: SandboxError | null = null;
    const finish = (error: SandboxError | null, outcome?: SandboxOutcome) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      clearInterval(watch);
      if (grantId !== null && outcome && !ending && endedByItself(outcome)) keepProcess(proc, limits.memoryBytes, grantId);
      else proc.kill();
      resolve(outcome ?? { ok: false, error: error!, logs: [], calls });
    };
    /** Ends the process for a limit; the run ends with that limit's code once the process is gone. */
    const stop = (error: SandboxError) => {
      ending ??= error;
      proc.kill();
    };
    /** Time on the clock the code has run, ms: not the time it waited on api calls. */
    const ran = (): number => ranMs + (inflight === 0 ? performance.now() - since : 0);
    /** CPU time the run has used, ms: its process's since the code started, else its time running code on the clock. */
    const used = (): number => {
      const cpu = cpuAtStart === null ? null : proc.cpuMs();
      return cpu === null ? ran() : cpu - cpuAtStart!;
    };
    /**
     * The watchdog is armed once, when the code starts, not around each api call (that cost a /proc read and two
     * timers per call): waiting on a call uses next to no CPU, and the backstop counts only the time the code ran.
     * CPU time never runs ahead of the clock, so it looks when the rest of the budget could at the earliest be spent,
     * and again until it is.
     */
    const watchdog = () => {
      const left = limits.cpuMs + GRACE_MS - used();
      if (left > 0 && ran() < WALL_BACKSTOP * limits.cpuMs) {
        timer = setTimeout(watchdog, Math.max(left, 10));
        return;
      }
      stop({
        code: 'sandbox_cpu_time_limit',
        message: `The code ran past the CPU time limit of ${limits.cpuMs} ms and was stopped.`,
        limitMs: limits.cpuMs,
      });
    };
    const watch = setInterval(() => {
      const rss = proc.residentBytes();
      if (rss !== null && rss > SANDBOX_PROCESS.residentBytes) {
        stop({
          code: 'sandbox_memory_limit',
          message: `The sandbox process passed its memory bound of ${SANDBOX_PROCESS.residentBytes / 1024 / 1024} MiB and was stopped.`,
          limitBytes: limits.memoryBytes,
        });
      }
    }, MEMORY_WATCH_MS);

    proc.onMessage = async (m: FromChild) => {
      if (m.type === 'started') {
        since = performance.now();
        cpuAtStart = proc.cpuMs();
        timer = setTimeout(watchdog, limits.cpuMs + GRACE_MS);
      } else if (m.type === 'done') {
        finish(null, m.outcome);
      } else if (m.type === 'call') {
        calls++;
        if (inflight++ === 0) ranMs += performance.now() - since;
        let answer: HostAnswer;
        try {
          answer = await host(JSON.parse(m.request));
        } catch {
          answer = { ok: false, error: { code: 'internal_error', message: 'The call failed on our side.' } };
        }
        if (finished || !proc.alive) return;
        proc.send({ type: 'answer', id: m.id, text: JSON.stringify(answer.ok ? { ok: true, value: answer.value ?? null } : answer) });
        if (--inflight === 0) since = performance.now();
      }
    };
    void proc.exited.then(() =>
      finish(ending ?? { code: 'sandbox_failed', message: 'The sandbox process stopped unexpectedly; the run was lost. Retry; a new sandbox is used.' }),
    );
    proc.send({ type: 'run', code, limits });
  });
}

let probe: Promise<boolean> | null = null;
/** A failed probe is asked again after this long: a sandbox that could not start on a busy host may start later. */
const PROBE_RETRY_MS = 30_000;

/**
 * Whether code mode can run here: off by configuration, or one trial run in a sandbox process. A success holds for
 * the process; a failure holds for PROBE_RETRY_MS, so a transient failure does not disable code mode for good.
 */
export function codeModeAvailable(config: McpConfig): Promise<boolean> {
  if (!config.codeMode) return Promise.resolve(false);
  probe ??= runCode('return 1', config.limits, async () => ({ ok: false, error: { code: 'invalid_input', message: 'No calls in the probe.' } }), '', null).then(
    (o) => {
      const ok = o.ok && o.result === 1;
      if (!ok) setTimeout(() => (probe = null), PROBE_RETRY_MS).unref();
      return ok;
    },
  );
  return probe;
}
