/**
 * The sandbox worker: one per `execute`, so a run shares no memory with another and the server can end it
 * at once (a runaway native operation never reaches QuickJS's interrupt check). Protocol, by message:
 * in `{type: 'run', code, limits}` and `{type: 'answer', id, text}`; out `{type: 'call', id, request}` and
 * `{type: 'started'}` (QuickJS loaded; the CPU clock starts) and `{type: 'done', outcome}`.
 */
import type { SandboxLimits } from '../core.ts';
import { loadQuickJs, runSandboxed, type SandboxOutcome } from './sandbox.ts';

declare const self: Worker;

export type ToWorker = { type: 'run'; code: string; limits: SandboxLimits } | { type: 'answer'; id: number; text: string };
export type FromWorker = { type: 'started' } | { type: 'call'; id: number; request: string } | { type: 'done'; outcome: SandboxOutcome };

const waiting = new Map<number, (text: string) => void>();
let nextId = 0;
const post = (m: FromWorker) => self.postMessage(m);

self.onmessage = async (e: MessageEvent<ToWorker>) => {
  const m = e.data;
  if (m.type === 'answer') {
    waiting.get(m.id)?.(m.text);
    waiting.delete(m.id);
    return;
  }
  const qjs = await loadQuickJs(m.limits.memoryBytes);
  const host = (request: string) =>
    new Promise<string>((resolve) => {
      const id = ++nextId;
      waiting.set(id, resolve);
      post({ type: 'call', id, request });
    });
  post({ type: 'started' });
  post({ type: 'done', outcome: await runSandboxed(qjs, m.code, host, m.limits) });
};
