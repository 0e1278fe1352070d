/** The SQLite box an admin command works on, and the refusal of a change to a box `migrate --from` moved. */
import { databasePath, locateDatabaseUrl, locateDataDir } from '../src/boot.ts';
import { refuseChangeIfMoved } from '../src/ops/moved-box.ts';

type StorageFlags = { 'data-dir'?: string; 'database-url'?: string };

/** The SQLite box the command works on (its data directory and database), or null on PostgreSQL. */
export function sqliteBox(args: StorageFlags): { dir: string; file: string } | null {
  if (locateDatabaseUrl(args['database-url'])) return null;
  const dir = locateDataDir(args['data-dir']).path;
  return { dir, file: databasePath(dir) };
}

/** Exit 4 before a command changes a box that was moved (its MOVED file or setting names where it went). */
export function refuseChangeToMovedBox(args: StorageFlags): void {
  const box = sqliteBox(args);
  if (box) refuseChangeIfMoved(box.dir, box.file);
}
