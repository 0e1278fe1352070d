/**
 * An endpoint's silence watch (`expectedEvery`): set at creation or through the edit intent (null switches it off),
 * shown on the endpoint read as the shortest exact duration, bounded (5m to 30d), and refused with a clear 400 when
 * it is not a duration. The CLI's create-endpoint sets it with --expected-every.
 */
import { describe, expect, it } from 'bun:test';
import { addGrant, addStore, call, createEndpoint, createTestEnv, executeIntent, row, rows, type TestEnv } from '../helpers.ts';

async function setup() {
  const env = await createTestEnv();
  await addStore(env);
  const token = await addGrant(env, 'operator');
  return { env, token };
}

const read = async (env: TestEnv, token: string, id: string) => (await call(env, 'GET', `/agent/v1/endpoints/${id}`, { token })).json.data.endpoint;

describe('expectedEvery at creation', () => {
  it('is stored in ms, shown on the created endpoint and its read, and absent means not watched', async () => {
    const { env, token } = await setup();
    const { endpoint } = await createEndpoint(env, token, { triggerVariant: 'generic', expectedEvery: '2h' });
    expect(endpoint.expectedEvery).toBe('2h');
    expect((await read(env, token, endpoint.id)).expectedEvery).toBe('2h');
    expect((await row(env, 'SELECT expected_every_ms AS ms FROM endpoints WHERE id = ?', endpoint.id))!.ms).toBe(7_200_000);
    const plain = (await createEndpoint(env, token, { triggerVariant: 'generic' })).endpoint;
    expect(plain.expectedEvery).toBeNull();
    // Given in smaller units, it reads back as the shortest exact duration.
    expect((await createEndpoint(env, token, { triggerVariant: 'generic', expectedEvery: '1440m' })).endpoint.expectedEvery).toBe('1d');
    expect((await createEndpoint(env, token, { triggerVariant: 'generic', expectedEvery: '90m' })).endpoint.expectedEvery).toBe('90m');
  });

  it('accepts the bounds themselves, 5m and 30d', async () => {
    const { env, token } = await setup();
    expect((await createEndpoint(env, token, { triggerVariant: 'generic', expectedEvery: '5m' })).endpoint.expectedEvery).toBe('5m');
    expect((await createEndpoint(env, token, { triggerVariant: 'generic', expectedEvery: '30d' })).endpoint.expectedEvery).toBe('30d');
  });

  const BAD: [string, unknown, string][] = [
    ['not a duration', 'two hours', 'a duration such as 30m, 2h or 1d'],
    ['a fraction', '1.5h', 'a duration such as 30m, 2h or 1d'],
    ['a unit it does not know', '2w', 'a duration such as 30m, 2h or 1d'],
    ['a number without a unit', 7200, 'expected string'],
    ['below 5 minutes', '4m', 'between 5m and 30d'],
    ['above 30 days', '31d', 'between 5m and 30d'],
    ['zero', '0m', 'between 5m and 30d'],
  ];
  for (const [what, value, message] of BAD) {
    it(`refuses ${what} with 400 invalid_input naming the field, creating nothing`, async () => {
      const { env, token } = await setup();
      const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: { triggerVariant: 'generic', expectedEvery: value } });
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('invalid_input');
      expect(r.json.error.message).toContain('body.expectedEvery');
      expect(r.json.error.message.toLowerCase()).toContain(message.toLowerCase());
      expect(r.json.error.details.map((d: { path: string }) => d.path)).toEqual(['body.expectedEvery']);
      expect((await row<{ n: number }>(env, 'SELECT count(*) AS n FROM endpoints'))!.n).toBe(0);
    });
  }
});

describe('expectedEvery through the endpoint edit intent', () => {
  it('sets, changes and switches off the watch, each a new config version, the preview naming the change', async () => {
    const { env, token } = await setup();
    const { endpoint } = await createEndpoint(env, token, { triggerVariant: 'generic' });
    const path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
    const edit = async (input: Record<string, unknown>, key: string) => {
      const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input } });
      expect(p.status).toBe(201);
      const intent = p.json.data.intent;
      const x = await executeIntent(env, token, path, intent, key);
      expect(x.status).toBe(200);
      return intent.preview;
    };

    const on = await edit({ expectedEvery: '30m' }, 'k1');
    expect(on.changes).toEqual([{ field: 'expectedEvery', from: null, to: '30m' }]);
    expect(on.sideEffects.join(' ')).toContain('longer than 30m');
    expect(await read(env, token, endpoint.id)).toMatchObject({ expectedEvery: '30m', configVersion: 2 });

    // The same watch in other units changes nothing.
    const same = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { expectedEvery: '1800s' } } });
    expect(same.json.data.intent.preview.changes).toEqual([]);

    const longer = await edit({ expectedEvery: '1d' }, 'k2');
    expect(longer.changes).toEqual([{ field: 'expectedEvery', from: '30m', to: '1d' }]);
    expect(await read(env, token, endpoint.id)).toMatchObject({ expectedEvery: '1d', configVersion: 3 });

    const off = await edit({ expectedEvery: null }, 'k3');
    expect(off.changes).toEqual([{ field: 'expectedEvery', from: '1d', to: null }]);
    expect(off.sideEffects.join(' ')).toContain('silence watch stops');
    expect(await read(env, token, endpoint.id)).toMatchObject({ expectedEvery: null, configVersion: 4 });
    expect((await row(env, 'SELECT expected_every_ms AS ms FROM endpoints WHERE id = ?', endpoint.id))!.ms).toBeNull();
    // Each config version records the watch it had.
    const versions = await rows<{ version: number; config: string }>(
      env,
      'SELECT version, config FROM endpoint_versions WHERE endpoint_id = ? ORDER BY version',
      endpoint.id,
    );
    expect(versions.map((v) => JSON.parse(v.config).expectedEvery)).toEqual([null, '30m', '1d', null]);
  });

  it('keeps the watch through an edit of another field', async () => {
    const { env, token } = await setup();
    const { endpoint } = await createEndpoint(env, token, { triggerVariant: 'generic', expectedEvery: '6h' });
    const path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { name: 'renamed' } } });
    expect((await executeIntent(env, token, path, p.json.data.intent, 'k')).status).toBe(200);
    expect(await read(env, token, endpoint.id)).toMatchObject({ name: 'renamed', expectedEvery: '6h', configVersion: 2 });
  });

  it('refuses a bad duration in the preview with 400 invalid_input, previewing nothing', async () => {
    const { env, token } = await setup();
    const { endpoint } = await createEndpoint(env, token, { triggerVariant: 'generic' });
    const r = await call(env, 'POST', `/agent/v1/endpoints/${endpoint.id}/edit-intents`, {
      token,
      body: { mode: 'preview', input: { expectedEvery: '2 hours' } },
    });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('invalid_input');
    expect(r.json.error.message).toContain('expectedEvery');
    expect(r.json.error.message).toContain('a duration such as 30m, 2h or 1d');
    expect((await row<{ n: number }>(env, 'SELECT count(*) AS n FROM intents'))!.n).toBe(0);
  });
});
