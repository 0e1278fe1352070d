import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binaryForTests } from '../fixtures/binary.ts';
import { cli, closedPort, scratchHome, startApi, type Api } from './harness.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const CHECKS = [
  'base_url_reachable',
  'manifest_readable',
  'edition_identity',
  'openapi_reachable',
  'docs_reachable',
  'grant_valid',
  'expected_context',
  'clock_skew',
  'lifecycle_callback',
];

let api: Api;
let home: ReturnType<typeof scratchHome>;
let token: string;

beforeAll(async () => {
  api = await startApi();
  home = scratchHome();
  token = await api.grant('operator');
});

afterAll(async () => {
  await api.stop();
  home.cleanup();
});

const run = (args: string[], env: Record<string, string | undefined>) => cli(['doctor', ...args], { home: home.dir, env });
interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
  skipped?: boolean;
}
const check = (r: { json: { checks: CheckResult[] } }, name: string) => r.json.checks.find((c) => c.name === name)!;

describe('doctor', () => {
  it('passes every named check against a healthy server and exits 0', async () => {
    const r = await run([], { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token, HOOKRELAY_EXPECTED_SHOP_DOMAIN: 'demo.myshopify.com' });
    expect(r.code).toBe(0);
    expect(r.json.ok).toBe(true);
    expect(r.json.checks.map((c: { name: string }) => c.name)).toEqual(CHECKS);
    expect(r.json.checks.every((c: { ok: boolean }) => c.ok)).toBe(true);
    expect(check(r, 'openapi_reachable').detail).toContain('2026-06-17');
    expect(check(r, 'grant_valid').detail).toMatch(/operator grant .* expires \d{4}-.*scopes: setup:read/);
    expect(check(r, 'expected_context').detail).toContain('the server agrees');
    expect(r.json.config.baseUrl.source).toBe('env');
    expect(r.json.config.token.source).toBe('env');
    expect(r.stdout + r.stderr).not.toContain(token);
  });

  it('says the config came from a profile', async () => {
    mkdirSync(join(home.dir, '.config/hookrelay'), { recursive: true });
    writeFileSync(
      join(home.dir, '.config/hookrelay/profiles.json'),
      JSON.stringify({ profiles: { lab: { baseUrl: api.url, tokenEnv: 'LAB_TOKEN', expectedInstallationId: 'inst-1' } } }),
    );
    const r = await run(['--profile', 'lab'], { LAB_TOKEN: token });
    expect(r.code).toBe(0);
    expect(r.json.config.profile).toEqual({ name: 'lab', source: 'flag' });
    expect(r.json.config.baseUrl).toMatchObject({ source: 'profile', from: 'profile lab baseUrl' });
    expect(r.json.config.token).toMatchObject({ source: 'profile', variable: 'LAB_TOKEN' });
    expect(r.json.config.expectedContext.installationId).toMatchObject({ value: 'inst-1', source: 'profile' });
  });

  it('fails expected_context (exit 3) when the grant belongs to another store', async () => {
    const r = await run(['--expect-shop-domain', 'other.myshopify.com'], { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token });
    expect(r.code).toBe(3);
    expect(r.json.ok).toBe(false);
    expect(check(r, 'expected_context')).toMatchObject({ ok: false, hint: expect.any(String) });
    expect(check(r, 'grant_valid').ok).toBe(true);
    expect(r.json.summary).toBe('7 of 9 checks passed.');
  });

  it('fails lifecycle_callback (exit 1) when the store hands off to Shopify but the server has no app secret', async () => {
    const { core } = api.env;
    const store = (await core.repo.getStoreByShop('demo.myshopify.com'))!;
    await core.repo.updateStore({ ...store, destination: 'shopify', adminTokenEnv: 'SHOPIFY_ADMIN_TOKEN' });
    const env = { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token };
    try {
      const r = await run([], env);
      expect(r.code).toBe(1);
      expect(check(r, 'lifecycle_callback')).toMatchObject({ ok: false, hint: expect.stringContaining('HOOKRELAY_SHOPIFY_APP_SECRET') });
      const envBefore = core.config.env;
      core.config.env = (name) => (name === 'HOOKRELAY_SHOPIFY_APP_SECRET' ? 'app-secret' : envBefore(name));
      try {
        const fixed = await run([], env);
        expect(check(fixed, 'lifecycle_callback').ok).toBe(true);
        expect(fixed.code).toBe(0);
      } finally {
        core.config.env = envBefore;
      }
    } finally {
      await core.repo.updateStore(store);
    }
  }, 60_000);

  it('fails grant_valid (exit 3) without a token and skips the context check', async () => {
    const r = await run([], { HOOKRELAY_BASE_URL: api.url });
    expect(r.code).toBe(3);
    expect(check(r, 'grant_valid')).toMatchObject({ ok: false });
    expect(check(r, 'expected_context')).toMatchObject({ ok: false, skipped: true });
    expect(check(r, 'manifest_readable').ok).toBe(true);
  });

  it('fails grant_valid (exit 3) for a revoked or unknown token', async () => {
    const r = await run([], { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: `hrg_${'z'.repeat(40)}` });
    expect(r.code).toBe(3);
    expect(check(r, 'grant_valid').detail).toContain('unauthorized');
  });

  it('fails base_url_reachable (exit 7) and skips what depends on it', async () => {
    const r = await run([], { HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}`, HOOKRELAY_TOKEN: token });
    expect(r.code).toBe(7);
    expect(check(r, 'base_url_reachable').ok).toBe(false);
    expect(r.json.checks.filter((c: { skipped?: boolean }) => c.skipped).map((c: { name: string }) => c.name)).toEqual(CHECKS.slice(1));
  });

  it('fails openapi_reachable on another schema version and clock_skew on a distant Date header (exit 1)', async () => {
    const skewed = new Date(Date.now() + 10 * 60_000).toUTCString();
    const stub = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const path = new URL(req.url).pathname;
        const res =
          path === '/agent/v1/openapi.json'
            ? Response.json({ openapi: '3.1.0', info: { version: '2025-01-01' } })
            : await api.env.app.fetch(new Request(`${api.url}${path}`, { method: req.method, headers: req.headers }));
        const headers = new Headers(res.headers);
        headers.set('date', skewed);
        return new Response(await res.arrayBuffer(), { status: res.status, headers });
      },
    });
    try {
      const r = await run([], { HOOKRELAY_BASE_URL: `http://127.0.0.1:${stub.port}`, HOOKRELAY_TOKEN: token });
      expect(r.code).toBe(1);
      expect(r.json.checks.filter((c: { ok: boolean }) => !c.ok).map((c: { name: string }) => c.name)).toEqual(['openapi_reachable', 'clock_skew']);
      expect(check(r, 'clock_skew').detail).toMatch(/behind the server/);
      expect(check(r, 'manifest_readable')).toMatchObject({ ok: true, hint: expect.stringContaining('public URL') });
    } finally {
      stub.stop(true);
    }
  });
});

