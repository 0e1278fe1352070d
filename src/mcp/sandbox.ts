/**
 * The code-mode sandbox: QuickJS compiled to WebAssembly (the single-file variant embeds the wasm, so the
 * compiled binary carries it). Agent code gets `api`, `console` and the language, nothing else: no fetch,
 * timers, modules, file system or host objects. Strings are the only thing that crosses the boundary.
 * This module runs inside the sandbox process (`sandbox-child.ts`); the server talks to it by messages.
 */
import variant from '@jitl/quickjs-singlefile-mjs-release-sync';
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSContext, type QuickJSHandle, type QuickJSWASMModule } from 'quickjs-emscripten-core';
import type { SandboxLimits } from '../core.ts';

export interface SandboxError {
  /** `sandbox_cpu_time_limit | sandbox_memory_limit | sandbox_call_limit | sandbox_result_too_large | sandbox_unsettled | sandbox_code_error`, or an uncaught ApiError's own code. */
  code: string;
  message: string;
  [fact: string]: unknown;
}

export type SandboxOutcome = { ok: true; result: unknown; logs: string[]; calls: number } | { ok: false; error: SandboxError; logs: string[]; calls: number };

/** The host side of `api.*`: the call as JSON text in, `{ok, value}` or `{ok: false, error}` as JSON text out. */
export type SandboxHost = (request: string) => Promise<string>;

const PAGE = 64 * 1024;
/** Pages the QuickJS build needs before any agent code runs (its INITIAL_MEMORY of 16 MiB). */
const BASE_PAGES = 256;

/** QuickJS compiled to machine code, once per process: every instance after the first is made from it. */
let compiled: WebAssembly.Module | undefined;

/**
 * A fresh QuickJS instance, with its own WebAssembly memory that can never grow past `memoryBytes` on top of the
 * build's base: the hard memory limit (QuickJS's own limit does not count string bytes in this build). Only the
 * compiled code is shared between instances, so JavaScriptCore compiles QuickJS once per process, not per run.
 */
export async function loadQuickJs(memoryBytes: number): Promise<QuickJSWASMModule> {
  const wasmMemory = new WebAssembly.Memory({ initial: BASE_PAGES, maximum: BASE_PAGES + Math.ceil(memoryBytes / PAGE) });
  if (compiled) return newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmModule: compiled, wasmMemory }));
  // The single-file variant keeps its wasm bytes inside its loader and hands them to
  // WebAssembly.instantiate(bytes, imports), whose answer carries the compiled Module: kept from this first load.
  const instantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = (async (...args: Parameters<typeof instantiate>) => {
    const made = (await instantiate(...args)) as WebAssembly.Instance | WebAssembly.WebAssemblyInstantiatedSource;
    if (!(made instanceof WebAssembly.Instance)) compiled = made.module;
    return made;
  }) as typeof instantiate;
  try {
    return await newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmMemory }));
  } finally {
    WebAssembly.instantiate = instantiate;
  }
}

/** Runs inside the sandbox once per run: defines `api`, `console`, `ApiError` and returns the runner. */
const PRELUDE = `(() => {
  const host = globalThis.__host, log = globalThis.__log;
  delete globalThis.__host; delete globalThis.__log;
  class ApiError extends Error {
    constructor(facts) { super(facts.message); this.name = 'ApiError'; Object.assign(this, facts); }
  }
  const invoke = async (request) => {
    const answer = JSON.parse(await host(JSON.stringify(request)));
    if (!answer.ok) throw new ApiError(answer.error);
    return answer.value;
  };
  const show = (v) => {
    if (typeof v === 'string') return v;
    try { return JSON.stringify(v) ?? String(v); } catch { return String(v); }
  };
  const write = (...args) => log(args.map(show).join(' '));
  globalThis.ApiError = ApiError;
  globalThis.api = Object.freeze({
    call: (operationId, input) => invoke({ kind: 'call', operationId, input: input ?? {} }),
    request: (method, path, body, options) => invoke({ kind: 'request', method, path, body, options: options ?? {} }),
  });
  globalThis.console = Object.freeze({ log: write, info: write, warn: write, error: write });
  const AsyncFunction = (async () => {}).constructor;
  return async (code) => {
    return JSON.stringify(await new AsyncFunction(code)()) ?? 'null';
  };
})()`;

/**
 * CPU time this thread has used (user and system), ms: the thread that runs QuickJS. Read twice per entry into the
 * VM, so it is the thread's (getrusage RUSAGE_THREAD) and not the process's, which costs a sum over every thread.
 */
