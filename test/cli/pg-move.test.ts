/**
 * Moving a SQLite box to PostgreSQL end to end with the real CLI: init, grant and serve traffic on SQLite, then
 * `migrate --from sqlite:DIR` into a fresh database, then `serve` on PostgreSQL with the box's key: the old grant
 * works, the old endpoint accepts a signed event, and dedupe remembers the ids received before the move.
 */
import { afterAll, describe, expect, it } from 'bun:test';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { hmacHex, newSecretKey } from '../../src/lib/crypto.ts';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';
import { orderEvent } from '../helpers.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS, type AdminResult } from './admin-run.ts';
import { CANARY, dropCreated, freshDatabase, query, startServe, type Served } from './pg-db.ts';

const box = adminBox('hookrelay-pgmove-');
const cwd = box.dir('work');
const SHOP = 'move.myshopify.com';
const running: Served[] = [];
afterAll(async () => {
  for (const s of running) await s.stop();
  rmSync(box.root, { recursive: true, force: true });
  await dropCreated();
}, 60_000);

const seen: string[] = [];
function run(args: string[], env: Record<string, string> = {}): AdminResult {
  const r = admin(box, cwd, args, env);
  seen.push(JSON.stringify(r.json), r.stderr);
  return r;
}

async function serve(args: string[], env: Record<string, string> = {}) {
  const s = await startServe(args, { cwd, env: { ...box.env, ...env } });
  running.push(s);
  return s;
}

type Endpoint = { id: string; auth: { headerName: string } };

async function send(base: string, endpoint: Endpoint, secret: string, body: string) {
  const res = await fetch(`${base}/hooks/${endpoint.id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [endpoint.auth.headerName]: hmacHex(secret, body) },
    body,
  });
  return { status: res.status, json: (await res.json()) as any };
}

describe.if(!!TEST_DATABASE_URL)('migrate --from sqlite:PATH', () => {
  it(
    'moves a served SQLite box into PostgreSQL, where serve honours its grant, endpoint secret and dedupe memory',
    async () => {
      const dataDir = join(box.root, 'box');
      expect(run(['init', '--shop', SHOP, '--data-dir', dataDir]).code).toBe(0);
      const token = run(['grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '1h', '--data-dir', dataDir]).json.token as string;

      const onSqlite = await serve(['--data-dir', dataDir]);
      const created = await fetch(`${onSqlite.url}/agent/v1/endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
      });
      expect(created.status).toBe(201);
      const { endpoint, secret } = ((await created.json()) as { data: { endpoint: Endpoint; secret: string } }).data;
      expect((await send(onSqlite.url, endpoint, secret, orderEvent('ext-before'))).status).toBe(202);
      // The box is still served: the copy is refused rather than racing new receipts.
      const db = await freshDatabase();
      const busy = run(['migrate', '--from', `sqlite:${dataDir}`], { HOOKRELAY_DATABASE_URL: db.url });
      expect(busy.code).toBe(4);
      expect(busy.json.error.code).toBe('conflict');
      await onSqlite.stop();
      running.splice(running.indexOf(onSqlite), 1);

      // A key that does not open the box's endpoint secrets is refused before anything is written.
      const wrongKey = run(['migrate', '--from', `sqlite:${dataDir}`], {
        HOOKRELAY_DATABASE_URL: db.url,
        HOOKRELAY_SECRET_KEY: Buffer.from(newSecretKey()).toString('hex'),
      });
      expect(wrongKey.code).toBe(2);
      expect(wrongKey.json.error.message).toContain("does not open this box's endpoint secrets");
      expect(await query(db.url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")).toEqual([]);

      const moved = run(['migrate', '--from', `sqlite:${dataDir}`, '--database-url', db.url]);
      expect(moved.code).toBe(0);
      const keyFile = join(dataDir, 'secret.key');
      expect(moved.json).toMatchObject({ dialect: 'postgres', database: { name: db.name }, from: join(dataDir, 'hookrelay.db'), secretKey: keyFile });
      expect(moved.json.copied).toMatchObject({ stores: 1, grants: 1, endpoints: 1, events: 1, dedupe_keys: 1 });
      expect(moved.json.next[0]).toContain(`export HOOKRELAY_SECRET_KEY="$(cat ${keyFile})"`);
      expect(moved.stderr).toContain(`into the PostgreSQL database ${db.name} on 127.0.0.1:`);

      // The copied box is marked moved: copying it again is refused before any database is touched; taken back into
      // service, it still cannot be copied into a database that holds a store.
      const again = run(['migrate', '--from', `sqlite:${dataDir}`, '--database-url', db.url]);
      expect(again.code).toBe(4);
      expect(again.json.error.message).toContain(`was moved to the PostgreSQL database ${db.name}`);
      expect(run(['migrate', '--data-dir', dataDir, '--unmark-moved']).code).toBe(0);
      const twice = run(['migrate', '--from', `sqlite:${dataDir}`, '--database-url', db.url]);
      expect(twice.code).toBe(4);
      expect(twice.json.error.message).toContain('already holds a hookrelay store');
      // The box's own rows came along; each migrate that reached the database wrote one, never its URL or path.
      const audited = await query<{ operation_id: string; actor_kind: string; outcome: string; error_code: string | null; transition: string | null }>(
        db.url,
        "SELECT operation_id, actor_kind, outcome, error_code, transition FROM audit_log WHERE actor_kind = 'human' ORDER BY at, id",
      );
      expect(audited.map((r) => [r.operation_id, r.outcome, r.error_code])).toEqual([
        ['initStore', 'ok', null],
        ['issueGrant', 'ok', null],
        ['migrate', 'ok', null],
        ['migrate', 'refused', 'conflict'],
      ]);
      expect(audited[2]!.transition).toMatch(/^applied \d+ migrations; copied a SQLite box \(\d+ rows\)$/);
      expect(JSON.stringify(audited)).not.toMatch(new RegExp(`${CANARY}|postgres(ql)?://|${dataDir}`));

      const pgEnv = { HOOKRELAY_DATABASE_URL: db.url, HOOKRELAY_SECRET_KEY: readFileSync(keyFile, 'utf8').trim() };
      const instanceDir = join(box.root, 'instance-1');
      const onPg = await serve(['--data-dir', instanceDir], pgEnv);
      expect(onPg.log).toContain(`PostgreSQL database ${db.name} on 127.0.0.1:`);
      const events = await fetch(`${onPg.url}/agent/v1/events`, { headers: { authorization: `Bearer ${token}` } });
      expect(events.status).toBe(200);
      const listed = JSON.stringify(await events.json());
      expect(listed).toContain('ext-before');

      const fresh = await send(onPg.url, endpoint, secret, orderEvent('ext-after'));
      expect(fresh.status).toBe(202);
      expect(JSON.stringify(fresh.json)).toContain('accepted');
      const repeat = await send(onPg.url, endpoint, secret, orderEvent('ext-before'));
      expect(repeat.status).toBe(202);
      expect(JSON.stringify(repeat.json)).toContain('duplicate_suppressed');
      // The receipt lives in PostgreSQL, where every instance on the database sees it.
      expect(await query(db.url, "SELECT count(*)::int AS n FROM events WHERE external_event_id = 'ext-after'")).toEqual([{ n: 1 }]);
      expect(existsSync(instanceDir)).toBe(false);

      seen.push(await onPg.stop());
      running.splice(running.indexOf(onPg), 1);
      expect(seen.join('\n')).not.toContain(CANARY);
    },
    SPAWN_TIMEOUT_MS * 3,
  );
});
