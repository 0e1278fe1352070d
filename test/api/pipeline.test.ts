import { beforeEach, describe, expect, it } from 'bun:test';
import { OPERATIONS } from '../../src/contract/operations.ts';
import { revokeGrant } from '../../src/ops/grants.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, rows, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let admin: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env, { platformAccountId: 'acct-1', installationId: 'inst-1' });
  admin = await addGrant(env, 'admin_assistant');
});

describe('bearer grant', () => {
  const unauthorizedCases: [string, () => Promise<Record<string, string>>][] = [
    ['no header', async () => ({})],
    ['not a bearer scheme', async () => ({ authorization: `Basic ${admin}` })],
    ['malformed token', async () => ({ authorization: 'Bearer not-a-token' })],
    // One character changed; never to itself (a token with 'x' there would stay valid, 1 run in 62).
    ['well-formed but unknown token', async () => ({ authorization: `Bearer ${admin.slice(0, -7)}${admin.at(-7) === 'x' ? 'y' : 'x'}${admin.slice(-6)}` })],
  ];
  for (const [name, headers] of unauthorizedCases) {
    it(`answers 401 for ${name}`, async () => {
      const r = await call(env, 'GET', '/agent/v1/grant', { headers: await headers() });
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toStartWith('Bearer');
      expect(r.json.error.code).toBe('unauthorized');
      expect(r.json.edition.editionKey).toBe('workflow-automation');
      expect(r.json.scope).toBeNull();
      expect(r.json.error.supportCode).toMatch(/^sup-/);
    });
  }

  it('answers 401 once the grant expires', async () => {
    const token = await addGrant(env, 'observer', { ttlMs: 60_000 });
    expect((await call(env, 'GET', '/agent/v1/grant', { token })).status).toBe(200);
    env.clock.advance(60_001);
    const r = await call(env, 'GET', '/agent/v1/grant', { token });
    expect(r.status).toBe(401);
    expect(r.json.error.message).toContain('expired');
  });

  it('answers 401 once the grant is revoked', async () => {
    const token = await addGrant(env, 'observer');
    const grantId = (await call(env, 'GET', '/agent/v1/grant', { token })).json.data.grant.id;
    await revokeGrant(env.core, grantId);
    const r = await call(env, 'GET', '/agent/v1/grant', { token });
    expect(r.status).toBe(401);
    expect(r.json.error.message).toContain('revoked');
  });
});

describe('envelope', () => {
  it('carries edition, scope, actor and refusal around data', async () => {
    const r = await call(env, 'GET', '/agent/v1/grant', { token: admin });
    expect(r.status).toBe(200);
    expect(r.json.edition).toEqual({ platformKey: 'shopify', editionKey: 'workflow-automation', name: 'hookrelay for Shopify Flow' });
    expect(r.json.scope.shopDomain).toBe('demo.myshopify.com');
    expect(r.json.scope.scopes).toContain('endpoint:delete');
    expect(r.json.actor).toEqual({ kind: 'agent', grantId: r.json.scope.grantId, label: 'admin_assistant grant' });
    expect(r.json.refusal).toBeNull();
    expect(r.json.data.grant.tier).toBe('admin_assistant');
  });
});

describe('getCurrentAgentGrant', () => {
  it('shows tier, scopes, expiry and guidance but never the token or its hash', async () => {
    const token = await addGrant(env, 'operator', { scopes: ['setup:read', 'event:read'] });
    const r = await call(env, 'GET', '/agent/v1/grant', { token });
    expect(r.json.data.grant.scopes).toEqual(['setup:read', 'event:read']);
    expect(r.json.data.grant.expiresInSeconds).toBe(3600);
    expect(r.json.data.grant.revoked).toBe(false);
    expect(r.json.data.safetyGuidance.length).toBeGreaterThan(2);
    const hash = (await rows<{ token_hash: string }>(env, 'SELECT token_hash FROM grants')).map((g) => g.token_hash);
    expect(r.text).not.toContain(token);
    for (const h of hash) expect(r.text).not.toContain(h);
  });
});

describe('scopes', () => {
  it('refuses with 403 insufficient_scope naming the missing scopes', async () => {
    const observer = await addGrant(env, 'observer');
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token: observer, body: { triggerVariant: 'generic' } });
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe('insufficient_scope');
    expect(r.json.refusal.category).toBe('scope');
    expect(r.json.refusal.recommendedAction).toBeString();
    expect(r.json.error.details.missingScopes).toEqual(['endpoint:write']);
    expect(await count(env, 'endpoints')).toBe(0);
  });

  it('lets a grant narrowed below its tier use only what it holds', async () => {
    const narrow = await addGrant(env, 'operator', { scopes: ['setup:read'] });
    expect((await call(env, 'GET', '/agent/v1/events', { token: narrow })).status).toBe(403);
  });
});

