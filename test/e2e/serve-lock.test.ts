/** One `serve` per data directory (a second is refused, a kill -9 leaves no stale lock); a busy port fails loudly. */
import { afterAll, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort } from '../cli/harness.ts';
import { runToExit, spawnServe, type ServeProcess } from '../fixtures/serve-process.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const root = mkdtempSync(join(tmpdir(), 'hookrelay-lock-'));
const dataDir = join(root, 'data');
mkdirSync(dataDir);
const started: ServeProcess[] = [];
afterAll(() => {
  for (const s of started) s.proc.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

it('refuses a second serve on the same data directory, naming it and the holder', async () => {
  const first = await spawnServe(dataDir, closedPort());
  started.push(first);

  const second = await runToExit(['serve', '--port', String(closedPort()), '--data-dir', dataDir], root);
  expect(second.code).toBe(4);
  expect(second.json.error.code).toBe('conflict');
  expect(second.json.error.message).toContain(dataDir);
  expect(second.json.error.message).toContain(`pid ${first.proc.pid}`);

  // Admin commands still write beside the running serve.
  const init = await runToExit(['init', '--shop', 'lock.myshopify.com', '--data-dir', dataDir], root);
  expect(init.code).toBe(0);
  expect(init.json.store.shopDomain).toBe('lock.myshopify.com');
}, 60_000);

it('starts again at once after the holder is killed with SIGKILL', async () => {
  const holder = started.pop()!;
  holder.proc.kill('SIGKILL');
  await holder.proc.exited;
  const next = await spawnServe(dataDir, closedPort());
  started.push(next);
  expect((await fetch(`${next.url}/status`)).status).toBe(200);
}, 60_000);

it('fails with a clear message when the port is already in use', async () => {
  const busy = new URL(started[0]!.url).port;
  const other = join(root, 'other');
  mkdirSync(other);
  const r = await runToExit(['serve', '--port', busy, '--data-dir', other], root);
  expect(r.code).toBe(4);
  expect(r.json.error.code).toBe('conflict');
  expect(r.json.error.message).toContain(`Port ${busy}`);
  expect(r.json.error.message).toContain('already in use');
}, 60_000);
