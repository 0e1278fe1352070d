/**
 * README "Going live with Shopify Flow", step by step, with the compiled binary against the fake Shopify run as
 * `bun run fake-shopify` runs it: client credentials set with `store set`, the secret only in serve's environment,
 * doctor asking Shopify for real, a signed event handed off with a token hookrelay requested itself.
 */
import { describe, expect, it, setDefaultTimeout } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedPort } from '../cli/harness.ts';
import { binaryForTests } from '../fixtures/binary.ts';
import { until } from '../fixtures/handoff.ts';

setDefaultTimeout(90_000);

const ROOT = new URL('../../', import.meta.url).pathname;
const SHOP = 'your-store.myshopify.com';
const CLIENT_ID = 'demo-client-id-01';
const CLIENT_SECRET = 'fake-secret-going-live-canary';
const exe = binaryForTests('hookrelay-golive-');

describe('going live on the fake Shopify, as the README says', () => {
  it('store set with client credentials, serve with the secret variable, doctor passes, an event is delivered', async () => {
    const fake = Bun.spawn(['bun', join(ROOT, 'scripts/fake-shopify.ts'), '--client-id', CLIENT_ID], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', FAKE_SHOPIFY_CLIENT_SECRET: CLIENT_SECRET },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const lines = (fake.stdout as ReadableStream<Uint8Array>).getReader();
    const ready = JSON.parse(new TextDecoder().decode((await lines.read()).value).split('\n')[0]!) as { ready: boolean; url: string };
    expect(ready.ready).toBe(true);
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: exe.dir };
    const run = (args: string[], extra: Record<string, string> = {}) => {
      const r = Bun.spawnSync([exe.bin, ...args], { cwd: exe.dir, env: { ...env, ...extra } });
      return { code: r.exitCode, json: JSON.parse(r.stdout.toString() || 'null'), err: r.stderr.toString() };
    };
    try {
      expect(run(['init', '--shop', SHOP, '--data-dir', 'data']).code).toBe(0);
      const set = run([
        'store',
        'set',
        '--shop',
        SHOP,
        '--destination',
        'shopify',
        '--auth',
        'client-credentials',
        '--client-id',
        CLIENT_ID,
        '--client-secret-env',
        'SHOPIFY_CLIENT_SECRET',
        '--data-dir',
        'data',
      ]);
      expect(set.code).toBe(0);
      expect(run(['store', 'show', '--data-dir', 'data']).json.stores[0]).toMatchObject({
        plan: 'unlimited',
        credentials: { mode: 'client-credentials', clientSecretEnv: 'SHOPIFY_CLIENT_SECRET' },
        handoff: { state: 'active' },
      });

      const port = closedPort();
      const secrets = { SHOPIFY_CLIENT_SECRET: CLIENT_SECRET, HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT_SECRET, HOOKRELAY_SHOPIFY_ADMIN_URL: ready.url };
      exe.server = Bun.spawn([exe.bin, 'serve', '--port', String(port), '--data-dir', 'data'], {
        cwd: exe.dir,
        env: { ...env, ...secrets },
        stdout: 'ignore',
        stderr: 'pipe',
      });
      const base = `http://127.0.0.1:${port}`;
      await until(() =>
        fetch(`${base}/status`).then(
          (r) => r.ok,
          () => false,
        ),
      );

      const token = run(['grant', 'issue', '--shop', SHOP, '--tier', 'operator', '--ttl', '8h', '--data-dir', 'data']).json.token as string;
      const doctor = run(['doctor'], { HOOKRELAY_BASE_URL: base, HOOKRELAY_TOKEN: token });
      expect(doctor.code).toBe(0);
      const named = Object.fromEntries((doctor.json.checks as { name: string; ok: boolean; detail: string }[]).map((c) => [c.name, c]));
      expect(named.shopify_destination!.ok).toBe(true);
      expect(named.shopify_destination!.detail).toContain('client-credentials, token valid until');
      expect(named.shopify_api_version!.detail).toContain('Admin API 2026-10');

      const created = (await fetch(`${base}/agent/v1/endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
      }).then((r) => r.json())) as { data: { endpoint: { url: string }; secret: string } };
      const body = '{"event_type":"order.flagged","external_event_id":"ext-1","order":{"id":4501}}';
      const script = `SIG=$(printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.*= //')
curl -s -X POST "$URL" -H 'Content-Type: application/json' -H "X-Hookrelay-Signature: $SIG" --data-binary "$BODY"`;
      const curl = Bun.spawnSync(['bash', '-c', script], { env: { ...process.env, BODY: body, SECRET: created.data.secret, URL: created.data.endpoint.url } });
      expect(JSON.parse(curl.stdout.toString()).status).toBe('accepted');
      const auth = { authorization: `Bearer ${token}` };
      await until(
        async () => ((await fetch(`${base}/agent/v1/events`, { headers: auth }).then((r) => r.json())) as any).data.events[0]?.outcome === 'delivered',
      );

      exe.server.kill('SIGTERM');
      expect(await exe.server.exited).toBe(0);
      const serveLog = await new Response(exe.server.stderr as ReadableStream).text();
      exe.server = null;
      expect(serveLog).toContain(`store ${SHOP}: destination shopify (client credentials: client id ${CLIENT_ID}, secret from $SHOPIFY_CLIENT_SECRET, set;`);
      expect(serveLog).toContain(`shopify: ${SHOP} obtained an Admin API token`);
      expect(serveLog).not.toContain(CLIENT_SECRET);
      const db =
        readFileSync(join(exe.dir, 'data', 'hookrelay.db')).toString('latin1') +
        readFileSync(join(exe.dir, 'data', 'hookrelay.db-wal'), { flag: 'a+' }).toString('latin1');
      expect(db).not.toContain(CLIENT_SECRET);
      expect(db).not.toMatch(/shpat_[0-9a-f]{8}/);
    } finally {
      fake.kill('SIGTERM');
      await fake.exited;
    }
    const counts = JSON.parse(
      new TextDecoder()
        .decode((await lines.read()).value)
        .trim()
        .split('\n')
        .pop()!,
    ) as { requests: number; tokenRequests: number };
    expect(counts.requests).toBe(1);
    expect(counts.tokenRequests).toBe(1);
    const fakeLog = await new Response(fake.stderr as ReadableStream).text();
    expect(fakeLog).toContain('POST /admin/oauth/access_token 200');
    expect(fakeLog).toContain('POST /admin/api/2026-10/graphql.json 200');
  });
});
