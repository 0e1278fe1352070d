/**
 * HMAC-SHA256 over the exact raw bytes: the shared vectors against our helpers, the same vectors (and a random
 * body) against openssl, and the inbound path end to end (re-serialised bodies and malformed signatures fail).
 */
import { describe, expect, test } from 'bun:test';
import { hmacBase64, hmacHex, verifyHmacHex } from '../../src/lib/crypto.ts';
import { addGrant, addStore, BASE, count, createEndpoint, createTestEnv, execSql, row, type TestEnv } from '../helpers.ts';

interface Vector {
  secret: string;
  bodyUtf8: string;
  bodyBytes: number;
  hmacSha256Hex: string;
  hmacSha256Base64: string;
}

const VECTORS_URL = new URL('../fixtures/hmac-sha256.json', import.meta.url);
const vectors = (JSON.parse(await Bun.file(VECTORS_URL).text()) as { cases: Vector[] }).cases;
const enc = new TextEncoder();

/** HMAC-SHA256 hex computed by openssl over `bytes` fed on stdin. */
function opensslHmacHex(secret: string, bytes: Uint8Array): string {
  const p = Bun.spawnSync({ cmd: ['openssl', 'dgst', '-sha256', '-hmac', secret], stdin: bytes, stdout: 'pipe', stderr: 'pipe' });
  if (p.exitCode !== 0) throw new Error(`openssl failed: ${p.stderr.toString()}`);
  const m = /([0-9a-f]{64})\s*$/.exec(p.stdout.toString());
  if (!m) throw new Error(`unexpected openssl output: ${p.stdout.toString()}`);
  return m[1]!;
}

/** An endpoint whose secret is forced to `secret` (the vectors use fixed secrets). */
async function endpointWithSecret(env: TestEnv, token: string, secret: string, input: Record<string, unknown> = { triggerVariant: 'generic' }) {
  const { endpoint } = await createEndpoint(env, token, input);
  await execSql(env, 'UPDATE endpoints SET secret_sealed = ?, secret_last4 = ? WHERE id = ?', env.core.box.seal(secret), secret.slice(-4), endpoint.id);
  env.app.endpoints.invalidate(endpoint.id);
  return endpoint as { id: string; auth: { headerName: string; mode: string } };
}

async function post(env: TestEnv, endpoint: { id: string; auth: { headerName: string } }, body: string | Uint8Array, signature: string | null) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== null) headers[endpoint.auth.headerName] = signature;
  const res = await env.app.fetch(new Request(`${BASE}/hooks/${endpoint.id}`, { method: 'POST', headers, body }));
  return { status: res.status, json: (await res.json()) as any };
}

async function setup() {
  const env = await createTestEnv();
  await addStore(env);
  const token = await addGrant(env, 'admin_assistant');
  return { env, token };
}

