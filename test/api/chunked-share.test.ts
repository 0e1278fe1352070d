/**
 * The bound on bodies read as streams (chunked, no Content-Length) is shared out by client address (issue 35,
 * finding 4): one address stalling more uploads than the whole bound holds BODY_READ.streamsPerClient of them, the
 * rest answered 503 server_busy at once, and a correctly signed chunked event from another address is accepted.
 * Runs with the shipped limits over real sockets; the other address is 127.0.0.2 on the loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { BODY_READ } from '../../src/contract/limits.ts';
import { hmacHex } from '../../src/lib/crypto.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { until } from '../fixtures/handoff.ts';
import { addGrant, addStore, createEndpoint, createTestEnv, orderEvent } from '../helpers.ts';
import { Conn } from './_sockets.ts';

/** More stalled uploads from one address than the whole bound. */
const STALLED = BODY_READ.streamsInFlight + 6;

let running: RunningServer;
let hookPath: string;
let secret: string;

beforeAll(async () => {
  const env = await createTestEnv();
  await addStore(env);
  const ep = await createEndpoint(env, await addGrant(env));
  secret = ep.secret;
  hookPath = `/hooks/${ep.endpoint.id}`;
  running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
});
afterAll(() => running.stop(), 30_000);

const head = (path: string, headers = '') =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}Transfer-Encoding: chunked\r\n\r\n`;

describe('bodies without a Content-Length from one address', () => {
  it(`hold at most ${BODY_READ.streamsPerClient} of the ${BODY_READ.streamsInFlight} reads; another address's signed chunked event is accepted meanwhile`, async () => {
    const stalled = Array.from({ length: STALLED }, () => new Conn(running.server.port!, `${head(hookPath)}5\r\n{"a":\r\n`, '127.0.0.1'));
    try {
      // Every upload past the address's share is refused at once; the rest wait for bytes that never come.
      const answered = () => stalled.filter((c) => c.answeredAt !== null || c.closedAt !== null).length;
      await until(() => answered() >= STALLED - BODY_READ.streamsPerClient, 10_000).catch(() => {});
      const refused = await Promise.all(stalled.filter((c) => c.answeredAt !== null).map((c) => c.answer()));
      expect(refused).toHaveLength(STALLED - BODY_READ.streamsPerClient);
      for (const a of refused) {
        expect(a?.status).toBe(503);
        expect(a?.json).toEqual({ code: 'server_busy', message: expect.stringContaining('from your address') });
      }

      const body = orderEvent('chunked-other-address');
      const sig = hmacHex(secret, body);
      const other = new Conn(
        running.server.port!,
        `${head(hookPath, `X-Hookrelay-Signature: ${sig}\r\n`)}${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`,
        '127.0.0.2',
      );
      const a = await other.answer();
      expect(a?.status).toBe(202);
      expect(a?.json.status).toBe('accepted');
      other.destroy();

      // The address's share was still held throughout: nothing of it answered, cut or closed yet.
      expect(stalled.filter((c) => c.answeredAt === null && c.closedAt === null)).toHaveLength(BODY_READ.streamsPerClient);
    } finally {
      for (const c of stalled) c.destroy();
    }
  }, 60_000);
});
