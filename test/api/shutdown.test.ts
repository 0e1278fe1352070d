/** stop() (SIGTERM) closes the listener first; requests still arriving on open connections get 503 shutting_down. */
import { expect, it } from 'bun:test';
import net from 'node:net';
import { startServer } from '../../src/server/serve.ts';
import { createTestEnv } from '../helpers.ts';

/** Resolves with what the socket received up to its first complete answer, or up to its close ('' if nothing). */
function answer(sock: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const done = () => {
      sock.off('data', onData);
      sock.off('close', done);
      resolve(got);
    };
    const onData = (d: Buffer) => {
      got += d.toString();
      const [head, body = ''] = got.split('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(head!)?.[1] ?? NaN);
      if (body.length >= length) done();
    };
    sock.on('data', onData);
    sock.once('close', done);
  });
}

async function connect(port: number): Promise<net.Socket> {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  return sock;
}

/** Writes and lets the server (same process) read it: one event-loop turn with I/O polled. */
async function send(sock: net.Socket, text: string): Promise<void> {
  await new Promise((r) => sock.write(text, r));
  await Bun.sleep(20);
}

it('refuses new connections at once, serves nothing more on idle keep-alive connections, and answers requests still arriving 503 shutting_down', async () => {
  const env = await createTestEnv();
  const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
  const port = running.server.port!;
  const idle = await connect(port);
  const first = answer(idle);
  await send(idle, 'GET /status HTTP/1.1\r\nHost: x\r\n\r\n');
  expect(await first).toStartWith('HTTP/1.1 200');
  // Two requests on their way when the stop begins: their first bytes are in, the rest comes after.
  const inbound = await connect(port);
  await send(inbound, 'POST /hooks/ep_x HTTP/1.1\r\nHost: x\r\nContent-Ty');
  const api = await connect(port);
  await send(api, 'GET /agent/v1/events HTTP/1.1\r\nHo');

  // What arrives right after the stop began (written before anything awaits, as traffic keeps coming).
  const stopped = running.stop();
  const answers = [inbound, api, idle].map(answer);
  inbound.write('pe: application/json\r\nContent-Length: 2\r\n\r\n{}');
  api.write('st: x\r\n\r\n');
  if (!idle.destroyed) idle.write('GET /status HTTP/1.1\r\nHost: x\r\n\r\n');
  const [late, lateApi, afterIdle] = await Promise.all(answers);
  expect(late).toStartWith('HTTP/1.1 503');
  expect(late).toMatch(/retry-after: 5/i);
  expect(JSON.parse(late!.split('\r\n\r\n')[1]!)).toEqual({ code: 'shutting_down', message: expect.any(String) });
  expect(JSON.parse(lateApi!.split('\r\n\r\n')[1]!).error.code).toBe('shutting_down');
  // An idle keep-alive connection: Bun 1.4's stop closes it at once (a client sends again on a new connection,
  // refused below); Bun 1.3's keeps it open, and a request on it is answered 503 shutting_down. Never served.
  if (afterIdle !== '') expect(JSON.parse(afterIdle!.split('\r\n\r\n')[1]!)).toEqual({ code: 'shutting_down', message: expect.any(String) });

  const fresh = await fetch(`http://127.0.0.1:${port}/status`).then(
    (r) => r.status,
    () => 'refused',
  );
  expect(fresh).toBe('refused');
  await stopped;
  for (const sock of [idle, inbound, api]) sock.destroy();
  expect(env.log.lines.filter((l) => l.startsWith('error'))).toEqual([]);
});
