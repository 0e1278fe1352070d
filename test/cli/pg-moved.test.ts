/**
 * `migrate --from sqlite:DIR` marks the SQLite box it copied: a MOVED note and a setting row naming the PostgreSQL
 * database by name, host and port (never its URL or password); serve on the old box then refuses with that
 * location, admin changes and a second copy are refused, and the PostgreSQL database itself is not marked.
 */
import { Database } from 'bun:sqlite';
import { afterAll, describe, expect, it } from 'bun:test';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS, type AdminResult } from './admin-run.ts';
import { CANARY, dropCreated, freshDatabase, query } from './pg-db.ts';

const box = adminBox('hookrelay-pgmark-');
const cwd = box.dir('work');
const SHOP = 'mark.myshopify.com';
afterAll(async () => {
  rmSync(box.root, { recursive: true, force: true });
  await dropCreated();
}, 60_000);

const seen: string[] = [];
function run(args: string[], env: Record<string, string> = {}): AdminResult {
  const r = admin(box, cwd, args, env);
  seen.push(JSON.stringify(r.json), r.stderr);
  return r;
}

describe.if(!!TEST_DATABASE_URL)('migrate --from marks the old box moved', () => {
  it(
    'serve on the copied SQLite box refuses, naming the PostgreSQL database without its credentials',
    async () => {
      const dataDir = join(box.root, 'box');
      expect(run(['init', '--shop', SHOP, '--data-dir', dataDir]).code).toBe(0);
      const db = await freshDatabase();
      const port = new URL(db.url).port || '5432';
      const where = `the PostgreSQL database ${db.name} on ${new URL(db.url).hostname}:${port}`;

      const moved = run(['migrate', '--from', `sqlite:${dataDir}`], { HOOKRELAY_DATABASE_URL: db.url });
      expect(moved.code).toBe(0);
      const note = join(dataDir, 'MOVED');
      expect(moved.json.movedMarker).toBe(note);
      expect(moved.json.next.at(-1)).toContain(`the SQLite box is marked moved (${note})`);

      // The marker: a note for a person and a row in the database, both naming where, neither holding the URL.
      expect(existsSync(note)).toBe(true);
      const text = readFileSync(note, 'utf8');
      expect(text).toContain(`moved to ${where}`);
      expect(text).toContain('--force-moved');
      const sqlite = new Database(join(dataDir, 'hookrelay.db'), { readonly: true });
      const row = sqlite.query("SELECT value FROM settings WHERE key = 'moved_to'").get() as { value: string };
      sqlite.close();
      expect(JSON.parse(row.value)).toMatchObject({ dialect: 'postgres', name: db.name, port: Number(port) });
      for (const stored of [text, row.value]) expect(stored).not.toMatch(new RegExp(`${CANARY}|postgres(ql)?://|postgres@`));

      const serve = run(['serve', '--port', '0', '--data-dir', dataDir]);
      expect(serve.code).toBe(4);
      expect(serve.json.error.code).toBe('conflict');
      expect(serve.json.error.message).toContain(`was moved to ${where}`);
      expect(serve.json.error.message).toContain('--force-moved');
      expect(serve.stderr).not.toContain('listening');

      expect(run(['store', 'set', '--public-url', 'https://relay.example.com', '--data-dir', dataDir]).code).toBe(4);
      expect(run(['store', 'show', '--data-dir', dataDir]).code).toBe(0);
      // Copied once: a second copy of the same box elsewhere is refused as a change to a moved box.
      const other = await freshDatabase();
      const again = run(['migrate', '--from', `sqlite:${dataDir}`], { HOOKRELAY_DATABASE_URL: other.url });
      expect(again.code).toBe(4);
      expect(again.json.error.message).toContain(`was moved to ${where}`);
      expect(await query(other.url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")).toEqual([]);

      // The new home is not marked.
      expect(await query(db.url, "SELECT count(*)::int AS n FROM settings WHERE key = 'moved_to'")).toEqual([{ n: 0 }]);
      expect(seen.join('\n')).not.toContain(CANARY);
    },
    SPAWN_TIMEOUT_MS * 2,
  );
});
