/** Starts and stops the checkpoint thread (checkpoint-thread.ts) for a SQLite file whose connections do not checkpoint. */
import type { CheckpointerInit } from './checkpoint-thread.ts';

declare const HOOKRELAY_COMPILED: boolean | undefined;

/** Beside this file from source; an entry point of its own in the compiled binary (scripts/build.ts). */
function entry(): string | URL {
  const compiled = typeof HOOKRELAY_COMPILED !== 'undefined' && HOOKRELAY_COMPILED;
  return compiled ? './db/sqlite/checkpoint-thread.ts' : new URL('./checkpoint-thread.ts', import.meta.url);
}

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * Resolves once the thread has its connection open. `onError` hears a failed checkpoint's code (it retries on
 * its next tick). Rejects when the thread cannot start: the caller then leaves SQLite's auto-checkpoint on.
 */
export async function startCheckpointer(init: CheckpointerInit, onError: (code: string) => void = () => {}): Promise<Checkpointer> {
  const thread = new Worker(entry(), { smol: true });
  // A message awaited from a Worker does not hold the event loop open: this timer does, while waiting.
  const wait = (what: string) => {
    let timer: ReturnType<typeof setTimeout>;
    return new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`checkpoint thread did not ${what} within 10 s`)), 10_000);
      thread.onmessage = (e: MessageEvent<{ t: string; code?: string }>) => {
        if (e.data.t === 'error') onError(e.data.code ?? 'error');
        else if (e.data.t === 'ready' || e.data.t === 'stopped') resolve();
      };
      thread.onerror = (e) => reject(new Error(`checkpoint thread failed: ${e.message}`));
    }).finally(() => clearTimeout(timer));
  };
  const ready = wait('start');
  thread.postMessage({ t: 'start', init });
  try {
    await ready;
  } catch (err) {
    thread.terminate();
    throw err;
  }
  thread.onmessage = (e: MessageEvent<{ t: string; code?: string }>) => {
    if (e.data.t === 'error') onError(e.data.code ?? 'error');
  };
  let stopped: Promise<void> | null = null;
  return {
    stop() {
      stopped ??= (async () => {
        const done = wait('stop');
        thread.postMessage({ t: 'stop' });
        await done.catch(() => {});
        thread.terminate();
      })();
      return stopped;
    },
  };
}
