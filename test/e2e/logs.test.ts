/**
 * serve's log, on a real process: every answer carries X-Request-Id; its log line names the request, the client
 * address and, for an error, the support code its body shows; the agent API's error envelope and audit row carry
 * the same request id; a warning is one line with its time; `--log-format json` writes one JSON object per line.
 */
import { Database } from 'bun:sqlite';
import { afterAll, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort } from '../cli/harness.ts';
import { until } from '../fixtures/handoff.ts';
import { runToExit, spawnServe, type ServeProcess } from '../fixtures/serve-process.ts';

setDefaultTimeout(60_000);

const root = mkdtempSync(join(tmpdir(), 'hookrelay-logs-'));
const running: ServeProcess[] = [];
afterAll(async () => {
  for (const s of running) s.proc.kill('SIGKILL');
  await Promise.all(running.map((s) => s.proc.exited));
  rmSync(root, { recursive: true, force: true });
});

const REQUEST_ID = /^req_[0-9a-z]{26}$/;

it('text: a warning is one timed line; request lines carry request, client and support code', async () => {
  const dataDir = join(root, 'text');
  mkdirSync(dataDir);
  // No store yet: serve warns so, on one line.
  const server = await spawnServe(dataDir, closedPort());
  running.push(server);
  const missing = await fetch(`${server.url}/agent/v1/nowhere`);
  const body = (await missing.json()) as any;
  const id = missing.headers.get('x-request-id')!;
  expect(id).toMatch(REQUEST_ID);
  await until(() => server.stderr().includes(id), 5_000);
  const lines = server.stderr().split('\n');
  const warning = lines.find((l) => l.includes('No store yet'))!;
  expect(warning).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z WARN No store yet/);
  expect(lines.filter((l) => l.trim() === '')).toEqual(lines.at(-1) === '' ? [''] : []);
  const line = lines.find((l) => l.includes(id))!;
  expect(line).toContain(`GET /agent/v1/nowhere 404`);
  expect(line).toContain(`request=${id} client=127.0.0.1 support=${body.error.supportCode}`);
});

it('json: one object per line; the error envelope and the audit row carry the request id of the header and the log', async () => {
  const dataDir = join(root, 'json');
  mkdirSync(dataDir);
  expect((await runToExit(['init', '--shop', 'logs.myshopify.com', '--data-dir', dataDir], root)).code).toBe(0);
  const grant = await runToExit(['grant', 'issue', '--shop', 'logs.myshopify.com', '--tier', 'operator', '--ttl', '1h', '--data-dir', dataDir], root);
  const server = await spawnServe(dataDir, closedPort(), { env: { HOOKRELAY_LOG_FORMAT: 'json' } });
  running.push(server);
  const refused = await fetch(`${server.url}/agent/v1/endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${grant.json.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ triggerVariant: 'no-such-variant' }),
  });
  expect(refused.status).toBe(400);
  const body = (await refused.json()) as any;
  const id = refused.headers.get('x-request-id')!;
  expect(id).toMatch(REQUEST_ID);
  expect(body.error.requestId).toBe(id);

  const ok = await fetch(`${server.url}/status`);
  expect(ok.headers.get('x-request-id')).toMatch(REQUEST_ID);
  expect(ok.headers.get('x-request-id')).not.toBe(id);

  await until(() => server.stderr().includes(id), 5_000);
  const docs = server
    .stderr()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const d of docs) expect(Object.keys(d).slice(0, 3)).toEqual(['time', 'level', 'msg']);
  const line = docs.find((d) => d.request === id)!;
  expect(line).toMatchObject({
    level: 'info',
    msg: expect.stringContaining('POST /agent/v1/endpoints 400'),
    client: '127.0.0.1',
    support: body.error.supportCode,
  });

  const db = new Database(join(dataDir, 'hookrelay.db'), { readonly: true });
  const audited = db.query<{ request_id: string }, []>("SELECT request_id FROM audit_log WHERE operation_id = 'createEndpoint'").all();
  db.close();
  expect(audited.map((r) => r.request_id)).toEqual([id]);
});

it('refuses an unknown --log-format with exit 2', async () => {
  const dataDir = join(root, 'bad');
  mkdirSync(dataDir);
  const r = await runToExit(['serve', '--log-format', 'xml', '--port', String(closedPort()), '--data-dir', dataDir], root, 20_000);
  expect(r.code).toBe(2);
  expect(r.json.error.message).toContain('--log-format must be text or json');
});
