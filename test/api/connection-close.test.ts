/**
 * `Connection: close` and HTTP/1.0 over real sockets: the answer says `Connection: close` and the server closes the
 * connection after it (serve.ts closeAfter), on /hooks, the Agent Operations API and /status. HTTP/1.0 without a
 * Host header comes with a bare path for its URL: it is answered as any request (it was a 500).
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { hmacHex } from '../../src/lib/crypto.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { addGrant, addStore, count, createEndpoint, createTestEnv, orderEvent, type TestEnv } from '../helpers.ts';
import { Conn } from './_sockets.ts';

let env: TestEnv;
let running: RunningServer;
let token: string;
let hookPath: string;
let secret: string;

beforeAll(async () => {
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env);
  const ep = await createEndpoint(env, token);
  secret = ep.secret;
  hookPath = `/hooks/${ep.endpoint.id}`;
  running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
});
afterAll(() => running.stop());

const open = (bytes: string) => new Conn(running.server.port!, bytes);
const hook = (version: string, headers: string, ext: string) => {
  const body = orderEvent(ext);
  return `POST ${hookPath} HTTP/${version}\r\n${headers}Content-Type: application/json\r\nX-Hookrelay-Signature: ${hmacHex(secret, body)}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
};
const ROUTES: [name: string, status: number, request: (version: string, headers: string, ext: string) => string][] = [
  ['/hooks', 202, hook],
  ['/agent/v1/grant', 200, (v, headers) => `GET /agent/v1/grant HTTP/${v}\r\n${headers}Authorization: Bearer ${token}\r\n\r\n`],
  ['/status', 200, (v, headers) => `GET /status HTTP/${v}\r\n${headers}\r\n`],
];
const ASKS: [name: string, version: string, headers: string][] = [
  ['Connection: close', '1.1', 'Host: x\r\nConnection: close\r\n'],
  ['Connection: Keep-Alive, Close', '1.1', 'Host: x\r\nConnection: Keep-Alive, Close\r\n'],
  ['HTTP/1.0 without a Host header', '1.0', ''],
];

describe('a request that asks for the connection to be closed', () => {
  for (const [route, status, request] of ROUTES) {
    for (const [ask, version, headers] of ASKS) {
      it.concurrent(`${ask} on ${route}: answered, then the connection is closed`, async () => {
        const c = open(request(version, headers, `close-${route}-${ask}`));
        const a = await c.answer();
        expect(a?.status).toBe(status);
        expect(a?.headers.connection).toBe('close');
        expect(await c.closedAfterAnswer()).not.toBeNull();
      }, 15_000);
    }
  }

  it('loses no acknowledged event: each 202 is a stored receipt', async () => {
    const c = open(hook('1.1', 'Host: x\r\nConnection: close\r\n', 'close-stored'));
    const a = await c.answer();
    expect(a?.status).toBe(202);
    await Bun.sleep(50); // the group commit answered the 202; the row is there
    expect(await count(env, 'events', 'id = ?', a!.json.eventId)).toBe(1);
    c.destroy();
  });
});

describe('a keep-alive request', () => {
  it('keeps its connection open for the next request', async () => {
    const c = open(hook('1.1', 'Host: x\r\n', 'keep-alive-1'));
    expect((await c.answer())?.status).toBe(202);
    expect(await c.closedAfterAnswer(5_000)).toBeNull();
    c.destroy();
  }, 15_000);
});
