/** A full disk (SQLite's page limit, the production SQLITE_FULL): stable 503s everywhere, /status says so, recovery. */
import { describe, expect, it } from 'bun:test';
import { addGrant, addStore, call, createEndpoint, createTestEnv, sendHook, sqliteOnly } from '../helpers.ts';
import { bigOrderEvent, fillDisk } from '../fixtures/disk-full.ts';

async function fullBox() {
  const env = await createTestEnv();
  await addStore(env);
  const token = await addGrant(env);
  const { endpoint, secret } = await createEndpoint(env, token);
  expect((await sendHook(env, endpoint, secret, bigOrderEvent('before'))).status).toBe(202);
  const free = fillDisk(env.repo);
  return { env, token, endpoint, secret, free };
}

// SQLite-only: the full disk is SQLite's own page limit (test/fixtures/disk-full.ts).
describe.if(sqliteOnly)('a full disk', () => {
  it('inbound answers 503 storage_unavailable with Retry-After, no driver text, and one log line', async () => {
    const { env, endpoint, secret } = await fullBox();
    const res = await env.app.fetch(
      new Request(`http://local/hooks/${endpoint.id}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-hookrelay-signature': new Bun.CryptoHasher('sha256', secret).update(bigOrderEvent('full-1')).digest('hex'),
        },
        body: bigOrderEvent('full-1'),
      }),
    );
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('30');
    const json = (await res.json()) as any;
    expect(json.code).toBe('storage_unavailable');
    expect(Object.keys(json).sort()).toEqual(['code', 'message']);
    for (let i = 2; i <= 4; i++) expect((await sendHook(env, endpoint, secret, bigOrderEvent(`full-${i}`))).json.code).toBe('storage_unavailable');
    const log = env.log.lines.join('\n');
    expect(log).not.toContain('database or disk is full');
    expect(env.log.lines.filter((l) => l.startsWith('error')).length).toBe(1);
  });

  it('/status is degraded (503) with the storage fault, then operational once a write succeeds again', async () => {
    const { env, endpoint, secret, free } = await fullBox();
    expect((await call(env, 'GET', '/status')).json.status).toBe('operational');
    await sendHook(env, endpoint, secret, bigOrderEvent('full-1'));

    const degraded = await call(env, 'GET', '/status');
    expect(degraded.status).toBe(503);
    expect(degraded.json.status).toBe('degraded');
    const storage = degraded.json.components.find((c: any) => c.name === 'storage');
    expect(storage).toMatchObject({ status: 'degraded', code: 'storage_unavailable', fault: 'full' });
    expect(storage.failingSince).toBeString();
    expect(degraded.text).not.toContain('SQLITE');

    free();
    expect((await sendHook(env, endpoint, secret, bigOrderEvent('after'))).status).toBe(202);
    const back = await call(env, 'GET', '/status');
    expect(back.status).toBe(200);
    expect(back.json.status).toBe('operational');
    expect(env.log.lines.some((l) => l.startsWith('info storage: writes succeed again'))).toBe(true);
  });

  it('API reads answer 503 storage_unavailable in the envelope, never 500 internal_error', async () => {
    const { env, token } = await fullBox();
    const seen = new Set<number>();
    let refused: Awaited<ReturnType<typeof call>> | null = null;
    // Each read writes its audit row; they fit in the last page's free space until it is full.
    for (let i = 0; i < 2000 && !refused; i++) {
      if (i % 100 === 99) env.clock.advance(60_000); // stay under the per-minute read limit
      const r = await call(env, 'GET', '/agent/v1/events', { token });
      seen.add(r.status);
      if (r.status !== 200) refused = r;
    }
    expect(refused).not.toBeNull();
    expect([...seen].sort()).toEqual([200, 503]);
    expect(refused!.headers.get('retry-after')).toBe('30');
    expect(refused!.json.error.code).toBe('storage_unavailable');
    expect(refused!.json.error.details).toEqual({ fault: 'full' });
    expect(refused!.json.edition).toBeDefined();
    expect(refused!.text).not.toContain('disk is full');
    expect(env.log.lines.join('\n')).not.toContain('internal error');
    expect((await call(env, 'GET', '/status')).json.components.find((c: any) => c.name === 'storage').status).toBe('degraded');
  });
});
