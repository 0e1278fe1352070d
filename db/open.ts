/** One factory for storage: a path (or nothing) opens SQLite, a `postgres://` URL opens PostgreSQL. */
import type { Repo } from './repo.ts';

export interface StorageTarget {
  /** HOOKRELAY_DATABASE_URL or --database-url: `postgres://…` / `postgresql://…`. */
  url?: string | null;
  /** The SQLite file used when no URL is given. */
  sqlitePath: string;
  synchronous?: 'FULL' | 'NORMAL';
}

export function isPostgresUrl(url: string | null | undefined): url is string {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}

/** Opens and migrates the storage a deployment uses. The PostgreSQL driver is loaded only when one is named. */
export async function openStorage(target: StorageTarget): Promise<Repo> {
  if (isPostgresUrl(target.url)) {
    const { openPgRepo } = await import('./pg/repo.ts');
    return openPgRepo({ url: target.url });
  }
  const { openSqliteRepo } = await import('./sqlite/repo.ts');
  return openSqliteRepo({ path: target.sqlitePath, synchronous: target.synchronous });
}
