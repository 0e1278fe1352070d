/**
 * Failed inbound authentication under a flood: 429 per client address and per endpoint (never for a correctly
 * signed event), failures folded into counted rows, the replacement-endpoint guidance kept, and repeated
 * signature headers refused over a real socket.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test';
import net from 'node:net';
import { AUTH_FAILURE_LIMITS } from '../../src/contract/limits.ts';
import { hmacHex, newEndpointSecret } from '../../src/lib/crypto.ts';
import { startServer } from '../../src/server/serve.ts';
import { addGrant, addStore, BASE, call, createEndpoint, createTestEnv, orderEvent, row, type TestEnv } from '../helpers.ts';

// Floods of a few thousand requests and real sockets, on a machine the suite shares: no timing is asserted.
setDefaultTimeout(60_000);

const { perClient, perEndpoint, rowsPerEndpoint, windowMs } = AUTH_FAILURE_LIMITS;

async function setup(config: Parameters<typeof createTestEnv>[0] = {}) {
  const env = await createTestEnv(config);
  const store = await addStore(env);
  const token = await addGrant(env, 'admin_assistant');
  const { endpoint, secret } = await createEndpoint(env, token);
  return { env, store, token, endpoint, secret };
}

/** Posts to /hooks/{id} from `peer` (the socket address serve passes); `sig` is the signature header's value. */
async function post(env: TestEnv, endpointId: string, body: string, sig: string | null, peer: string | null, headers: Record<string, string> = {}) {
  const h: Record<string, string> = { 'content-type': 'application/json', ...headers };
  if (sig !== null) h['x-hookrelay-signature'] = sig;
  const res = await env.app.fetch(new Request(`${BASE}/hooks/${endpointId}`, { method: 'POST', headers: h, body }), peer);
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

const BAD = '0'.repeat(64);

async function failureRows(env: TestEnv) {
  return (await row<{ rows: number; failures: number }>(env, 'SELECT count(*) AS rows, coalesce(sum(count), 0) AS failures FROM auth_failures'))!;
}

function expect429(r: { status: number; headers: Headers; json: any }) {
  expect(r.status).toBe(429);
  const retryAfter = r.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(r.json).toEqual({ code: 'rate_limited', message: expect.any(String), retryAfterSeconds: Number(retryAfter) });
}

describe('inbound failed-authentication limit', () => {
  test('per client address: 401 up to the limit, then 429 with Retry-After; valid events and other addresses unaffected', async () => {
    const { env, endpoint, secret } = await setup();
    const body = orderEvent('flood-1');
    for (let i = 0; i < perClient; i++) expect((await post(env, endpoint.id, body, BAD, '203.0.113.7')).status).toBe(401);
    const limited = await post(env, endpoint.id, body, BAD, '203.0.113.7');
    expect429(limited);
    expect(limited.json.message).toContain('from this address');

    // A correct signature from the limited address still passes: only failures are refused.
    expect((await post(env, endpoint.id, body, hmacHex(secret, body), '203.0.113.7')).status).toBe(202);
    // Another address is not limited, and a missing header counts as a failure too.
    const other = await post(env, endpoint.id, body, null, '198.51.100.2');
    expect(other.status).toBe(401);
    expect(other.json.code).toBe('SVC_AUTH_HEADER_MISSING');

    // The limit holds for the window, then resets.
    env.clock.advance(windowMs);
    expect((await post(env, endpoint.id, body, BAD, '203.0.113.7')).status).toBe(401);
  });

  test('per endpoint: an attacker rotating addresses gets 429 past the endpoint limit; a correctly signed event still passes', async () => {
    const { env, store, token, endpoint, secret } = await setup();
    const other = await createEndpoint(env, token);
    const body = orderEvent('rotating');
    for (let i = 0; i < perEndpoint; i++) expect((await post(env, endpoint.id, body, BAD, `192.0.2.${i}`)).status).toBe(401);
    const limited = await post(env, endpoint.id, body, BAD, '192.0.2.250');
    expect429(limited);
    expect(limited.json.message).toContain('for this endpoint');

    expect((await post(env, endpoint.id, body, hmacHex(secret, body), '192.0.2.251')).status).toBe(202);
    expect((await post(env, other.endpoint.id, body, BAD, '192.0.2.252')).status).toBe(401);
    // Every failure, refused with 429 or not, is counted.
    expect((await env.repo.countAuthFailures(store.storeId, 0)).find((c) => c.endpointId === endpoint.id)?.n).toBe(perEndpoint + 1);
  });

  test('2,000 bad signatures write a bounded number of rows; their counts add up to every failure', async () => {
    const { env, store, endpoint } = await setup();
    const body = orderEvent('flood-rows');
    const statuses = new Map<number, number>();
    for (let round = 0; round < 20; round++) {
      const replies = await Promise.all(
        Array.from({ length: 100 }, (_, i) => post(env, endpoint.id, body, i % 10 === 0 ? null : BAD, round % 2 ? `10.0.${round}.${i}` : '10.9.9.9')),
      );
      for (const r of replies) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
    expect(statuses.get(429)).toBeGreaterThan(1_800);
    expect([...statuses.keys()].sort()).toEqual([401, 429]);
    // Two codes (header missing, signature failed), at most rowsPerEndpoint rows each in the window.
    expect(await failureRows(env)).toEqual({ rows: 2 * rowsPerEndpoint, failures: 2_000 });
    expect((await env.repo.countAuthFailures(store.storeId, 0)).map(({ endpointId, n }) => ({ endpointId, n }))).toEqual([
      { endpointId: endpoint.id, n: 2_000 },
    ]);

    // The next windows each add at most rowsPerEndpoint rows per code, never one per request.
    for (let w = 1; w <= 3; w++) {
      env.clock.advance(windowMs);
      await Promise.all(Array.from({ length: 200 }, (_, i) => post(env, endpoint.id, body, BAD, `172.16.${w}.${i}`)));
    }
    expect(await failureRows(env)).toEqual({ rows: 2 * rowsPerEndpoint + 3 * rowsPerEndpoint, failures: 2_600 });

    // Diagnostics and reliability sum the counts.
    const token = await addGrant(env, 'admin_assistant');
    const health = await call(env, 'GET', '/agent/v1/reliability/tenant?window=24h', { token });
    expect(health.status).toBe(200);
    expect(health.json.data.authFailuresByEndpoint).toEqual([{ endpointId: endpoint.id, count: 2_600 }]);
  });
});

describe('the replacement-endpoint guidance under folding', () => {
  async function actions(env: TestEnv, token: string) {
    const r = await call(env, 'GET', '/agent/v1/setup-state', { token });
    expect(r.status).toBe(200);
    return r.json.data;
  }

  test('a flood folded into counted rows still recommends a replacement endpoint; a later valid event clears it', async () => {
    const { env, token, endpoint, secret } = await setup();
    const body = orderEvent('guided');
    for (let i = 0; i < rowsPerEndpoint + 5; i++) await post(env, endpoint.id, body, BAD, null);
    expect(await failureRows(env)).toEqual({ rows: rowsPerEndpoint, failures: rowsPerEndpoint + 5 });
    const state = await actions(env, token);
    expect(state.nextRecommendedActions.map((a: { action: string }) => a.action)).toContain('create_replacement_endpoint');
    expect(state.endpoints.find((e: { id: string }) => e.id === endpoint.id).recentAuthFailures).toBe(7); // newest two rows: 6 + 1

    env.clock.advance(1000);
    expect((await post(env, endpoint.id, body, hmacHex(secret, body), null)).status).toBe(202);
    const after = await actions(env, token);
    expect(after.nextRecommendedActions.map((a: { action: string }) => a.action)).not.toContain('create_replacement_endpoint');
  });

  test('a single folded row with count 2 counts as the two newest failures', async () => {
    const { env, store, token, endpoint } = await setup();
    const at = env.clock.now();
    const failure = (id: string, t: number) => ({
      id,
      storeId: store.storeId,
      endpointId: endpoint.id,
      code: 'SVC_AUTH_FAILED',
      at: t,
      count: 1,
      foldSince: at,
      keepRows: 1,
    });
    await env.repo.commitIngest([], [failure('af_one', at), failure('af_two', at + 5_000)]);
    const rows = await env.repo.listAuthFailures(store.storeId, endpoint.id, 2);
    expect(rows).toEqual([expect.objectContaining({ id: 'af_one', count: 2, at: at + 5_000 })]);
    env.clock.advance(5_000);
    const state = await actions(env, token);
    expect(state.nextRecommendedActions.map((a: { action: string }) => a.action)).toContain('create_replacement_endpoint');
  });
});

describe('client address over a real socket', () => {
  /** Writes one raw HTTP/1.1 request and returns the status line's code, headers and body. */
  function rawRequest(port: number, lines: string[], body: string): Promise<{ status: number; head: string; body: string }> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(
          `POST ${lines[0]} HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.slice(1).join('\r\n')}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      });
      let buf = '';
      // Bun may keep the connection open after answering: the response ends where its Content-Length says.
      const done = () => {
        const [head = '', rest = ''] = buf.split('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? NaN);
        if (!(rest.length >= length)) return false;
        socket.destroy();
        resolve({ status: Number(head.split(' ')[1]), head, body: rest });
        return true;
      };
      socket.on('data', (d) => {
        buf += d;
        done();
      });
      socket.on('error', reject);
      socket.on('end', () => done() || reject(new Error(`incomplete response: ${buf.slice(0, 200)}`)));
    });
  }

  test('serve passes the socket address: 127.0.0.1 is limited after its failures; HOOKRELAY_TRUST_PROXY uses the last X-Forwarded-For hop', async () => {
    for (const trust of [false, true]) {
      const { env, endpoint } = await setup({ env: (name) => (name === 'HOOKRELAY_TRUST_PROXY' && trust ? '1' : undefined) });
      const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false, logRequests: false });
      try {
        const port = running.server.port!;
        const body = orderEvent('socket');
        // The first hop is the client's own claim: rotating it must not escape the limit.
        const send = (n: number) =>
          rawRequest(port, [`/hooks/${endpoint.id}`, `X-Hookrelay-Signature: ${BAD}`, `X-Forwarded-For: 10.1.1.${n}, 198.51.100.9`], body);
        for (let i = 0; i < perClient; i++) expect((await send(i)).status).toBe(401);
        expect((await send(99)).status).toBe(429);
        // Another address: with the proxy trusted, another last hop; without, X-Forwarded-For is ignored.
        const other = await rawRequest(port, [`/hooks/${endpoint.id}`, `X-Hookrelay-Signature: ${BAD}`, 'X-Forwarded-For: 198.51.100.10'], body);
        expect(other.status).toBe(trust ? 401 : 429);
      } finally {
        await running.stop();
      }
    }
  });

  test('several values for the signature header answer 401 SVC_AUTH_FAILED, even when one of them verifies', async () => {
    const { env, endpoint, secret } = await setup();
    const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false, logRequests: false });
    try {
      const port = running.server.port!;
      const body = orderEvent('dup-header');
      const sig = hmacHex(secret, body);
      const wrong = hmacHex(newEndpointSecret(), body);
      const path = `/hooks/${endpoint.id}`;

      // One line holding several values, as a proxy that joins repeated headers forwards them.
      for (const value of [`${sig}, ${sig}`, `${wrong}, ${sig}`, `${sig},${wrong}`, `${sig},`]) {
        const r = await rawRequest(port, [path, `X-Hookrelay-Signature: ${value}`], body);
        expect(r.status).toBe(401);
        expect(JSON.parse(r.body)).toEqual({ code: 'SVC_AUTH_FAILED', message: expect.stringContaining('several values') });
      }

      // Two header lines, in both orders: Bun joins them ("a, b") before the app runs, refused as above.
      for (const lines of [
        [wrong, sig],
        [sig, wrong],
        [sig, sig],
      ]) {
        const r = await rawRequest(port, [path, ...lines.map((v) => `X-Hookrelay-Signature: ${v}`)], body);
        expect(r.status).toBe(401);
        expect(JSON.parse(r.body)).toEqual({ code: 'SVC_AUTH_FAILED', message: expect.stringContaining('several values') });
      }

      // The sender fixed: one line, one value.
      expect((await rawRequest(port, [path, `X-Hookrelay-Signature: ${sig}`], body)).status).toBe(202);
    } finally {
      await running.stop();
    }
  });
});
