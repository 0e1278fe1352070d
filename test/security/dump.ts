/** Every row of every table as text, for canary searches in the security tests. */
import type { TestEnv } from '../helpers.ts';

/** Every row of every table, blobs decoded as UTF-8, keyed by table. */
export function dumpDatabase(env: TestEnv): Record<string, string> {
  const db = env.repo.sqlite;
  const tables = (db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
  const out: Record<string, string> = {};
  for (const table of tables) {
    const rows = db.query(`SELECT * FROM "${table}"`).all() as Record<string, unknown>[];
    out[table] = JSON.stringify(rows, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v));
  }
  return out;
}
