/** The PostgreSQL pool of one schema: every connection starts in it, with no query racing the caller's first one. */
import { describe, expect, it } from 'bun:test';
import pg from 'pg';
import { TEST_DATABASE_URL, testSchema } from '../fixtures/storage.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

describe.if(!!TEST_DATABASE_URL)('PostgreSQL pool in a schema', () => {
  it('sets search_path at connection start: concurrent first queries run in the schema, and pg sees no overlapping query', async () => {
    const schema = testSchema();
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL! });
    await admin.connect();
    await admin.query(`CREATE SCHEMA "${schema}"`);
    await admin.end();
    // A child process of its own: pg's deprecation warning is printed once per process.
    const script = `
      import { openPgPool } from '${ROOT}db/pg/repo.ts';
      const pool = openPgPool({ url: process.env.PG_URL, schema: process.env.PG_SCHEMA, max: 4 });
      const all = await Promise.all(Array.from({ length: 8 }, () => pool.query('SELECT current_schema() AS s')));
      console.log(JSON.stringify(all.map((r) => r.rows[0].s)));
      await pool.end();`;
    const child = Bun.spawn(['bun', '-e', script], { env: { ...process.env, PG_URL: TEST_DATABASE_URL!, PG_SCHEMA: schema }, stdout: 'pipe', stderr: 'pipe' });
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual(Array(8).fill(schema));
    expect(err).not.toContain('already executing a query');
  });
});
