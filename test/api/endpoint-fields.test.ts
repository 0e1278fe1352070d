import { beforeEach, describe, expect, it } from 'bun:test';
import { addGrant, addStore, call, createEndpoint, createTestEnv, executeIntent, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let token: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env, 'operator');
});

const SCORE = { name: 'score', path: 'answers.score', type: 'number' };
const EMAIL = { name: 'email', path: 'hidden.email', type: 'email' };

describe('fields on create', () => {
  it('stores the typed fields and includeBody, and every read shows them', async () => {
    const { endpoint } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id', fields: [SCORE, EMAIL], includeBody: true });
    expect(endpoint).toMatchObject({ fields: [SCORE, EMAIL], includeBody: true });
    const read = await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token });
    expect(read.json.data.endpoint).toMatchObject({ fields: [SCORE, EMAIL], includeBody: true });
  });

  it('defaults to no fields and no body', async () => {
    const { endpoint } = await createEndpoint(env, token);
    expect(endpoint).toMatchObject({ fields: [], includeBody: false });
  });

  it.each([
    ['an unknown type', [{ name: 'score', path: 'a', type: 'money' }], 'body.fields.0.type'],
    ['a name that is not a plain lowercase word', [{ name: 'Score!', path: 'a', type: 'number' }], 'body.fields.0.name'],
    ['a path outside the dot-path language', [{ name: 'score', path: 'a..b', type: 'number' }], 'body.fields.0.path'],
    ['two fields of one name', [SCORE, { ...SCORE, path: 'other' }], 'body.fields'],
    ['more than 20', Array.from({ length: 21 }, (_, i) => ({ name: `f${i}`, path: `p${i}`, type: 'text' })), 'body.fields'],
    ['an unknown key', [{ ...SCORE, value: 3 }], 'body.fields.0'],
  ])('refuses %s with invalid_input (400) naming the field', async (_what, fields, path) => {
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: { triggerVariant: 'generic', fields } });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('invalid_input');
    expect(r.json.error.details.map((d: { path: string }) => d.path)).toContain(path);
    expect(r.text).not.toMatch(/\n\s+at /); // no stack trace
  });
});

describe('fields through the edit intent', () => {
  it('previews the change, and executes it as a new config version', async () => {
    const { endpoint } = await createEndpoint(env, token, { triggerVariant: 'generic', fields: [SCORE] });
    const path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { fields: [SCORE, EMAIL], includeBody: true } } });
    expect(p.status).toBe(201);
    expect(p.json.data.intent.preview.changes).toEqual([
      { field: 'fields', from: [SCORE], to: [SCORE, EMAIL] },
      { field: 'includeBody', from: false, to: true },
    ]);
    expect((await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token })).json.data.endpoint.fields).toEqual([SCORE]);
    expect((await executeIntent(env, token, path, p.json.data.intent, 'f1')).status).toBe(200);
    const after = (await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token })).json.data.endpoint;
    expect(after).toMatchObject({ fields: [SCORE, EMAIL], includeBody: true, configVersion: 2 });
  });

  it('refuses a bad field in the preview with invalid_input', async () => {
    const { endpoint } = await createEndpoint(env, token, { triggerVariant: 'generic' });
    const r = await call(env, 'POST', `/agent/v1/endpoints/${endpoint.id}/edit-intents`, {
      token,
      body: { mode: 'preview', input: { fields: [{ name: 'score', path: 'a', type: 'decimal' }] } },
    });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('invalid_input');
  });
});
