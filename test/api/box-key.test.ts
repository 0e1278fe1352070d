/**
 * A box served with a key that does not open its secrets (issue 35, finding 5): serve refuses to start, naming where
 * its key came from and never the key; a secret that stops opening while it runs (another instance sealed it with
 * another key) answers the receipt 503 `secret_key_mismatch`, never 500, and serve's log says why. The same over
 * real processes (SQLite, and a second PostgreSQL instance) is test/e2e/box-key.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { createCore, type Core } from '../../src/core.ts';
import { AppError } from '../../src/contract/errors.ts';
import { hmacHex, newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { createApp } from '../../src/server/app.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { addGrant, addStore, BASE, createEndpoint, createTestEnv, orderEvent, type TestEnv } from '../helpers.ts';

const OTHER_KEY = newSecretKey();
const otherKeyHex = Buffer.from(OTHER_KEY).toString('hex');
const otherKeyB64 = Buffer.from(OTHER_KEY).toString('base64');

let env: TestEnv;
let token: string;

/** A second process's view of the same database, holding another key. */
const otherCore = (log = memoryLog()): Core =>
  createCore({ repo: env.repo, box: new SecretBox(OTHER_KEY, 'HOOKRELAY_SECRET_KEY'), clock: env.clock, log, config: env.core.config });

const signed = (secret: string, ext: string) => {
  const body = orderEvent(ext);
  return { method: 'POST', headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) }, body };
};

/** A fresh box (serve's stop closes its database). */
const freshBox = async () => {
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env);
};

describe('at start', () => {
  beforeAll(freshBox);

  it('serve refuses a key that does not open an endpoint secret: secret_key_mismatch (exit 2) naming the variable, never the key', async () => {
    const { secret } = await createEndpoint(env, token);
    const log = memoryLog();
    const err = await startServer(otherCore(log), { port: 0, host: '127.0.0.1', worker: false }).then(
      (s) => s.stop().then(() => null),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('secret_key_mismatch');
    expect((err as AppError).message).toContain('HOOKRELAY_SECRET_KEY');
    for (const leak of [otherKeyHex, otherKeyB64, secret]) expect((err as AppError).message + log.lines.join('\n')).not.toContain(leak);
  });

  it('serve with the right key starts and answers signed receipts 202', async () => {
    const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
    try {
      const { endpoint, secret } = await createEndpoint(env, token);
      const res = await fetch(`${running.url}/hooks/${endpoint.id}`, signed(secret, 'right-key'));
      expect(res.status).toBe(202);
    } finally {
      await running.stop();
    }
  });
});

describe('while serving', () => {
  let running: RunningServer;
  beforeAll(async () => {
    await freshBox();
    running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
  });
  afterAll(() => running.stop());

  it('a secret sealed with another key answers the receipt 503 secret_key_mismatch, not 500, and the log names the cause', async () => {
    // Another instance (holding another key) makes an endpoint on the shared database.
    const other = createApp(otherCore());
    const made = await other.fetch(
      new Request(`${BASE}/agent/v1/endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
      }),
    );
    expect(made.status).toBe(201);
    const { endpoint, secret } = ((await made.json()) as any).data;

    for (const ext of ['mismatch-1', 'mismatch-2']) {
      const res = await fetch(`${running.url}/hooks/${endpoint.id}`, signed(secret, ext));
      expect(res.status).toBe(503);
      const json = (await res.json()) as any;
      expect(json).toEqual({ code: 'secret_key_mismatch', message: expect.stringContaining('HOOKRELAY_SECRET_KEY') });
      expect(JSON.stringify(json)).not.toContain(secret);
    }
    // In-process too (the app without serve's edge): the inbound path answers it itself.
    const direct = await env.app.fetch(new Request(`${BASE}/hooks/${endpoint.id}`, signed(secret, 'mismatch-3')));
    expect(direct.status).toBe(503);
    expect(((await direct.json()) as any).code).toBe('secret_key_mismatch');

    // One log line for the burst, naming the cause and where the key came from, never a key or secret.
    const said = (env.log as ReturnType<typeof memoryLog>).lines.filter((l) => l.startsWith('error') && l.includes('secret_key_mismatch'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('does not open with the key from');
    expect(env.log.lines.join('\n')).not.toContain(secret);
    expect(env.log.lines.some((l) => / 500 /.test(l))).toBe(false);
  });
});
