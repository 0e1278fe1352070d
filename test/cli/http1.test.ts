/**
 * The plain HTTP/1.1 exchange client commands use for http:// base URLs (src/client/http1.ts), against real servers
 * on loopback: Bun.serve for what a hookrelay server answers, raw TCP servers for what a broken or hostile peer
 * could send.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Server, TCPSocketListener } from 'bun';
import { fetchFor, http1Fetch } from '../../src/client/http1.ts';
import { HookrelayClient } from '../../src/client/http.ts';

let server: Server<undefined>;
let base: string;
const seen: { method: string; url: string; headers: Record<string, string>; body: string }[] = [];

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url);
      seen.push({ method: req.method, url: url.pathname + url.search, headers: Object.fromEntries(req.headers), body: await req.text() });
      if (url.pathname === '/big') return new Response('y'.repeat(4 << 20), { headers: { 'content-type': 'text/plain' } });
      if (url.pathname === '/empty') return new Response(null, { status: 204 });
      if (url.pathname === '/redirect') return new Response(null, { status: 302, headers: { location: '/elsewhere' } });
      if (url.pathname === '/stream') {
        // No length known in advance: Bun sends it chunked.
        const parts = ['{"a":', '"', 'x'.repeat(70_000), '"}'];
        return new Response(
          new ReadableStream({
            pull(c) {
              const p = parts.shift();
              if (p === undefined) c.close();
              else c.enqueue(new TextEncoder().encode(p));
            },
          }),
          { headers: { 'content-type': 'application/json' } },
        );
      }
      return Response.json({ ok: true, utf8: 'héllo ✓' }, { status: url.pathname === '/missing' ? 404 : 200, headers: { 'x-two': 'a' } });
    },
  });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.stop(true));

/** A TCP server answering every connection with `reply` (bytes as given), then closing or not. */
function rawServer(reply: string, close = true): TCPSocketListener<undefined> {
  return Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(s) {
        if (reply) s.write(reply);
        if (close) s.end();
      },
    },
  });
}

async function failure(p: Promise<unknown>): Promise<{ name?: string; code?: string; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { name?: string; code?: string; message: string };
  }
  throw new Error('expected a failure');
}

