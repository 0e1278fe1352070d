/**
 * A SQLite box moved to PostgreSQL by `hookrelay migrate --from`: the marker it keeps, and what the marker refuses.
 * The marker is a `moved_to` setting row in the box's database (it travels with the file) and a MOVED note in its
 * data directory (for a person who lists it); either one marks the box. serve will not run on a moved box and admin
 * commands will not change it, so an old service cannot run beside the new one; reads still work. The new
 * location is named by dialect, database, host and port only, never by its URL.
 */
import { Database } from 'bun:sqlite';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../contract/errors.ts';
import { iso } from '../lib/clock.ts';
import type { PgTarget } from '../lib/pg-target.ts';

/** The settings key of the marker (a JSON MovedTo; JSON `null` once unmarked). */
const MOVED_SETTING = 'moved_to';
/** The note beside the database. */
const MOVED_FILE = 'MOVED';

export interface MovedTo {
  dialect: 'postgres';
  name: string;
  host: string;
  port: number;
  movedAt: string;
}

/** What marks a box: the new location when the marker says it (a hand-edited note may not), and the note's path. */
export interface MovedMarker {
  to: MovedTo | null;
  file: string | null;
}

interface SettingsWriter {
  putSetting(key: string, value: string, at: number): Promise<void>;
}

export const movedFile = (dataDir: string) => join(dataDir, MOVED_FILE);

/** "the PostgreSQL database hookrelay on db.internal:5432". */
export function describeMovedTo(to: MovedTo | null): string {
  return to ? `the PostgreSQL database ${to.name} on ${to.host}:${to.port}` : 'another database';
}

/**
 * Marks the box in `dataDir` moved to `target` (`migrate --from`, once its copy has committed): the setting row
 * first, then the note. The caller holds the box's serve lock.
 */
export async function markMoved(repo: SettingsWriter, dataDir: string, target: PgTarget, at: number): Promise<MovedTo> {
  const to: MovedTo = { dialect: 'postgres', name: target.name, host: target.host, port: target.port, movedAt: iso(at) };
  await repo.putSetting(MOVED_SETTING, JSON.stringify(to), at);
  writeFileSync(movedFile(dataDir), note(to, dataDir));
  return to;
}

/** Takes the marker off (`migrate --unmark-moved`): the box is served and changed again. */
export async function unmarkMoved(repo: SettingsWriter, dataDir: string, at: number): Promise<void> {
  await repo.putSetting(MOVED_SETTING, 'null', at);
  rmSync(movedFile(dataDir), { force: true });
}

/**
 * The box's marker, or null: read before the database is opened for use (nothing is migrated or written). A
 * database that cannot be read here is left to the open that follows to report; the note still marks the box.
 */
export function movedMarker(dataDir: string, databaseFile: string): MovedMarker | null {
  const file = movedFile(dataDir);
  const noted = existsSync(file);
  const to = peekSetting(databaseFile) ?? (noted ? parseMovedTo(readFileSync(file, 'utf8').trim().split('\n').at(-1) ?? '') : null);
  return to || noted ? { to, file: noted ? file : null } : null;
}

/**
 * The refusal of `serve` (or of an admin change) on a moved box: where it went, and the two ways past it. Exit 4.
 */
export function movedRefusal(marker: MovedMarker, dataDir: string, action: 'serve' | 'change'): AppError {
  const where = `This box (data directory ${dataDir}) was moved to ${describeMovedTo(marker.to)} by hookrelay migrate --from${marker.to ? ` at ${marker.to.movedAt}` : ''}`;
  const unmark = `hookrelay migrate --data-dir ${dataDir} --unmark-moved`;
  const message =
    action === 'serve'
      ? `${where}: serve it there (HOOKRELAY_DATABASE_URL and HOOKRELAY_SECRET_KEY), not this copy beside it. To serve this copy anyway: hookrelay serve --data-dir ${dataDir} --force-moved; to take it back into service for good: ${unmark}.`
      : `${where}: make changes there (--database-url or HOOKRELAY_DATABASE_URL); this copy is kept for reading only. To change it anyway, take it back into service first: ${unmark}.`;
  return new AppError('conflict', message, { dataDir, movedTo: marker.to, ...(marker.file ? { marker: marker.file } : {}) });
}

/** Refuses a change to the SQLite box in `dataDir` when it is marked moved (admin commands that write). */
export function refuseChangeIfMoved(dataDir: string, databaseFile: string): void {
  const marker = movedMarker(dataDir, databaseFile);
  if (marker) throw movedRefusal(marker, dataDir, 'change');
}

function peekSetting(databaseFile: string): MovedTo | null {
  if (!existsSync(databaseFile)) return null;
  let db: Database | undefined;
  try {
    db = new Database(databaseFile, { readwrite: true, create: false });
    db.exec('PRAGMA busy_timeout = 5000');
    const row = db.query('SELECT value FROM settings WHERE key = ?').get(MOVED_SETTING) as { value: string } | null;
    return row ? parseMovedTo(row.value) : null;
  } catch {
    return null; // no settings table yet (an old box), or a file the open that follows will report on
  } finally {
    db?.close();
  }
}

function parseMovedTo(text: string): MovedTo | null {
  try {
    const v = JSON.parse(text) as Partial<MovedTo> | null;
    if (v?.dialect !== 'postgres' || typeof v.name !== 'string' || typeof v.host !== 'string' || typeof v.port !== 'number') return null;
    return { dialect: 'postgres', name: v.name, host: v.host, port: v.port, movedAt: String(v.movedAt ?? '') };
  } catch {
    return null;
  }
}

/** The MOVED note: what happened, what to do, and (last line) the marker itself. */
function note(to: MovedTo, dataDir: string): string {
  return [
    `This hookrelay box was moved to ${describeMovedTo(to)} by hookrelay migrate --from at ${to.movedAt}.`,
    'Serve it there (HOOKRELAY_DATABASE_URL and HOOKRELAY_SECRET_KEY). hookrelay serve refuses to run on this copy and',
    'admin commands refuse to change it, so an old service cannot run beside the new one; reads still work.',
    `Serve this copy anyway: hookrelay serve --data-dir ${dataDir} --force-moved`,
    `Take it back into service for good: hookrelay migrate --data-dir ${dataDir} --unmark-moved`,
    JSON.stringify(to),
    '',
  ].join('\n');
}
