/**
 * The sandbox process (`hookrelay __sandbox`): it serves one grant's `execute` runs, one at a time, each in a fresh
 * QuickJS instance with its own WebAssembly memory (only the compiled code is shared), and shares no memory with the
 * server: whatever happens in it (a WebAssembly abort, running out of memory) ends this process only.
 * Protocol over the IPC channel, by message: in `{type: 'warm', memoryBytes}` (load QuickJS ahead of a run),
 * `{type: 'run', code, limits}` and `{type: 'answer', id, text}`; out `{type: 'ready'}` (QuickJS loaded),
 * `{type: 'started'}` (the CPU clock starts), `{type: 'call', id, request}` and `{type: 'done', outcome}`.
 */
import type { QuickJSWASMModule } from 'quickjs-emscripten-core';
import { SANDBOX_MAX_CALL_BYTES } from '../contract/limits.ts';
import type { SandboxLimits } from '../core.ts';
import { loadQuickJs, runSandboxed, type SandboxOutcome } from './sandbox.ts';

export type ToChild =
  | { type: 'warm'; memoryBytes: number }
  | { type: 'run'; code: string; limits: SandboxLimits }
  | { type: 'answer'; id: number; text: string };
export type FromChild = { type: 'ready' } | { type: 'started' } | { type: 'call'; id: number; request: string } | { type: 'done'; outcome: SandboxOutcome };

const tooLarge = (bytes: number) =>
  JSON.stringify({
    ok: false,
    error: { code: 'payload_too_large', message: `This call is ${bytes} bytes of JSON; a call is limited to ${SANDBOX_MAX_CALL_BYTES}.`, status: null },
  });

/**
 * Serves runs on the IPC channel until the server ends it; resolves true when the parent goes away, false at once
 * when there is no channel (started by hand: only the server starts this).
 */
export function runSandboxChild(): Promise<boolean> {
  if (typeof process.send !== 'function') {
    process.stderr.write('hookrelay __sandbox is started by hookrelay serve for MCP code mode, not by hand.\n');
    return Promise.resolve(false);
  }
  const post = (m: FromChild) => process.send!(m);
  const waiting = new Map<number, (text: string) => void>();
  let nextId = 0;
  /** The next run's QuickJS, loaded ahead by `warm`; every run takes a fresh instance with fresh memory. */
  let next: { memoryBytes: number; module: Promise<QuickJSWASMModule> } | null = null;
  const take = (memoryBytes: number) => {
    const module = next?.memoryBytes === memoryBytes ? next.module : loadQuickJs(memoryBytes);
    next = null;
    return module;
  };
  const host = (request: string) => {
    const bytes = Buffer.byteLength(request);
    if (bytes > SANDBOX_MAX_CALL_BYTES) return Promise.resolve(tooLarge(bytes));
    return new Promise<string>((resolve) => {
      const id = ++nextId;
      waiting.set(id, resolve);
      post({ type: 'call', id, request });
    });
  };

  process.on('message', async (m: ToChild) => {
    if (m.type === 'answer') {
      waiting.get(m.id)?.(m.text);
      waiting.delete(m.id);
    } else if (m.type === 'warm') {
      next = { memoryBytes: m.memoryBytes, module: loadQuickJs(m.memoryBytes) };
      await next.module;
      post({ type: 'ready' });
    } else {
      const module = await take(m.limits.memoryBytes);
      post({ type: 'started' });
      // The instance is dropped after the run, not torn down: QuickJS asserts on teardown after some out-of-memory
      // states, and the answer must be sent first. Its memory goes with it (or with the process, after a limit).
      post({ type: 'done', outcome: await runSandboxed(module, m.code, host, m.limits, { dispose: false }) });
    }
  });
  return new Promise((resolve) => process.once('disconnect', () => resolve(true)));
}
