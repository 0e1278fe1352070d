/**
 * The WAL checkpointer of a SQLite `serve`, on a thread and connection of its own. A checkpoint copies the WAL's
 * pages into the database file and fsyncs both: about 25–40 ms for SQLite's default 1,000 pages here, which an
 * auto-checkpoint spent inside whichever commit crossed the mark, on the thread answering requests. Here a PASSIVE
 * checkpoint runs every `everyMs` (it never waits for writers, and with nothing new to copy it does nothing); the
 * next write then starts the WAL over. Frames it could not copy (a long reader) beyond `hardLimitFrames` get a
 * RESTART, which makes writers wait: the WAL stays bounded.
 */
import { Database } from 'bun:sqlite';

declare const self: Worker;

export interface CheckpointerInit {
  path: string;
  everyMs: number;
  /** Frames left in the WAL after a PASSIVE checkpoint beyond which the next one is a RESTART. */
  hardLimitFrames: number;
}

// Signals reach every thread; serve stops this one in order (see the relay thread).
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => {});

let timer: ReturnType<typeof setInterval> | null = null;
let db: Database | null = null;

self.onmessage = (e: MessageEvent<{ t: 'start'; init: CheckpointerInit } | { t: 'stop' }>) => {
  const m = e.data;
  if (m.t === 'stop') {
    if (timer) clearInterval(timer);
    db?.close();
    db = null;
    self.postMessage({ t: 'stopped' });
    return;
  }
  const { path, everyMs, hardLimitFrames } = m.init;
  db = new Database(path, { strict: true });
  db.exec('PRAGMA busy_timeout = 5000');
  let mode: 'PASSIVE' | 'RESTART' = 'PASSIVE';
  const checkpoint = db.query<{ busy: number; log: number; checkpointed: number }, []>(`PRAGMA wal_checkpoint(PASSIVE)`);
  const restart = db.query<{ busy: number; log: number; checkpointed: number }, []>(`PRAGMA wal_checkpoint(RESTART)`);
  timer = setInterval(() => {
    try {
      const r = (mode === 'PASSIVE' ? checkpoint : restart).get();
      mode = r && r.log - r.checkpointed > hardLimitFrames ? 'RESTART' : 'PASSIVE';
    } catch (err) {
      // Busy or failing storage: the next tick tries again; writes report their own faults.
      self.postMessage({ t: 'error', code: (err as { code?: string }).code ?? 'error' });
    }
  }, everyMs);
  self.postMessage({ t: 'ready' });
};
