/**
 * `hookrelay serve` with a box key that does not open the box's secrets (issue 35, finding 5), as real processes:
 * it exits 2 before listening with `secret_key_mismatch`, naming the variable and never the key, on SQLite and as a
 * second instance on PostgreSQL (that part runs only when HOOKRELAY_TEST_DATABASE_URL is set; CI sets it).
 */
import { describe, expect, it } from 'bun:test';
import { hmacHex } from '../../src/lib/crypto.ts';
import { closedPort } from '../cli/harness.ts';
import { runToExit, serveScratch, spawnServe, type ServeProcess } from '../fixtures/serve-process.ts';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';

const SHOP = 'boxkey.myshopify.com';
const KEY_A = 'ab'.repeat(32);
const KEY_B = 'cd'.repeat(32);
const scratch = serveScratch('boxkey');
const { running, dir } = scratch;

/** Starts serve and keeps it for the end of the file. */
const serve = async (dataDir: string, env: Record<string, string>) => {
  const s = await spawnServe(dataDir, closedPort(), { env });
  running.push(s);
  return s;
};

/** An endpoint made through the API of a running serve; its id and secret. */
const makeEndpoint = async (s: ServeProcess, token: string) => {
  const res = await fetch(`${s.url}/agent/v1/endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as any).data as { endpoint: { id: string }; secret: string };
};

const receipt = (s: ServeProcess, id: string, secret: string, ext: string) => {
  const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: ext, order: { id: 1 } });
  return fetch(`${s.url}/hooks/${id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) },
    body,
  });
};

/** serve run to its end with `env`: it must exit 2 before listening, saying why without the key. */
const refusedStart = async (dataDir: string, env: Record<string, string>, secrets: string[]) => {
  const r = await runToExit(['serve', '--port', String(closedPort()), '--data-dir', dataDir], dataDir, 60_000, env);
  expect(r.code).toBe(2);
  expect(r.json.error.code).toBe('secret_key_mismatch');
  expect(r.json.error.message).toContain('HOOKRELAY_SECRET_KEY');
  expect(r.stderr).not.toContain('listening on');
  for (const leak of [KEY_A, KEY_B, ...secrets]) expect(JSON.stringify(r.json) + r.stderr).not.toContain(leak);
  return r;
};

describe('serve on SQLite', () => {
  it('with another HOOKRELAY_SECRET_KEY than the box was served with exits 2 before listening; with its own key it serves', async () => {
    const box = dir('sqlite');
    expect((await runToExit(['init', '--shop', SHOP, '--data-dir', box], box)).code).toBe(0);
    const grant = await runToExit(['grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '1h', '--data-dir', box], box);
    expect(grant.code).toBe(0);
    const first = await serve(box, {});
    const { endpoint, secret } = await makeEndpoint(first, grant.json.token);
    expect((await receipt(first, endpoint.id, secret, 'sqlite-1')).status).toBe(202);
    first.proc.kill('SIGTERM');
    await first.proc.exited;

    await refusedStart(box, { HOOKRELAY_SECRET_KEY: KEY_B }, [secret]);

    // Its own key (the data directory's secret.key) still opens everything: nothing was changed by the refusal.
    const again = await serve(box, {});
    expect((await receipt(again, endpoint.id, secret, 'sqlite-2')).status).toBe(202);
  }, 120_000);

  it('a box with no endpoint yet is proven by the key check its first serve sealed', async () => {
    const box = dir('sqlite-empty');
    expect((await runToExit(['init', '--shop', SHOP, '--data-dir', box], box)).code).toBe(0);
    const first = await serve(box, {});
    first.proc.kill('SIGTERM');
    await first.proc.exited;
    await refusedStart(box, { HOOKRELAY_SECRET_KEY: KEY_B }, []);
  }, 120_000);
});

describe.if(!!TEST_DATABASE_URL)('serve on PostgreSQL', () => {
  it('a second instance with another HOOKRELAY_SECRET_KEY exits 2 before listening; the first keeps serving', async () => {
    const db = { HOOKRELAY_DATABASE_URL: await scratch.database() };
    const a = dir('pg-a');
    const b = dir('pg-b');
    expect((await runToExit(['init', '--shop', SHOP, '--data-dir', a], a, 60_000, { ...db, HOOKRELAY_SECRET_KEY: KEY_A })).code).toBe(0);
    const grant = await runToExit(['grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '1h', '--data-dir', a], a, 60_000, {
      ...db,
      HOOKRELAY_SECRET_KEY: KEY_A,
    });
    expect(grant.code).toBe(0);
    const first = await serve(a, { ...db, HOOKRELAY_SECRET_KEY: KEY_A });
    const { endpoint, secret } = await makeEndpoint(first, grant.json.token);

    const refused = await refusedStart(b, { ...db, HOOKRELAY_SECRET_KEY: KEY_B }, [secret]);
    expect(refused.json.error.message).toContain('PostgreSQL');
    expect(JSON.stringify(refused.json) + refused.stderr).not.toContain(db.HOOKRELAY_DATABASE_URL);

    expect((await receipt(first, endpoint.id, secret, 'pg-1')).status).toBe(202);
    // A second instance with the same key serves beside it.
    const second = await serve(b, { ...db, HOOKRELAY_SECRET_KEY: KEY_A });
    expect((await receipt(second, endpoint.id, secret, 'pg-2')).status).toBe(202);
  }, 120_000);
});
