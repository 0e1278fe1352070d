/**
 * The compiled executable, run as a self-hoster would: from an empty folder with no source tree beside it,
 * a signed event sent with curl + openssl, a clean SIGTERM.
 */
import { describe, expect, it, setDefaultTimeout } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedPort } from '../cli/harness.ts';
import { SERVE_JSC_ENV } from '../../src/server/runtime-env.ts';
import { binaryForTests } from '../fixtures/binary.ts';
import { until } from '../fixtures/handoff.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const exe = binaryForTests('hookrelay-bin-');
let port: number;
let stderr = '';

function run(args: string[]) {
  const r = Bun.spawnSync([exe.bin, ...args], { cwd: exe.dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: exe.dir } });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describe('dist/hookrelay', () => {
  it('runs admin commands from an empty folder with bundled migrations', () => {
    expect(readdirSync(exe.dir)).toEqual(['hookrelay']);
    const init = run(['init', '--shop', 'bin.myshopify.com', '--data-dir', 'data']);
    expect(init.code).toBe(0);
    expect(JSON.parse(init.out).store.shopDomain).toBe('bin.myshopify.com');
    expect(JSON.parse(run(['init', '--shop', 'bin.myshopify.com', '--data-dir', 'data']).out).created).toBe(false);
    const bad = run(['grant', 'issue', '--shop', 'bin.myshopify.com', '--tier', 'wizard', '--ttl', '1h', '--data-dir', 'data']);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.out).error.code).toBe('invalid_input');
  });

  it('serves: a curl + openssl signed event is 202, then delivered, and SIGTERM stops it cleanly', async () => {
    const grant = JSON.parse(run(['grant', 'issue', '--shop', 'bin.myshopify.com', '--tier', 'operator', '--ttl', '1h', '--data-dir', 'data']).out);
    expect(grant.token).toStartWith('hrg_');
    port = closedPort();
    exe.server = Bun.spawn([exe.bin, 'serve', '--port', String(port), '--data-dir', 'data'], {
      cwd: exe.dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: exe.dir },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const base = `http://127.0.0.1:${port}`;
    await until(() =>
      fetch(`${base}/status`).then(
        (r) => r.ok,
        () => false,
      ),
    );
    // serve re-executed itself with its JavaScriptCore options, keeping the pid (src/server/runtime-env.ts).
    expect(readFileSync(`/proc/${exe.server.pid}/environ`, 'utf8').split('\0')).toEqual(
      expect.arrayContaining(Object.entries(SERVE_JSC_ENV).map(([k, v]) => `${k}=${v}`)),
    );

    const created = await fetch(`${base}/agent/v1/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${grant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
    }).then((r) => r.json() as any);
    const { endpoint, secret } = created.data;
    expect(endpoint.url).toBe(`${base}/hooks/${endpoint.id}`);

    const body = '{"event_type":"order.flagged","external_event_id":"e2e-1","order":{"id":"gid://shopify/Order/4501"},"note":"E2E_BODY_MARKER"}';
    const script = `sig=$(printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.*= //')
curl -s -w '\\n%{http_code}' -X POST -H 'Content-Type: application/json' -H "X-Hookrelay-Signature: $sig" --data-binary "$BODY" "$URL"`;
    const curl = Bun.spawnSync(['bash', '-c', script], { env: { ...process.env, BODY: body, SECRET: secret, URL: endpoint.url } });
    const [reply, status] = curl.stdout.toString().trim().split('\n');
    expect(status).toBe('202');
    const receipt = JSON.parse(reply!);
    expect(receipt.status).toBe('accepted');

    const wrong = Bun.spawnSync([
      'bash',
      '-c',
      `curl -s -w '\\n%{http_code}' -X POST -H 'Content-Type: application/json' -H 'X-Hookrelay-Signature: ${'0'.repeat(64)}' --data-binary '{}' ${endpoint.url}`,
    ]);
    expect(wrong.stdout.toString()).toContain('SVC_AUTH_FAILED');
    expect(wrong.stdout.toString().trim().endsWith('401')).toBe(true);

    const auth = { authorization: `Bearer ${grant.token}` };
    await until(async () => {
      const list = (await fetch(`${base}/agent/v1/events`, { headers: auth }).then((r) => r.json())) as any;
      return list.data.events[0]?.outcome === 'delivered';
    });
    const list = await fetch(`${base}/agent/v1/events`, { headers: auth }).then((r) => r.text());
    expect(JSON.parse(list).data.events).toHaveLength(1);
    expect(list).not.toContain('E2E_BODY_MARKER');
    expect(list).not.toContain(secret);

    exe.server.kill('SIGTERM');
    expect(await exe.server.exited).toBe(0);
    stderr = await new Response(exe.server.stderr as ReadableStream).text();
    exe.server = null;
    expect(stderr).toContain(`POST /hooks/${endpoint.id} 202`);
    expect(stderr).toContain('stopped');
    for (const secretish of [secret, grant.token, 'E2E_BODY_MARKER']) expect(stderr).not.toContain(secretish);
    const dbBytes =
      readFileSync(join(exe.dir, 'data', 'hookrelay.db')).toString('latin1') +
      readFileSync(join(exe.dir, 'data', 'hookrelay.db-wal'), { flag: 'a+' }).toString('latin1');
    expect(dbBytes).not.toContain(secret);
    expect(dbBytes).not.toContain(grant.token);
  }, 60_000);
});
