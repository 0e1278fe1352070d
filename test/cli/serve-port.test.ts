/**
 * A real `hookrelay serve --port 0`: the public URL it advertises (manifest, endpoint URLs) carries the port it
 * actually bound; a public URL set with `store set` wins over it; a Shopify store without the app secret warns.
 */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ENTRY } from './harness.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const box = adminBox('hookrelay-serve-');
const cwd = box.dir('work');
const SHOP = 'sp.myshopify.com';
const running: ReturnType<typeof Bun.spawn>[] = [];
afterAll(async () => {
  for (const p of running) p.kill('SIGTERM');
  await Promise.all(running.map((p) => p.exited));
  rmSync(box.root, { recursive: true, force: true });
});

/** Starts serve and reads stderr until the listening line; returns the bound base URL and everything logged so far. */
async function serve(dataDir: string, env: Record<string, string> = {}) {
  const proc = Bun.spawn(['bun', ENTRY, 'serve', '--port', '0', '--data-dir', dataDir], { cwd, env: { ...box.env, ...env }, stdout: 'ignore', stderr: 'pipe' });
  running.push(proc);
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let log = '';
  for (;;) {
    const m = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(log);
    if (m) {
      reader.releaseLock();
      return { url: m[1]!, port: Number(m[2]), log };
    }
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve exited before listening:\n${log}`);
    log += decoder.decode(value);
  }
}

function setUp(dataDir: string, ...initArgs: string[]): string {
  expect(admin(box, cwd, ['init', '--shop', SHOP, ...initArgs, '--data-dir', dataDir]).code).toBe(0);
  return admin(box, cwd, ['grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '1h', '--data-dir', dataDir]).json.token;
}

describe('serve --port 0', () => {
  it(
    'advertises the bound port in the manifest and in a created endpoint URL, and logs data dir and destination',
    async () => {
      const dataDir = join(box.root, 'data-a');
      const token = setUp(dataDir);
      const { url, port, log } = await serve(dataDir);
      expect(port).toBeGreaterThan(0);
      expect(log).toContain(`data directory ${dataDir} (from --data-dir`);
      expect(log).toContain(`store ${SHOP}: destination log`);
      expect(log).toContain(`public URL ${url})`);
      expect(log).not.toContain('HOOKRELAY_SHOPIFY_APP_SECRET');

      const manifest = (await (await fetch(`${url}/agent/v1/manifest`)).json()) as Record<string, unknown>;
      const text = JSON.stringify(manifest);
      expect(text).toContain(`${url}/agent/v1`);
      expect(text).not.toContain('127.0.0.1:0');

      const res = await fetch(`${url}/agent/v1/endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
      });
      expect(res.status).toBe(201);
      const body = (await res.json()) as { data: { endpoint: { id: string; url: string } } };
      expect(body.data.endpoint.url).toBe(`${url}/hooks/${body.data.endpoint.id}`);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'uses the public URL set with store set, and warns when a Shopify store has no app secret for the lifecycle callback',
    async () => {
      const dataDir = join(box.root, 'data-b');
      setUp(dataDir, '--destination', 'shopify', '--admin-token-env', 'SHOPIFY_ADMIN_TOKEN');
      expect(admin(box, cwd, ['store', 'set', '--public-url', 'https://relay.example.com', '--data-dir', dataDir]).code).toBe(0);
      const { url, log } = await serve(dataDir);
      expect(log).toContain('public URL https://relay.example.com)');
      expect(log).toContain(`store ${SHOP}: destination shopify (Admin API token from $SHOPIFY_ADMIN_TOKEN, NOT set)`);
      expect(log).toContain('HOOKRELAY_SHOPIFY_APP_SECRET is not set');
      const manifest = JSON.stringify(await (await fetch(`${url}/agent/v1/manifest`)).json());
      expect(manifest).toContain('https://relay.example.com/agent/v1');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'does not warn once the app secret is set',
    async () => {
      const dataDir = join(box.root, 'data-c');
      setUp(dataDir, '--destination', 'shopify', '--admin-token-env', 'SHOPIFY_ADMIN_TOKEN');
      const { log } = await serve(dataDir, { HOOKRELAY_SHOPIFY_APP_SECRET: 'app-secret-for-test', SHOPIFY_ADMIN_TOKEN: 'x' });
      expect(log).toContain('(Admin API token from $SHOPIFY_ADMIN_TOKEN, set)');
      expect(log).not.toContain('HOOKRELAY_SHOPIFY_APP_SECRET is not set');
      expect(log).not.toContain('app-secret-for-test');
    },
    SPAWN_TIMEOUT_MS,
  );
});
