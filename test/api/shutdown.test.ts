/** stop() (SIGTERM) closes the listener first; requests still arriving on open connections get 503 shutting_down. */
import { expect, it } from 'bun:test';
import net from 'node:net';
import { startServer } from '../../src/server/serve.ts';
import { createTestEnv } from '../helpers.ts';

/** Sends `request` on an open socket and resolves with the first answer's text. */
function ask(sock: net.Socket, request: string): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const onData = (d: Buffer) => {
      got += d.toString();
      const [head, body = ''] = got.split('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(head!)?.[1] ?? NaN);
      if (body.length >= length) {
        sock.off('data', onData);
        resolve(got);
      }
    };
    sock.on('data', onData);
    sock.write(request);
  });
}

it('refuses new connections at once and answers requests on open keep-alive connections 503 shutting_down', async () => {
  const env = await createTestEnv();
  const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
  const port = running.server.port!;
  const sock = net.connect(port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  expect(await ask(sock, 'GET /status HTTP/1.1\r\nHost: x\r\n\r\n')).toStartWith('HTTP/1.1 200');

  const stopped = running.stop();
  const inbound = await ask(sock, 'POST /hooks/ep_x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
  expect(inbound).toStartWith('HTTP/1.1 503');
  expect(inbound).toMatch(/retry-after: 5/i);
  expect(JSON.parse(inbound.split('\r\n\r\n')[1]!)).toEqual({ code: 'shutting_down', message: expect.any(String) });
  const api = await ask(sock, 'GET /agent/v1/events HTTP/1.1\r\nHost: x\r\n\r\n');
  expect(JSON.parse(api.split('\r\n\r\n')[1]!).error.code).toBe('shutting_down');

  const fresh = await fetch(`http://127.0.0.1:${port}/status`).then((r) => r.status, () => 'refused');
  expect(fresh).toBe('refused');
  await stopped;
  sock.destroy();
  expect(env.log.lines.filter((l) => l.startsWith('error'))).toEqual([]);
});
