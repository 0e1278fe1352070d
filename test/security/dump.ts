/** Every row of every table as text, for canary searches in the security tests, on either backend. */
import { backend, rows, type TestEnv } from '../helpers.ts';

/** The storage's own tables: sqlite_master on SQLite, the test schema's base tables on PostgreSQL. */
const TABLES = {
  sqlite: "SELECT name FROM sqlite_master WHERE type = 'table'",
  postgres: "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
};

/** Every row of every table, blobs decoded as UTF-8, keyed by table. */
export async function dumpDatabase(env: TestEnv): Promise<Record<string, string>> {
  const tables = (await rows<{ name: string }>(env, TABLES[backend])).map((t) => t.name);
  if (tables.length === 0) throw new Error('no tables to dump: the canary search would pass vacuously');
  const out: Record<string, string> = {};
  for (const table of tables) {
    const all = await rows(env, `SELECT * FROM "${table}"`);
    out[table] = JSON.stringify(all, (_k, v) =>
      v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v?.type === 'Buffer' && Array.isArray(v.data) ? Buffer.from(v.data).toString('utf8') : v,
    );
  }
  return out;
}
