import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binaryForTests } from '../fixtures/binary.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
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
  'shopify_destination',
  'shopify_api_version',
  'server_settings',
];

let api: Api;
let home: ReturnType<typeof scratchHome>;
let token: string;

const CLIENT = { clientId: 'doctor-client-id-0001', clientSecret: 'doctor-client-secret-canary' };
// The fake answers on the test deployment's clock, so token expiry and the check's 10 s reuse move with it.
const fake = fakeShopifyForFile({ app: CLIENT, now: () => (api ? api.env.clock.now() : Date.now()) });

/** Points the test deployment's store at the fake Shopify with client credentials (and the app secret, when given). */
async function shopifyStore(appSecret: string | null) {
  const { core } = api.env;
  const store = (await core.repo.getStoreByShop('demo.myshopify.com'))!;
  const envBefore = core.config.env;
  core.config.shopifyAdminUrl = fake.url;
  core.config.env = (name) =>
    name === 'DOCTOR_CLIENT_SECRET' ? CLIENT.clientSecret : name === 'HOOKRELAY_SHOPIFY_APP_SECRET' && appSecret ? appSecret : envBefore(name);
  await core.repo.updateStore({
    ...store,
    destination: 'shopify',
    credentialMode: 'client-credentials',
    clientId: CLIENT.clientId,
    clientSecretEnv: 'DOCTOR_CLIENT_SECRET',
  });
  return async () => {
    core.config.env = envBefore;
    core.config.shopifyAdminUrl = null;
    await core.repo.updateStore(store);
    api.env.clock.advance(60_000); // past the live check's reuse
  };
}

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
    expect(check(r, 'server_settings').detail).toContain('Precedence: serve flags, then environment variables');
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
    expect(r.json.summary).toBe('7 of 12 checks passed.');
  });

  it('fails lifecycle_callback (exit 1) when the store hands off to Shopify but the server has no app secret', async () => {
    const env = { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token };
    let restore = await shopifyStore(null);
    try {
      const r = await run([], env);
      expect(r.code).toBe(1);
      expect(check(r, 'lifecycle_callback')).toMatchObject({ ok: false, hint: expect.stringContaining('HOOKRELAY_SHOPIFY_APP_SECRET') });
      expect(check(r, 'shopify_destination').ok).toBe(true);
      await restore();
      restore = await shopifyStore('app-secret');
      const fixed = await run([], env);
      expect(check(fixed, 'lifecycle_callback').ok).toBe(true);
      expect(fixed.code).toBe(0);
    } finally {
      await restore();
    }
  }, 60_000);

  it('passes shopify_destination with a live check, then fails it (exit 1) naming the destination when Shopify refuses the credentials', async () => {
    const env = { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token };
    const restore = await shopifyStore('app-secret');
    try {
      const ok = await run([], env);
      expect(ok.code).toBe(0);
      // Plain reads: bun's toMatchObject writes its asymmetric matchers into the object it is given.
      expect(check(ok, 'shopify_destination').ok).toBe(true);
      expect(check(ok, 'shopify_destination').detail).toContain('credentials (client-credentials, token valid until');
      expect(check(ok, 'shopify_api_version')).toMatchObject({ ok: true, detail: expect.stringContaining('2026-10, supported until 2027-10-01') });
      expect(fake.shopQueries.length).toBeGreaterThan(0);

      fake.refuseAllTokens(true);
      api.env.clock.advance(11_000); // past the 10 s a live check is reused
      const refused = await run([], env);
      expect(refused.code).toBe(1);
      expect(refused.json.checks.filter((c: CheckResult) => !c.ok).map((c: CheckResult) => c.name)).toEqual(['shopify_destination']);
      expect(check(refused, 'shopify_destination').detail).toContain('credentials_refused');
      expect(check(refused, 'shopify_destination').hint).toContain('installed');
      expect(JSON.stringify(refused.json)).not.toContain(CLIENT.clientSecret);
      expect(JSON.stringify(refused.json)).not.toMatch(/shpat_/);
    } finally {
      fake.refuseAllTokens(false);
      await restore();
    }
  }, 60_000);

  it('warns on shopify_api_version within 90 days of its end of support, and fails it after', async () => {
    const env = { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token };
    const restore = await shopifyStore('app-secret');
    const { clock } = api.env;
    const before = clock.now();
    try {
      clock.set(Date.parse('2027-08-01T00:00:00Z'));
      env.HOOKRELAY_TOKEN = await api.grant('operator'); // a grant of that day
      const soon = await run([], env);
      expect(check(soon, 'shopify_api_version')).toMatchObject({ ok: true, hint: expect.stringContaining('Upgrade hookrelay before 2027-10-01') });
      clock.set(Date.parse('2027-10-02T00:00:00Z'));
      env.HOOKRELAY_TOKEN = await api.grant('operator');
      const past = await run([], env);
      expect(check(past, 'shopify_api_version')).toMatchObject({ ok: false, detail: expect.stringContaining('Past its end of support') });
      expect(past.code).toBe(1);
    } finally {
      clock.set(before);
      await restore();
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
    while (
      Date.now() < until &&
      !(await fetch(`${base}/status`).then(
        (r) => r.ok,
        () => false,
      ))
    )
      await Bun.sleep(50);

    const profile = await exec(['profile', 'add', 'local', '--base-url', base, '--token-env', 'BIN_TOKEN', '--expect-shop-domain', 'bin.myshopify.com']);
    expect(profile.code).toBe(0);
    const r = await exec(['doctor', '--profile', 'local'], { BIN_TOKEN: grant.json.token });
    expect(r.code).toBe(0);
    expect(r.json.ok).toBe(true);
    expect(r.json.checks.map((c: { name: string }) => c.name)).toEqual(CHECKS);
    expect(JSON.stringify(r.json)).not.toContain(grant.json.token);
  }, 60_000);
});
