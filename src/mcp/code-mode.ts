/**
 * Runs agent code for `execute`: a fresh sandbox worker per run, its `api.*` calls answered here, and a hard
 * stop. QuickJS's interrupt handler ends ordinary runaway code on time; a loop of heavy native operations
 * only reaches it every few thousand steps, so a watchdog here terminates the worker once its own running
 * time (waiting on api calls excluded) passes the CPU limit by a grace.
 */
import type { McpConfig, SandboxLimits } from '../core.ts';
import type { SandboxError, SandboxOutcome } from './sandbox.ts';
import type { FromWorker, ToWorker } from './sandbox-worker.ts';

/** Set by scripts/build.ts: in the compiled binary the worker is an embedded entrypoint, found by its source path. */
declare const HOOKRELAY_SANDBOX_WORKER: string | undefined;
const WORKER = typeof HOOKRELAY_SANDBOX_WORKER === 'string' ? HOOKRELAY_SANDBOX_WORKER : new URL('./sandbox-worker.ts', import.meta.url);
const GRACE_MS = 250;
/** Runs at once on this server; each is a worker with its own sandbox memory. */
const MAX_CONCURRENT_RUNS = 8;
let running = 0;
/** Starting a worker and instantiating QuickJS; past this the sandbox counts as unable to load. */
const BOOT_TIMEOUT_MS = 15_000;

export type HostAnswer = { ok: true; value: unknown } | { ok: false; error: SandboxError };
/** Answers one `api.call` / `api.request` of the agent code (the request as the sandbox sent it). */
export type Host = (request: unknown) => Promise<HostAnswer>;

/** Runs `code` in a new sandbox worker; always resolves, with a result or a stable error code. */
export async function runCode(code: string, limits: SandboxLimits, host: Host): Promise<SandboxOutcome> {
  if (running >= MAX_CONCURRENT_RUNS) {
    return { ok: false, error: { code: 'sandbox_busy', message: `${MAX_CONCURRENT_RUNS} runs are in progress on this server; retry in a moment.` }, logs: [], calls: 0 };
  }
  running++;
  try {
    return await inWorker(code, limits, host);
  } finally {
    running--;
  }
}

function inWorker(code: string, limits: SandboxLimits, host: Host): Promise<SandboxOutcome> {
  return new Promise((resolve) => {
    const worker = new Worker(WORKER);
    let started = false;
    let finished = false;
    let calls = 0;
    let inflight = 0;
    let busyMs = 0;
    let since = 0;
    let timer = setTimeout(
      () => finish({ code: 'mcp_code_mode_unavailable', message: 'The sandbox did not start in time.' }),
      BOOT_TIMEOUT_MS,
    );
    const send = (m: ToWorker) => worker.postMessage(m);
    const finish = (error: SandboxError | null, outcome?: SandboxOutcome) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      worker.terminate();
      resolve(outcome ?? { ok: false, error: error!, logs: [], calls });
    };
    /** The watchdog runs only while the worker runs code, not while it waits on api calls. */
    const arm = () => {
      since = performance.now();
      timer = setTimeout(
        () => finish({ code: 'sandbox_cpu_time_limit', message: `The code ran past the CPU time limit of ${limits.cpuMs} ms and was stopped.`, limitMs: limits.cpuMs }),
        Math.max(0, limits.cpuMs + GRACE_MS - busyMs),
      );
    };
    const disarm = () => {
      clearTimeout(timer);
      busyMs += performance.now() - since;
    };

    worker.onmessage = async (e: MessageEvent<FromWorker>) => {
      const m = e.data;
      if (m.type === 'started') {
        started = true;
        clearTimeout(timer);
        arm();
      } else if (m.type === 'done') {
        finish(null, m.outcome);
      } else {
        calls++;
        if (inflight++ === 0) disarm();
        let answer: HostAnswer;
        try {
          answer = await host(JSON.parse(m.request));
        } catch {
          answer = { ok: false, error: { code: 'internal_error', message: 'The call failed on our side.' } };
        }
        if (finished) return;
        send({ type: 'answer', id: m.id, text: JSON.stringify(answer.ok ? { ok: true, value: answer.value ?? null } : answer) });
        if (--inflight === 0) arm();
      }
    };
    worker.onerror = () =>
      finish(started ? { code: 'sandbox_failed', message: 'The sandbox stopped unexpectedly.' } : { code: 'mcp_code_mode_unavailable', message: 'The sandbox failed to load.' });
    send({ type: 'run', code, limits });
  });
}

let probe: Promise<boolean> | null = null;

/** Whether code mode can run here: off by configuration, or one trial run in a worker (once per process). */
export function codeModeAvailable(config: McpConfig): Promise<boolean> {
  if (!config.codeMode) return Promise.resolve(false);
  probe ??= runCode('return 1', config.limits, async () => ({ ok: false, error: { code: 'invalid_input', message: 'No calls in the probe.' } })).then(
    (o) => o.ok && o.result === 1,
  );
  return probe;
}