describe('HMAC vectors', () => {
  test('the vectors file lives inside the repo (test/fixtures) and has cases', () => {
    expect(VECTORS_URL.pathname.endsWith('/test/fixtures/hmac-sha256.json')).toBe(true);
    expect(vectors.length).toBeGreaterThanOrEqual(5);
  });

  test.each(vectors.map((v, i) => [i + 1, v] as const))('case %d: hmacHex, hmacBase64 and verifyHmacHex match', (_n, v) => {
    const bytes = enc.encode(v.bodyUtf8);
    expect(bytes.byteLength).toBe(v.bodyBytes);
    expect(hmacHex(v.secret, bytes)).toBe(v.hmacSha256Hex);
    expect(hmacHex(v.secret, v.bodyUtf8)).toBe(v.hmacSha256Hex);
    expect(hmacBase64(v.secret, bytes)).toBe(v.hmacSha256Base64);
    expect(Buffer.from(v.hmacSha256Base64, 'base64').toString('hex')).toBe(v.hmacSha256Hex);
    expect(verifyHmacHex(v.secret, bytes, v.hmacSha256Hex)).toBe(true);
    expect(verifyHmacHex(`${v.secret}x`, bytes, v.hmacSha256Hex)).toBe(false);
  });

  test.each(vectors.map((v, i) => [i + 1, v] as const))('case %d: openssl dgst agrees on the exact bytes', (_n, v) => {
    expect(opensslHmacHex(v.secret, enc.encode(v.bodyUtf8))).toBe(v.hmacSha256Hex);
  });

  test('a random body and secret: openssl, hmacHex and verifyHmacHex agree', () => {
    const bytes = crypto.getRandomValues(new Uint8Array(4099));
    const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('hex')}`;
    const expected = opensslHmacHex(secret, bytes);
    expect(hmacHex(secret, bytes)).toBe(expected);
    expect(hmacBase64(secret, bytes)).toBe(Buffer.from(expected, 'hex').toString('base64'));
    expect(verifyHmacHex(secret, bytes, expected)).toBe(true);
    const flipped = bytes.slice();
    flipped[17]! ^= 1;
    expect(verifyHmacHex(secret, flipped, expected)).toBe(false);
  });

  test('cases 1 and 2 are the same JSON value with different bytes, and different digests', () => {
    const [a, b] = [vectors[0]!, vectors[1]!];
    expect(a.secret).toBe(b.secret);
    expect(JSON.parse(a.bodyUtf8)).toEqual(JSON.parse(b.bodyUtf8));
    expect(a.bodyUtf8).not.toBe(b.bodyUtf8);
    expect(a.hmacSha256Hex).not.toBe(b.hmacSha256Hex);
    expect(verifyHmacHex(a.secret, enc.encode(b.bodyUtf8), a.hmacSha256Hex)).toBe(false);
    expect(verifyHmacHex(b.secret, enc.encode(a.bodyUtf8), b.hmacSha256Hex)).toBe(false);
  });
});

describe('verifyHmacHex rejects malformed header values', () => {
  const v = vectors[0]!;
  const bytes = enc.encode(v.bodyUtf8);
  const bad: [string, string][] = [
    ['uppercase hex', v.hmacSha256Hex.toUpperCase()],
    ['mixed-case hex', v.hmacSha256Hex.slice(0, 10).toUpperCase() + v.hmacSha256Hex.slice(10)],
    ['too short', v.hmacSha256Hex.slice(0, 63)],
    ['too long', `${v.hmacSha256Hex}0`],
    ['truncated to 32 chars', v.hmacSha256Hex.slice(0, 32)],
    ['non-hex character', `${v.hmacSha256Hex.slice(0, 63)}g`],
    ['prefixed sha256=', `sha256=${v.hmacSha256Hex}`],
    ['base64 form', v.hmacSha256Base64],
    ['empty', ''],
  ];
  test.each(bad)('%s', (_name, value) => {
    expect(verifyHmacHex(v.secret, bytes, value)).toBe(false);
  });
});

describe('end to end through POST /hooks/{id}', () => {
  test('every vector is accepted with its own digest on an endpoint keyed with its secret', async () => {
    const { env, token } = await setup();
    for (const v of vectors) {
      const ep = await endpointWithSecret(env, token, v.secret);
      const r = await post(env, ep, enc.encode(v.bodyUtf8), v.hmacSha256Hex);
      expect(r.status).toBe(202);
      expect(r.json.status).toBe('accepted');
      const stored = (await row<{ body_bytes: number }>(env, 'SELECT body_bytes FROM events WHERE id = ?', r.json.eventId))!;
      expect(stored.body_bytes).toBe(v.bodyBytes);
      const body = (await row<{ body: Uint8Array }>(env, 'SELECT body FROM event_bodies WHERE event_id = ?', r.json.eventId))!;
      expect(Buffer.from(body.body).toString('utf8')).toBe(v.bodyUtf8);
    }
    expect(await count(env, 'events')).toBe(vectors.length);
    expect(await count(env, 'auth_failures')).toBe(0);
  });

  test('a signature of case 1 fails for the bytes of case 2 (and vice versa); each passes for its own bytes', async () => {
    const { env, token } = await setup();
    const [a, b] = [vectors[0]!, vectors[1]!];
    const ep = await endpointWithSecret(env, token, a.secret, { triggerVariant: 'order', resourceIdPath: 'order.id' });

    const crossed1 = await post(env, ep, b.bodyUtf8, a.hmacSha256Hex);
    expect(crossed1.status).toBe(401);
    expect(crossed1.json.code).toBe('SVC_AUTH_FAILED');
    const crossed2 = await post(env, ep, a.bodyUtf8, b.hmacSha256Hex);
    expect(crossed2.status).toBe(401);
    expect(crossed2.json.code).toBe('SVC_AUTH_FAILED');
    expect(await count(env, 'events')).toBe(0);
    expect(await count(env, 'auth_failures')).toBe(2);

    const ok1 = await post(env, ep, a.bodyUtf8, a.hmacSha256Hex);
    expect(ok1.status).toBe(202);
    expect(ok1.json.status).toBe('accepted');
    // Same external_event_id: accepted by auth, then suppressed as a duplicate of the first.
    const ok2 = await post(env, ep, b.bodyUtf8, b.hmacSha256Hex);
    expect(ok2.status).toBe(202);
    expect(ok2.json.status).toBe('duplicate_suppressed');
    expect(ok2.json.duplicateOf).toBe(ok1.json.eventId);
  });

  test('uppercase, wrong-length and non-hex signature headers answer 401 SVC_AUTH_FAILED and create no event', async () => {
    const { env, token } = await setup();
    const v = vectors[0]!;
    const ep = await endpointWithSecret(env, token, v.secret, { triggerVariant: 'order', resourceIdPath: 'order.id' });
    const values = [
      v.hmacSha256Hex.toUpperCase(),
      v.hmacSha256Hex.slice(0, 62),
      `${v.hmacSha256Hex}ab`,
      `${v.hmacSha256Hex.slice(0, 63)}z`,
      `sha256=${v.hmacSha256Hex}`,
      v.hmacSha256Base64,
    ];
    for (const value of values) {
      const r = await post(env, ep, v.bodyUtf8, value);
      expect(r.status).toBe(401);
      expect(r.json.code).toBe('SVC_AUTH_FAILED');
      expect(JSON.stringify(r.json)).not.toContain(v.hmacSha256Hex);
    }
    expect(await count(env, 'events')).toBe(0);
    expect(await count(env, 'event_bodies')).toBe(0);
    expect(await count(env, 'auth_failures')).toBe(values.length);
    // The correct lowercase value still passes: only the format was wrong.
    expect((await post(env, ep, v.bodyUtf8, v.hmacSha256Hex)).status).toBe(202);
  });

  test('a body re-serialised after signing fails', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id' });
    const signedBody = JSON.stringify({ event_type: 'order.flagged', external_event_id: 'ext-reser', order: { id: 4501 }, note: 'café' }, null, 2);
    const signature = hmacHex(secret, signedBody);

    const compacted = JSON.stringify(JSON.parse(signedBody));
    expect(compacted).not.toBe(signedBody);
    const r1 = await post(env, endpoint, compacted, signature);
    expect(r1.status).toBe(401);
    expect(r1.json.code).toBe('SVC_AUTH_FAILED');

    // Same characters, re-encoded: é as a JSON escape instead of raw UTF-8.
    const escaped = signedBody.replace('é', '\\u00e9');
    expect(JSON.parse(escaped)).toEqual(JSON.parse(signedBody));
    const r2 = await post(env, endpoint, escaped, signature);
    expect(r2.status).toBe(401);
    expect(r2.json.code).toBe('SVC_AUTH_FAILED');

    // A trailing newline added by a client library.
    const r3 = await post(env, endpoint, `${signedBody}\n`, signature);
    expect(r3.status).toBe(401);

    expect(await count(env, 'events')).toBe(0);
    expect(await count(env, 'auth_failures')).toBe(3);

    const ok = await post(env, endpoint, signedBody, signature);
    expect(ok.status).toBe(202);
    expect(ok.json.status).toBe('accepted');
  });
});
