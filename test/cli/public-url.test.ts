/**
 * The URL serve advertises: `store set --public-url ''` clears the box-wide setting, and a wildcard host
 * (0.0.0.0, ::) is never advertised: serve warns once and advertises loopback until a public URL is given.
 */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';
import { ENTRY } from './harness.ts';

setDefaultTimeout(60_000);

const box = adminBox('hookrelay-public-url-');
const cwd = box.dir('work');
const SHOP = 'pu.myshopify.com';
const running: ReturnType<typeof Bun.spawn>[] = [];
afterAll(async () => {
  for (const p of running) p.kill('SIGTERM');
  await Promise.all(running.map((p) => p.exited));
  rmSync(box.root, { recursive: true, force: true });
});

/** serve with `args`, read until it listens: the port it bound and everything logged so far. */
async function serve(dataDir: string, args: string[]) {
  const proc = Bun.spawn(['bun', ENTRY, 'serve', '--port', '0', '--data-dir', dataDir, ...args], { cwd, env: box.env, stdout: 'ignore', stderr: 'pipe' });
  running.push(proc);
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let log = '';
  for (;;) {
    const m = /listening on http:\/\/\S+:(\d+) /.exec(log);
    if (m) {
      reader.releaseLock();
      return { port: Number(m[1]), log };
    }
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve exited before listening:\n${log}`);
    log += decoder.decode(value);
  }
}

const manifestOf = async (port: number) => JSON.stringify(await (await fetch(`http://127.0.0.1:${port}/agent/v1/manifest`)).json());

describe('the advertised public URL', () => {
  it(
    "store set --public-url '' clears the box-wide public URL, and serve advertises its own address again",
    async () => {
      const dataDir = join(box.root, 'data-clear');
      const run = (...args: string[]) => admin(box, cwd, [...args, '--data-dir', dataDir]);
      expect(run('init', '--shop', SHOP).code).toBe(0);
      expect(run('store', 'set', '--public-url', 'https://relay.example.com').json.settings.publicUrl).toBe('https://relay.example.com');

      const cleared = run('store', 'set', '--public-url', '');
      expect(cleared.code).toBe(0);
      expect(cleared.json).toMatchObject({ settings: { publicUrl: null }, changed: ['publicUrl'] });
      expect(cleared.json.note).toContain('cleared');
      expect(run('store', 'show').json.settings.publicUrl).toBeNull();
      // Clearing what is not set changes nothing.
      expect(run('store', 'set', '--public-url', '').json.changed).toEqual([]);

      const { port, log } = await serve(dataDir, []);
      expect(log).toContain(`public URL http://127.0.0.1:${port})`);
      const manifest = await manifestOf(port);
      expect(manifest).toContain(`http://127.0.0.1:${port}/agent/v1`);
      expect(manifest).not.toContain('relay.example.com');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'serve --host 0.0.0.0 without a public URL warns in one line and advertises 127.0.0.1, never 0.0.0.0',
    async () => {
      const dataDir = join(box.root, 'data-wild');
      expect(admin(box, cwd, ['init', '--shop', SHOP, '--data-dir', dataDir]).code).toBe(0);
      const { port, log } = await serve(dataDir, ['--host', '0.0.0.0']);
      const warnings = log.split('\n').filter((l) => l.includes('every interface'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('--public-url');
      expect(warnings[0]).toContain(`http://127.0.0.1:${port}`);
      expect(log).toContain(`public URL http://127.0.0.1:${port})`);
      const manifest = await manifestOf(port);
      expect(manifest).toContain(`http://127.0.0.1:${port}/agent/v1`);
      expect(manifest).not.toContain('0.0.0.0');

      // Given a public URL, the same host advertises it without a word.
      const other = join(box.root, 'data-wild-url');
      expect(admin(box, cwd, ['init', '--shop', SHOP, '--data-dir', other]).code).toBe(0);
      const withUrl = await serve(other, ['--host', '0.0.0.0', '--public-url', 'https://relay.example.com']);
      expect(withUrl.log).not.toContain('every interface');
      expect(await manifestOf(withUrl.port)).toContain('https://relay.example.com/agent/v1');
    },
    SPAWN_TIMEOUT_MS,
  );
});
