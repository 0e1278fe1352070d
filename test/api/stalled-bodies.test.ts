/**
 * Bodies that do not arrive, over real sockets (src/lib/body.ts): cut at the deadline with 408 and the connection
 * closed, refused 503 with Retry-After past the bound on bodies read as streams; serve stays healthy throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { readCapped, setBodyLimits, type BodyLimits } from '../../src/lib/body.ts';
import { hmacHex } from '../../src/lib/crypto.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { addGrant, addStore, createEndpoint, createTestEnv, orderEvent, type TestEnv } from '../helpers.ts';
import { Conn } from './_sockets.ts';

const LIMITS: BodyLimits = { deadlineMs: 600, streamsInFlight: 2, streamsPerClient: 2, retryAfterSeconds: 3 };
let previous: BodyLimits;
let env: TestEnv;
let running: RunningServer;
let token: string;
let hookPath: string;
let secret: string;

beforeAll(async () => {
  previous = setBodyLimits(LIMITS);
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env);
  const ep = await createEndpoint(env, token);
  secret = ep.secret;
  hookPath = `/hooks/${ep.endpoint.id}`;
  running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
});
afterAll(async () => {
  setBodyLimits(previous);
  await running.stop();
}, 15_000);

const open = (bytes: string) => new Conn(running.server.port!, bytes);
/** A POST whose chunked body sends one chunk and then nothing. */
const stalledChunked = (path: string, headers = '') =>
  open(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}Transfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n`);
const signedEvent = async (ext: string) => {
  const body = orderEvent(ext);
  const res = await fetch(`${running.url}${hookPath}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) },
    body,
  });
  return { status: res.status, json: (await res.json()) as any };
};
const healthy = async () => {
  expect((await fetch(`${running.url}/status`)).status).toBe(200);
  expect((await signedEvent(`healthy-${crypto.randomUUID()}`)).status).toBe(202);
};
/** Waits until no body is being read as a stream (the bound's slots are free again). */
const drained = () => Bun.sleep(LIMITS.deadlineMs + 400);

describe('a body that stalls', () => {
  it.concurrent('is cut at the deadline on /hooks (chunked): 408 request_timeout in the inbound shape, and the connection closed', async () => {
    const c = stalledChunked(hookPath, 'X-Hookrelay-Signature: 00\r\n');
    const a = await c.answer();
    expect(a?.status).toBe(408);
    expect(a?.json).toEqual({ code: 'request_timeout', message: expect.stringContaining('did not arrive') });
    expect(a?.headers.connection).toBe('close');
    const waited = c.answeredAt! - c.sent;
    expect(waited).toBeGreaterThanOrEqual(LIMITS.deadlineMs - 50);
    expect(waited).toBeLessThan(LIMITS.deadlineMs + 1_500);
    expect(await c.closedAfterAnswer()).not.toBeNull();
    await healthy();
  }, 20_000);

  it.concurrent('is cut with a Content-Length too, and the API answers its error envelope', async () => {
    const body = '{"triggerVariant":';
    const c = open(
      `POST /agent/v1/endpoints HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n${body}`,
    );
    const a = await c.answer();
    expect(a?.status).toBe(408);
    expect(a?.json.error.code).toBe('request_timeout');
    expect(a?.json.edition).toBeDefined();
    expect(await c.closedAfterAnswer()).not.toBeNull();
    await healthy();
  }, 20_000);

  it.concurrent('is cut on the MCP endpoint too (its body is read before the SDK sees it)', async () => {
    const c = stalledChunked('/agent/v1/mcp', `Authorization: Bearer ${token}\r\nAccept: application/json, text/event-stream\r\n`);
    const a = await c.answer();
    expect(a?.status).toBe(408);
    expect(a?.json.error.code).toBe('request_timeout');
    expect(await c.closedAfterAnswer()).not.toBeNull();
  }, 20_000);
});

describe('bodies read as streams past the bound', () => {
  it('are answered 503 server_busy with Retry-After at once; the slots free at the deadline', async () => {
    await drained();
    const holders = [stalledChunked(hookPath), stalledChunked(hookPath)];
    await Bun.sleep(150); // both are being read
    const hook = stalledChunked(hookPath);
    const api = stalledChunked('/agent/v1/endpoints', `Authorization: Bearer ${token}\r\n`);
    const [a, b] = await Promise.all([hook.answer(LIMITS.deadlineMs / 2), api.answer(LIMITS.deadlineMs / 2)]);
    expect(a?.status).toBe(503);
    expect(a?.headers['retry-after']).toBe('3');
    expect(a?.json).toEqual({ code: 'server_busy', message: expect.stringContaining('Retry after 3 s') });
    expect(b?.status).toBe(503);
    expect(b?.headers['retry-after']).toBe('3');
    expect(b?.json.error.code).toBe('server_busy');

    // A body with a Content-Length is not counted: it still goes through while the slots are taken.
    expect((await signedEvent('while-busy')).status).toBe(202);
    for (const h of holders) expect((await h.answer())?.status).toBe(408);

    // Slots free again: a complete chunked body is read and recorded.
    const body = orderEvent('chunked-after');
    const res = await fetch(`${running.url}${hookPath}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) },
      body: new Blob([body]).stream(),
    });
    expect(res.status).toBe(202);
    expect(await hook.closedAfterAnswer()).not.toBeNull();
    for (const c of [...holders, api]) c.destroy();
  }, 20_000);
});

describe('readCapped', () => {
  it('reads a body trickled in many small chunks whole, without keeping a read buffer per chunk', async () => {
    const parts = Array.from({ length: 40 }, (_, i) => `"k${i}":${i},`);
    let i = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (i === parts.length) return c.close();
        await Bun.sleep(1);
        c.enqueue(new TextEncoder().encode(parts[i++]));
      },
    });
    const body = await readCapped(new Request('http://relay.test/hooks/x', { method: 'POST', body: stream }), 1024);
    expect(new TextDecoder().decode(body!)).toBe(parts.join(''));
    expect(body!.buffer.byteLength).toBe(body!.byteLength);
  });
});