function cpuNow(): number {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * Runs `code` as the body of an async function and returns its JSON result, or a stable error code: CPU time
 * (interrupt handler), memory (runtime limit), number of api calls, result size, a promise that can never
 * settle, or an uncaught exception (an uncaught ApiError keeps the API's own code, e.g. insufficient_scope).
 */
export async function runSandboxed(
  qjs: QuickJSWASMModule,
  code: string,
  host: SandboxHost,
  limits: SandboxLimits,
  { dispose = true }: { /** false when the process ends after the run anyway. */ dispose?: boolean } = {},
): Promise<SandboxOutcome> {
  const runtime = qjs.newRuntime();
  const logs: string[] = [];
  let logBytes = 0;
  let calls = 0;
  let stop: SandboxError | null = null;
  let clockUsed = 0;
  let cpuUsed = 0;
  let sliceStart = 0;
  let sliceCpu = 0;
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(512 * 1024);
  runtime.setInterruptHandler(() => {
    if (stop) return true;
    // The clock first (cheap): CPU time never runs ahead of it. Past it, the CPU time this process used decides, so
    // a run on a busy host is not charged for the time it waited for a core.
    if (clockUsed + performance.now() - sliceStart <= limits.cpuMs) return false;
    if (cpuUsed + cpuNow() - sliceCpu <= limits.cpuMs) return false;
    stop = { code: 'sandbox_cpu_time_limit', message: `The code ran past the CPU time limit of ${limits.cpuMs} ms and was stopped.`, limitMs: limits.cpuMs };
    return true;
  });
  /** Every entry into the VM is timed against the CPU budget. */
  const inVm = <T>(fn: () => T): T => {
    sliceStart = performance.now();
    sliceCpu = cpuNow();
    try {
      return fn();
    } finally {
      clockUsed += performance.now() - sliceStart;
      cpuUsed += cpuNow() - sliceCpu;
    }
  };
  const vm = runtime.newContext();
  const inflight = new Set<Promise<void>>();
  const outcome = (error: SandboxError | null, result?: unknown): SandboxOutcome =>
    error ? { ok: false, error, logs, calls } : { ok: true, result, logs, calls };

  try {
    vm.newFunction('__log', (line) => {
      const text = vm.getString(line);
      logBytes += Buffer.byteLength(text) + 1;
      if (logBytes <= limits.maxResultBytes) logs.push(text);
      else if (logs.at(-1) !== '(console output truncated)') logs.push('(console output truncated)');
    }).consume((fn) => vm.setProp(vm.global, '__log', fn));
    vm.newFunction('__host', (request) => {
      const deferred = vm.newPromise();
      if (++calls > limits.maxCalls) {
        stop ??= { code: 'sandbox_call_limit', message: `More than ${limits.maxCalls} api calls in one execute; split the work.`, limit: limits.maxCalls };
      }
      const answer = stop ? Promise.resolve(JSON.stringify({ ok: false, error: stop })) : host(vm.getString(request));
      const done = answer
        .catch(() => JSON.stringify({ ok: false, error: { code: 'internal_error', message: 'The call failed on our side.' } }))
        .then((text) => {
          if (!vm.alive) return;
          vm.newString(text).consume((h) => deferred.resolve(h));
          deferred.dispose();
        })
        .finally(() => inflight.delete(done));
      inflight.add(done);
      return deferred.handle;
    }).consume((fn) => vm.setProp(vm.global, '__host', fn));

    const runner = inVm(() => vm.evalCode(PRELUDE, 'prelude.js'));
    if (runner.error) {
      runner.error.dispose();
      return outcome({ code: 'internal_error', message: 'The sandbox could not start.' });
    }
    const started = runner.value.consume((fn) => vm.newString(code).consume((src) => inVm(() => vm.callFunction(fn, vm.undefined, src))));
    if (started.error) return outcome(stop ?? failure(vm, started.error, limits));
    const promise = started.value;
    try {
      for (;;) {
        const jobs = inVm(() => runtime.executePendingJobs());
        if (jobs.error) return outcome(stop ?? failure(vm, jobs.error, limits));
        if (stop) return outcome(stop);
        const state = vm.getPromiseState(promise);
        if (state.type === 'fulfilled') return outcome(...result(vm, state.value, limits));
        if (state.type === 'rejected') return outcome(failure(vm, state.error, limits));
        if (inflight.size === 0) {
          return outcome({
            code: 'sandbox_unsettled',
            message: 'The code awaited something that can never settle (there are no timers or events in the sandbox).',
          });
        }
        await Promise.race(inflight);
      }
    } finally {
      promise.dispose();
    }
  } finally {
    await Promise.allSettled(inflight);
    if (dispose) {
      vm.dispose();
      runtime.dispose();
    }
  }
}

/** The returned JSON text, parsed, unless it is over the size limit. */
function result(vm: QuickJSContext, handle: QuickJSHandle, limits: SandboxLimits): [SandboxError | null, unknown?] {
  const text = handle.consume((h) => vm.getString(h));
  const bytes = Buffer.byteLength(text);
  if (bytes > limits.maxResultBytes) {
    return [
      {
        code: 'sandbox_result_too_large',
        message: `The result is ${bytes} bytes of JSON; the limit is ${limits.maxResultBytes}. Return less (select fields, page).`,
        bytes,
        limit: limits.maxResultBytes,
      },
    ];
  }
  return [null, JSON.parse(text)];
}

/** An uncaught exception as a stable error: the memory limit, an ApiError's own facts, or the code's error. */
function failure(vm: QuickJSContext, handle: QuickJSHandle, limits: SandboxLimits): SandboxError {
  vm.runtime.setMemoryLimit(-1); // reading the error must not fail for the limit that raised it
  const err = handle.consume((h) => vm.dump(h)) as { name?: unknown; message?: unknown } | null;
  const name = typeof err?.name === 'string' ? err.name : 'Error';
  const message = typeof err?.message === 'string' ? err.message : String(err);
  if (name === 'InternalError' && message === 'out of memory') {
    return {
      code: 'sandbox_memory_limit',
      message: `The code ran out of its ${limits.memoryBytes / 1024 / 1024} MiB of sandbox memory and was stopped.`,
      limitBytes: limits.memoryBytes,
    };
  }
  if (name === 'ApiError' && err && typeof err === 'object') {
    const { name: _name, stack: _stack, ...facts } = err as Record<string, unknown>;
    return { ...facts, code: String(facts.code), message };
  }
  return { code: 'sandbox_code_error', message: `${name}: ${message}` };
}