describe('expected-context headers', () => {
  const headers = {
    'X-Service-Expected-Platform-Key': 'shopify',
    'X-Service-Expected-Platform-Account-Id': 'acct-1',
    'X-Service-Expected-Shop-Domain': 'demo.myshopify.com',
    'X-Service-Expected-Installation-Id': 'inst-1',
  };

  it('passes when all four match', async () => {
    expect((await call(env, 'GET', '/agent/v1/grant', { token: admin, headers })).status).toBe(200);
  });

  for (const name of Object.keys(headers)) {
    it(`answers 403 agent_context_mismatch when ${name} differs`, async () => {
      const r = await call(env, 'GET', '/agent/v1/events', { token: admin, headers: { ...headers, [name]: 'other' } });
      expect(r.status).toBe(403);
      expect(r.json.error.code).toBe('agent_context_mismatch');
      expect(r.json.error.details.header).toBe(name.toLowerCase());
    });
  }
});

describe('input validation', () => {
  it('answers 400 invalid_input with the issues, never the values', async () => {
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token: admin, body: { triggerVariant: 'nope', sourceLabel: 'whsec_canary' } });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('invalid_input');
    expect(r.json.error.details[0].path).toBe('body.triggerVariant');
    expect(r.text).not.toContain('nope');
  });

  it('answers 400 for malformed JSON, 415 for another content type, 413 past 1 MiB', async () => {
    expect((await call(env, 'POST', '/agent/v1/endpoints', { token: admin, body: '{"triggerVariant":' })).json.error.code).toBe('invalid_input');
    const r415 = await call(env, 'POST', '/agent/v1/endpoints', { token: admin, body: '{}', headers: { 'content-type': 'text/plain' } });
    expect(r415.status).toBe(415);
    const big = JSON.stringify({ triggerVariant: 'generic', name: 'x'.repeat(1024 * 1024) });
    const r413 = await call(env, 'POST', '/agent/v1/endpoints', { token: admin, body: big });
    expect(r413.status).toBe(413);
    expect(r413.json.error.code).toBe('payload_too_large');
  });

  it('rejects unknown body fields', async () => {
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token: admin, body: { triggerVariant: 'generic', secret: 'mine' } });
    expect(r.status).toBe(400);
  });

  it('validates query parameters', async () => {
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'outcome=lost', 'since=yesterday', 'cursor=zzz']) {
      const r = await call(env, 'GET', `/agent/v1/events?${q}`, { token: admin });
      expect(r.status, q).toBe(400);
      expect(r.json.error.code).toBe('invalid_input');
    }
  });
});

describe('routing', () => {
  it('answers 404 for an unknown route and 405 for the wrong method', async () => {
    const r404 = await call(env, 'GET', '/agent/v1/nothing', { token: admin });
    expect(r404.status).toBe(404);
    const r405 = await call(env, 'DELETE', '/agent/v1/endpoints', { token: admin });
    expect(r405.status).toBe(405);
    expect(r405.headers.get('allow')).toBe('POST');
  });

  it('answers malformed percent-escapes with 404 or 400, never a 500', async () => {
    const hook = await env.app.fetch(
      new Request('http://local/hooks/%E0%A4%A', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }),
    );
    expect(hook.status).toBe(404);
    const read = await call(env, 'GET', '/agent/v1/events/%E0%A4%A', { token: admin });
    expect(read.status).toBe(400);
    expect(read.json.error.code).toBe('invalid_input');
  });

  it('serves exactly the operations the manifest marks available', async () => {
    const manifest = (await call(env, 'GET', '/agent/v1/manifest')).json;
    expect(manifest.operations).toHaveLength(OPERATIONS.length);
    for (const op of manifest.operations) {
      const path = op.path.replace('{endpointId}', 'ep_x').replace('{eventId}', 'evt_x');
      const r = await call(env, op.method, path, { token: admin, body: op.method === 'POST' ? {} : undefined });
      if (op.available) expect(r.status, op.operationId).not.toBe(501);
      else {
        expect(r.status, op.operationId).toBe(501);
        expect(r.json.error.code).toBe('not_implemented');
      }
    }
    const available = manifest.operations.filter((o: { available: boolean }) => o.available).map((o: { operationId: string }) => o.operationId);
    expect(available).toEqual(
      expect.arrayContaining([
        'getAgentOperationsManifest',
        'getCurrentAgentGrant',
        'createEndpoint',
        'getEndpointDetail',
        'listEvents',
        'getEventDetail',
        'getLatestEventResult',
      ]),
    );
  });
});

describe('store isolation', () => {
  it('answers 404 for ids of another store, exactly as for unknown ids', async () => {
    const { endpoint } = await createEndpoint(env, admin);
    await addStore(env, { shopDomain: 'other.myshopify.com' });
    const other = await addGrant(env, 'admin_assistant', { shop: 'other.myshopify.com' });
    const theirs = await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token: other });
    const unknown = await call(env, 'GET', '/agent/v1/endpoints/ep_doesnotexist', { token: other });
    expect(theirs.status).toBe(404);
    expect(theirs.json.error.message).toBe(unknown.json.error.message);
    expect(theirs.text).not.toContain(endpoint.id);
  });
});
