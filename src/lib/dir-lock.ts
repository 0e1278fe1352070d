/** The data directory's one-serve lock: a second `serve` on the same directory is refused, never run beside it. */
import { Database } from 'bun:sqlite';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../contract/errors.ts';

/**
 * Open lock databases, kept referenced for the life of the process: a collected handle would close and let
 * the lock go.
 */
const held = new Map<string, Database>();

/**
 * Takes the serve lock of `dataDir` for as long as this process lives, or throws a `conflict` naming the
 * directory and the holder's pid.
 *
 * The lock is an exclusive SQLite transaction on `serve.lock`, held open and never committed. SQLite takes it
 * with an OS byte-range lock (fcntl on Unix, LockFileEx on Windows), which the kernel drops when the process
 * ends however it ends: a kill -9 leaves no stale lock, unlike a pid file or a lock file created with O_EXCL.
 * Bun has no flock, and SQLite is already here. The main database is not locked, so admin commands keep
 * running beside `serve` through SQLite's own locking. The holder's pid sits in `serve.pid` beside it (the
 * locked file cannot be read while locked); it is only read when the lock is taken, so a dead holder's file
 * never blocks anyone.
 */
export function lockDataDir(dataDir: string): void {
  if (held.has(dataDir)) return;
  const db = new Database(join(dataDir, 'serve.lock'), { create: true });
  try {
    db.exec('PRAGMA busy_timeout = 0');
    db.exec('BEGIN EXCLUSIVE');
  } catch {
    db.close();
    const pid = holderPid(dataDir);
    throw new AppError(
      'conflict',
      `Another hookrelay serve${pid ? ` (pid ${pid})` : ''} is running on the data directory ${dataDir}. Stop it first, or give this one another --data-dir.`,
      { dataDir, pid },
    );
  }
  held.set(dataDir, db);
  writeFileSync(join(dataDir, 'serve.pid'), `${process.pid}\n`);
}

function holderPid(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dataDir, 'serve.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
