/**
 * A backup taken from a running serve under load, restored into a fresh data directory: every event answered 202
 * before the backup began is in it, the restored box serves, and its endpoint secret still verifies a new signed
 * event. A restore onto the running box is refused while serve holds it.
 */
import { Database } from 'bun:sqlite';
import { afterAll, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hmacHex } from '../../src/lib/crypto.ts';
import { closedPort } from '../cli/harness.ts';
import { runToExit, spawnServe, type ServeProcess } from '../fixtures/serve-process.ts';

// These tests spawn the CLI and servers: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const root = mkdtempSync(join(tmpdir(), 'hookrelay-backup-load-'));
const servers: ServeProcess[] = [];
afterAll(() => {
  for (const s of servers) s.proc.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

const SHOP = 'backup-load.myshopify.com';

const send = (url: string, secret: string, n: number) => {
  const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: `bk-${n}`, order: { id: n } });
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) }, body });
};

it('a backup taken mid-stream holds every event acknowledged before it began; the restored box serves and verifies its endpoint secret', async () => {
  const dataDir = join(root, 'live');
  mkdirSync(dataDir);
  expect((await runToExit(['init', '--shop', SHOP, '--data-dir', dataDir], root)).code).toBe(0);
  const grant = await runToExit(['grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '1h', '--data-dir', dataDir], root);
  expect(grant.code).toBe(0);
  const server = await spawnServe(dataDir, closedPort());
  servers.push(server);
  const created = (await fetch(`${server.url}/agent/v1/endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${grant.json.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
  }).then((r) => r.json())) as any;
  const { endpoint, secret } = created.data;

  const acked: string[] = [];
  const refusals: string[] = [];
  let stop = false;
  let seq = 0;
  // Four senders on keep-alive connections until told to stop: the backup runs while they write.
  const senders = Array.from({ length: 4 }, async () => {
    while (!stop) {
      const res = await send(endpoint.url, secret, ++seq);
      const json = (await res.json()) as any;
      if (res.status === 202) acked.push(json.eventId);
      else refusals.push(`${res.status} ${json.code ?? json.status}`);
    }
  });
  while (acked.length < 200) await Bun.sleep(10);

  const ackedBefore = [...acked];
  const file = join(root, 'live.hrbk');
  const backup = await runToExit(['backup', '--to', file, '--include-key', '--data-dir', dataDir, '--actor', 'load test'], root);
  const ackedWhenDone = acked.length;
  expect(backup.code).toBe(0);
  expect(backup.json).toMatchObject({ dialect: 'sqlite', serveRunning: true, key: { included: true } });
  // It ran beside the writes, not after them.
  while (acked.length < ackedWhenDone + 100) await Bun.sleep(10);
  expect(ackedWhenDone).toBeGreaterThan(ackedBefore.length);

  // serve holds the box: restoring onto it is refused, and the refusal is in its audit trail.
  const onLive = await runToExit(['restore', '--from', file, '--data-dir', dataDir, '--force'], root);
  expect(onLive.code).toBe(4);
  expect(onLive.json.error.code).toBe('conflict');
  expect(onLive.json.error.message).toContain('stop serve first');

  stop = true;
  await Promise.all(senders);
  expect(refusals).toEqual([]);
  server.proc.kill('SIGTERM');
  expect(await server.proc.exited).toBe(0);

  const restoredDir = join(root, 'restored');
  const restored = await runToExit(['restore', '--from', file, '--data-dir', restoredDir], root);
  expect(restored.code).toBe(0);
  expect(restored.json.key.source).toBe('backup');

  const db = new Database(join(restoredDir, 'hookrelay.db'), { readonly: true });
  const stored = new Set(
    db
      .query<{ id: string }, []>('SELECT id FROM events')
      .all()
      .map((r) => r.id),
  );
  const integrity = db.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()?.integrity_check;
  const rows = db
    .query<{ op: string; outcome: string }, []>("SELECT operation_id AS op, outcome FROM audit_log WHERE actor_kind = 'human' ORDER BY at, id")
    .all();
  db.close();
  expect(integrity).toBe('ok');
  expect(ackedBefore.filter((id) => !stored.has(id))).toEqual([]);
  // A snapshot, not the box at the end: the events acknowledged after the backup returned are not in it.
  expect(stored.size).toBeLessThan(acked.length);
  expect(backup.json.counts.events).toBe(stored.size);
  expect(rows.map((r) => r.op)).toEqual(['initStore', 'issueGrant', 'restore']);

  const live = new Database(join(dataDir, 'hookrelay.db'), { readonly: true });
  const liveRows = live
    .query<{ op: string; outcome: string; label: string }, []>(
      "SELECT operation_id AS op, outcome, actor_label AS label FROM audit_log WHERE operation_id IN ('backup', 'restore') ORDER BY at, id",
    )
    .all();
  live.close();
  expect(liveRows).toEqual([
    { op: 'backup', outcome: 'ok', label: 'load test' },
    { op: 'restore', outcome: 'refused', label: expect.any(String) },
  ]);

  // The restored box serves: its endpoint secret verifies a new signed event, its grant still reads.
  const again = await spawnServe(restoredDir, closedPort());
  servers.push(again);
  const url = endpoint.url.replace(/^http:\/\/[^/]+/, again.url);
  const res = await send(url, secret, 1_000_000);
  expect(res.status).toBe(202);
  const bad = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex('whsec_not_the_secret', '{}') },
    body: '{}',
  });
  expect(bad.status).toBe(401);
  const events = await fetch(`${again.url}/agent/v1/events?limit=1`, { headers: { authorization: `Bearer ${grant.json.token}` } });
  expect(events.status).toBe(200);
  again.proc.kill('SIGTERM');
  expect(await again.proc.exited).toBe(0);
}, 180_000);