describe('dist/hookrelay doctor against dist/hookrelay serve', () => {
  const exe = binaryForTests('hookrelay-cli-bin-');

  it('passes every check', async () => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: exe.dir, XDG_CONFIG_HOME: join(exe.dir, '.config') };
    const exec = async (args: string[], extra: Record<string, string> = {}) => {
      const p = Bun.spawn([exe.bin, ...args], { cwd: exe.dir, env: { ...env, ...extra }, stdout: 'pipe', stderr: 'pipe' });
      const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
      return { code, json: JSON.parse(out) };
    };
    expect((await exec(['init', '--shop', 'bin.myshopify.com', '--data-dir', 'data'])).code).toBe(0);
    const grant = await exec(['grant', 'issue', '--shop', 'bin.myshopify.com', '--tier', 'observer', '--ttl', '1h', '--data-dir', 'data']);
    const port = closedPort();
    exe.server = Bun.spawn([exe.bin, 'serve', '--port', String(port), '--data-dir', 'data'], { cwd: exe.dir, env, stdout: 'ignore', stderr: 'ignore' });
    const base = `http://127.0.0.1:${port}`;
    const until = Date.now() + 10_000;
    while (Date.now() < until && !(await fetch(`${base}/status`).then((r) => r.ok, () => false))) await Bun.sleep(50);

    const profile = await exec(['profile', 'add', 'local', '--base-url', base, '--token-env', 'BIN_TOKEN', '--expect-shop-domain', 'bin.myshopify.com']);
    expect(profile.code).toBe(0);
    const r = await exec(['doctor', '--profile', 'local'], { BIN_TOKEN: grant.json.token });
    expect(r.code).toBe(0);
    expect(r.json.ok).toBe(true);
    expect(r.json.checks.map((c: { name: string }) => c.name)).toEqual(CHECKS);
    expect(JSON.stringify(r.json)).not.toContain(grant.json.token);
  }, 60_000);
});
