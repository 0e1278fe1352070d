import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, cliText, scratchHome } from './harness.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

let home: ReturnType<typeof scratchHome>;
const SECRET = 'whsec_TestSecretForSigning0123456789abcdef';

beforeAll(() => {
  home = scratchHome();
});
afterAll(() => home.cleanup());

function openssl(body: string | Uint8Array): string {
  const r = Bun.spawnSync(['openssl', 'dgst', '-sha256', '-hmac', SECRET], { stdin: typeof body === 'string' ? Buffer.from(body) : body });
  return r.stdout.toString().trim().replace(/^.*= /, '');
}

describe('sign', () => {
  it('matches openssl dgst -sha256 -hmac over the exact bytes of a file', async () => {
    // Spacing, key order and a trailing newline are part of the bytes: nothing is re-serialised.
    const body = '{ "event_type":"order.flagged",  "external_event_id":"ext-1","order":{"id":4501}, "note":"café"}\n';
    const f = join(home.dir, 'body.json');
    writeFileSync(f, body);
    const r = await cli(['sign', '--secret-env', 'EP_SECRET', '--file', f], { home: home.dir, env: { EP_SECRET: SECRET } });
    expect(r.code).toBe(0);
    expect(r.json.signature).toBe(openssl(body));
    expect(r.json.signature).toMatch(/^[0-9a-f]{64}$/);
    expect(r.json).toMatchObject({ algorithm: 'HMAC-SHA256', encoding: 'hex', bytes: Buffer.byteLength(body), secretEnv: 'EP_SECRET' });
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  it('reads stdin when no file is given', async () => {
    const body = '{"event_type":"x","external_event_id":"y"}';
    const r = await cli(['sign', '--secret-env', 'EP_SECRET'], { home: home.dir, env: { EP_SECRET: SECRET }, stdin: body });
    expect(r.code).toBe(0);
    expect(r.json.signature).toBe(openssl(body));
  });

  it('exits 2 when the secret variable is unset or the file is missing', async () => {
    const unset = await cli(['sign', '--secret-env', 'NOPE', '--file', '/dev/null'], { home: home.dir });
    expect(unset.code).toBe(2);
    expect(unset.json.error.message).toContain('NOPE is not set');
    const missing = await cli(['sign', '--secret-env', 'EP_SECRET', '--file', join(home.dir, 'missing.json')], { home: home.dir, env: { EP_SECRET: SECRET } });
    expect(missing.code).toBe(2);
    const noFlag = await cli(['sign'], { home: home.dir });
    expect(noFlag.code).toBe(2);
  });
});

describe('sign --raw', () => {
  it('prints only the hex signature and a newline, the same one the JSON form gives', async () => {
    const body = '{"event_type":"x","external_event_id":"raw-1"}';
    const r = await cliText(['sign', '--secret-env', 'EP_SECRET', '--raw'], { home: home.dir, env: { EP_SECRET: SECRET }, stdin: body });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${openssl(body)}\n`);
    expect(r.stdout).toMatch(/^[0-9a-f]{64}\n$/);
  });
});