describe('http1Fetch', () => {
  it('sends the method, path, query, headers and body as given, with Host and Content-Length', async () => {
    seen.length = 0;
    const body = JSON.stringify({ note: 'ünïcode ✓' });
    const res = await http1Fetch(`${base}/agent/v1/x?a=1&b=%20`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k1' },
      body,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, utf8: 'héllo ✓' });
    expect(res.headers.get('x-two')).toBe('a');
    const req = seen[0]!;
    expect(req).toMatchObject({ method: 'POST', url: '/agent/v1/x?a=1&b=%20', body });
    expect(req.headers).toMatchObject({
      host: `127.0.0.1:${server.port}`,
      'content-type': 'application/json',
      'idempotency-key': 'k1',
      'content-length': String(Buffer.byteLength(body)),
    });
  });

  it('answers non-2xx, bodiless and redirect statuses as they are (no redirect followed)', async () => {
    expect((await http1Fetch(`${base}/missing`)).status).toBe(404);
    const empty = await http1Fetch(`${base}/empty`);
    expect([empty.status, await empty.text()]).toEqual([204, '']);
    const moved = await http1Fetch(`${base}/redirect`);
    expect([moved.status, moved.headers.get('location')]).toEqual([302, '/elsewhere']);
  });

  it('reads a chunked answer whole', async () => {
    const res = await http1Fetch(`${base}/stream`);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const doc = (await res.json()) as { a: string };
    expect(doc.a.length).toBe(70_000);
  });

  it('reads a large answer whole (an audit export)', async () => {
    const res = await http1Fetch(`${base}/big`);
    expect((await res.text()).length).toBe(4 << 20);
  });

  it('refuses a header value that would end the header early, before connecting', async () => {
    seen.length = 0;
    for (const value of ['a\r\nx-evil: 1', 'a\nb', 'a\u0000b', 'shop-✓.myshopify.com']) {
      expect(await failure(http1Fetch(`${base}/`, { headers: { 'x-shop': value } }))).toBeInstanceOf(TypeError);
    }
    expect(await failure(http1Fetch(`${base}/`, { headers: { 'bad name': 'v' } }))).toBeInstanceOf(TypeError);
    expect(await failure(http1Fetch(`${base}/`, { method: 'GET /x HTTP/1.1\r\n' }))).toBeInstanceOf(TypeError);
    expect(seen).toEqual([]);
  });

  it('fails with ECONNREFUSED where nothing listens, and with the signal when it times out', async () => {
    const closed = rawServer('');
    const port = closed.port;
    closed.stop(true);
    expect((await failure(http1Fetch(`http://127.0.0.1:${port}/status`))).code).toBe('ECONNREFUSED');
    const silent = rawServer('', false);
    try {
      const started = Date.now();
      const err = await failure(http1Fetch(`http://127.0.0.1:${silent.port}/status`, { signal: AbortSignal.timeout(150) }));
      expect(err.name).toBe('TimeoutError');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      silent.stop(true);
    }
  });

  it('fails as a broken connection on a cut or malformed answer, and skips an interim 100', async () => {
    const cases: [string, string | number][] = [
      ['HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc', 'ECONNRESET'],
      ['HTTP/1.1 200 OK\r\ncontent-le', 'ECONNRESET'],
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab', 'ECONNRESET'],
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', 'EPROTO'],
      ['HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n', 'EPROTO'],
      ['SSH-2.0-OpenSSH_9.2\r\n\r\n', 'EPROTO'],
      ['HTTP/1.1 200 OK\r\nno colon here\r\n\r\n', 'EPROTO'],
      ['', 'ECONNRESET'],
      ['HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok', 201],
      ['HTTP/1.0 200 OK\r\n\r\nuntil close', 200],
    ];
    for (const [reply, expected] of cases) {
      const peer = rawServer(reply);
      try {
        const outcome = await http1Fetch(`http://127.0.0.1:${peer.port}/`).then(
          (r) => r.status,
          (e: { code?: string }) => e.code ?? String(e),
        );
        expect({ reply, outcome }).toEqual({ reply, outcome: expected });
      } finally {
        peer.stop(true);
      }
    }
  });
  it('ends the exchange at the declared length when the server keeps the connection open', async () => {
    for (const [reply, status, text] of [
      ['HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok', 200, 'ok'],
      ['HTTP/1.1 204 No Content\r\n\r\n', 204, ''],
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n3\r\n!!!\r\n0\r\n\r\n', 200, 'ok!!!'],
    ] as const) {
      const peer = rawServer(reply, false);
      try {
        const res = await http1Fetch(`http://127.0.0.1:${peer.port}/`, { signal: AbortSignal.timeout(2_000) });
        expect([res.status, await res.text()]).toEqual([status, text]);
      } finally {
        peer.stop(true);
      }
    }
  });
});

describe('fetchFor', () => {
  it('takes the plain exchange for http:// without a proxy, fetch otherwise', () => {
    expect(fetchFor('http://127.0.0.1:8787', {})).toBe(http1Fetch);
    expect(fetchFor('HTTP://relay.internal', {})).toBe(http1Fetch);
    expect(fetchFor('https://relay.example.com', {})).toBe(fetch);
    for (const v of ['http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY']) expect(fetchFor('http://127.0.0.1:8787', { [v]: 'http://proxy:3128' })).toBe(fetch);
  });

  it('carries the client: a public read and an error answer over the plain exchange', async () => {
    const client = new HookrelayClient({ baseUrl: base, timeoutMs: 5_000 });
    const ok = await client.getPublic('/status');
    expect([ok.status, JSON.parse(ok.body).ok]).toEqual([200, true]);
    const missing = await client.getPublic('/missing');
    expect(missing.status).toBe(404);
  });
});
