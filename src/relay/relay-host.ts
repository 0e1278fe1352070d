/**
 * The relay thread as `serve`'s request thread sees it: a commit target for its ReceiptWriter, and the handoff
 * worker's wake-ups. The thread itself is relay-thread.ts; messages are in relay-protocol.ts.
 */
import type { PendingAuthFailure } from '../../db/repo.ts';
import type { CommittedReceipt, PendingReceipt } from '../../db/types.ts';
import type { Core } from '../core.ts';
import { COMPILED } from '../lib/compiled.ts';
import { metrics } from '../lib/instruments.ts';
import { fromThreadError, packReceipt, unpackCommitted, type FromThread, type ThreadConfig, type ToThread } from './relay-protocol.ts';
import type { IngestTarget } from './writer.ts';

/** The thread's entry: beside this file from source; an entry point of its own in the compiled binary (scripts/build.ts). */
function threadEntry(): string | URL {
  return COMPILED ? './src/relay/relay-thread.ts' : new URL('./relay-thread.ts', import.meta.url);
}

/** The thread is gone (crashed or stopped): commits answer as storage that cannot be reached, a 503. */
const THREAD_GONE = { name: 'RelayThreadGone', code: 'EIO', message: 'relay thread is not running' };

export interface RelayThreadOptions {
  sqlitePath: string;
  synchronous: 'FULL' | 'NORMAL';
  /** Run the handoff worker in the thread (serve's default). */
  worker: boolean;
}

export class RelayThread implements IngestTarget {
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (c: CommittedReceipt[]) => void; reject: (e: unknown) => void }>();
  private gone = false;
  private stopped: Promise<void> | null = null;
  private onStopped: (() => void) | null = null;
  /**
   * Holds this thread's event loop open while the relay thread lives: a message awaited from a Worker does not,
   * and a process whose loop empties exits at once (serve's stop awaited the last commit and was cut short).
   */
  private readonly keepAlive = setInterval(() => {}, 1 << 30);
  /** Told when the thread ends unasked (serve marks storage degraded: /status answers 503). */
  onLost: (err: Error) => void = () => {};

  private constructor(
    private readonly thread: Worker,
    private readonly core: Core,
  ) {}

  /** Starts the thread and resolves once its storage is open (rejects with the reason it could not be). */
  static async start(core: Core, opts: RelayThreadOptions): Promise<RelayThread> {
    // The thread starts with a copy of process.env (the store's token variable is read there).
    const thread = new Worker(threadEntry());
    const host = new RelayThread(thread, core);
    const { env: _env, ...config } = core.config;
    let deadline: ReturnType<typeof setTimeout> | undefined;
    await new Promise<void>((resolve, reject) => {
      deadline = setTimeout(() => reject(new Error('relay thread did not start within 30 s')), 30_000);
      thread.onmessage = (e: MessageEvent<FromThread>) => {
        if (e.data.t === 'ready') resolve();
        else if (e.data.t === 'failed') reject(fromThreadError(e.data.error));
        else host.receive(e.data);
      };
      thread.onerror = (e) => reject(new Error(`relay thread failed to start: ${e.message}`));
      host.send({
        t: 'init',
        sqlitePath: opts.sqlitePath,
        synchronous: opts.synchronous,
        config: config as ThreadConfig,
        worker: opts.worker,
        secretKey: core.box.key(),
      });
    })
      .catch(async (err: unknown) => {
        clearInterval(host.keepAlive);
        thread.terminate();
        throw err;
      })
      .finally(() => clearTimeout(deadline));
    thread.onmessage = (e: MessageEvent<FromThread>) => host.receive(e.data);
    thread.onerror = (e) => host.lost(e.message);
    thread.addEventListener('close', () => host.lost('exited'));
    return host;
  }

  commitIngest(receipts: PendingReceipt[], failures: PendingAuthFailure[]): Promise<CommittedReceipt[]> {
    if (this.gone) return Promise.reject(fromThreadError(THREAD_GONE));
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.send({ t: 'commit', id, receipts: receipts.map(packReceipt), failures });
    });
  }

  /** An endpoint changed: the thread's lookup forgets it. */
  endpointChanged(id: string): void {
    if (!this.gone) this.send({ t: 'endpoint', id });
  }

  /**
   * Commits what the thread holds, stops its worker (attempts in flight are recorded) and closes its connection.
   * After `ms` the thread is ended.
   */
  stop(ms = 30_000): Promise<void> {
    this.stopped ??= this.gone
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const deadline = setTimeout(() => {
            this.core.log.error('relay thread did not stop in time; ended it');
            resolve();
          }, ms);
          this.onStopped = () => {
            clearTimeout(deadline);
            resolve();
          };
          this.send({ t: 'stop' });
        }).then(() => {
          this.gone = true;
          clearInterval(this.keepAlive);
          this.thread.terminate();
        });
    return this.stopped;
  }

  private send(m: ToThread): void {
    this.thread.postMessage(m);
  }

  private receive(m: FromThread): void {
    switch (m.t) {
      case 'committed':
      case 'refused': {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.t === 'committed') w?.resolve(m.committed.map(unpackCommitted));
        else w?.reject(fromThreadError(m.error));
        return;
      }
      case 'log':
        for (const [level, message] of m.lines) this.core.log[level](message);
        return;
      case 'handoffs':
        for (const [storeId, result, n] of m.counts) metrics.handoff(storeId, result, n);
        return;
      case 'stopped':
        this.onStopped?.();
        return;
    }
  }

  /** The thread ended without being stopped: every commit waiting on it, and every later one, fails as storage. */
  private lost(reason: string): void {
    if (this.gone) return;
    this.gone = true;
    clearInterval(this.keepAlive);
    this.core.log.error(`relay thread ended (${reason}): receipts are refused with 503 until serve restarts`);
    this.onLost(fromThreadError(THREAD_GONE));
    for (const w of this.waiting.values()) w.reject(fromThreadError(THREAD_GONE));
    this.waiting.clear();
    this.onStopped?.();
  }
}
