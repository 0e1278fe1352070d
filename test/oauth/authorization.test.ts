/** The authorization half of the OAuth server (src/oauth/authorization.ts): start, find, approve, deny, finish. */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { AppError } from '../../src/contract/errors.ts';
import {
  approveAuthorization,
  authorizationRedirect,
  denyAuthorization,
  findAuthorization,
  finishAuthorization,
  OAuthError,
  offeredTiers,
  startAuthorization,
} from '../../src/oauth/authorization.ts';
import { listGrants } from '../../src/ops/grants.ts';
import { addGrant, rows } from '../helpers.ts';
import { authorizeQuery, clientDocument, oauthWorld, pkce, REDIRECT, type OAuthWorld } from './_world.ts';

let w: OAuthWorld;
let clientId: string;
beforeAll(async () => {
  w = await oauthWorld();
  clientId = w.serve('/client.json', { body: clientDocument() });
});
afterAll(() => w.close());

/** What a call threw, for assertions on its fields. */
async function thrown(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a refusal');
}

describe('startAuthorization', () => {
  it('records a pending request: the client from its document (unverified), a user code, the tiers up to the scope asked', async () => {
    const req = await startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge));
    expect(req.id).toMatch(/^oar_[0-9A-Za-z]{32,}$/);
    expect(req.userCode).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(req.client).toEqual({ id: clientId, name: 'Test Agent', uri: 'https://agent.example', verified: false });
    expect(req).toMatchObject({ redirectUri: REDIRECT, resource: 'http://local/agent/v1/mcp', state: 'st-123', status: 'pending', grantId: null });
    expect(req.requestedScopes).toEqual(['setup:read', 'event:read', 'endpoint:write']);
    expect(req.offeredTiers).toEqual(['observer', 'operator']);
    expect(req.expiresAt - req.createdAt).toBe(10 * 60_000);
    expect((await findAuthorization(w.core, req.id))?.id).toBe(req.id);
    const typed = req.userCode.toLowerCase().replace('-', '');
    expect((await findAuthorization(w.core, typed))?.id).toBe(req.id);
    expect(await findAuthorization(w.core, 'BBBB-BBBB')).toBeNull();
  });

  it('asks for the observer tier’s scopes when the client sends no scope of ours; offline_access is every client’s', async () => {
    for (const scope of [null, 'offline_access']) {
      const req = await startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge, { scope }));
      expect(req.requestedScopes).toEqual(['setup:read', 'event:read']);
      expect(req.offeredTiers).toEqual(['observer']);
    }
    const mixed = await startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge, { scope: 'event:read offline_access' }));
    expect(mixed.requestedScopes).toEqual(['event:read']);
  });

  it('refuses a redirect_uri not in the client’s metadata document, without redirecting to it', async () => {
    const err = await thrown(startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge, { redirect_uri: 'https://evil.example/cb' })));
    expect(err).toBeInstanceOf(OAuthError);
    expect(err).toMatchObject({ error: 'invalid_request', redirectable: false, status: 400 });
    expect(err.description).toContain('redirect_uris');
  });

  it('takes a loopback redirect_uri on any port (OAuth 2.1 §8.4.2; localhost too), and nothing else that differs from the document', async () => {
    const start = (id: string, redirect_uri: string) => startAuthorization(w.core, authorizeQuery(w, id, pkce().challenge, { redirect_uri }));
    const onPort = await start(clientId, 'http://127.0.0.1:51234/callback');
    expect(onPort.redirectUri).toBe('http://127.0.0.1:51234/callback');
    await approveAuthorization(w.core, w.human, onPort.userCode, { tier: 'observer', ttl: '1d' });
    expect(await finishAuthorization(w.core, onPort.id)).toStartWith('http://127.0.0.1:51234/callback?code=hro_');
    const v6 = w.serve('/v6.json', { body: clientDocument(['http://[::1]/callback', 'https://agent.example/cb']) });
    expect((await start(v6, 'http://[::1]:40000/callback')).redirectUri).toBe('http://[::1]:40000/callback');
    const named = w.serve('/localhost.json', { body: clientDocument(['http://localhost:3118/callback']) });
    expect((await start(named, 'http://localhost:49152/callback')).redirectUri).toBe('http://localhost:49152/callback');
    for (const [id, redirect] of [
      [clientId, 'http://127.0.0.1:51234/other'],
      [clientId, 'http://localhost:9/callback'],
      [clientId, 'http://x@127.0.0.1:51234/callback'],
      [clientId, 'https://127.0.0.1:9/callback'],
      [clientId, 'http://127.0.0.1:51234/callback?next=1'],
      [v6, 'https://agent.example:8443/cb'],
      [v6, 'not a url'],
      [named, 'http://127.0.0.1:49152/callback'],
      [named, 'http://localhost.evil.example:49152/callback'],
    ] as const) {
      expect({ redirect, error: (await thrown(start(id, redirect))).description }).toEqual({
        redirect,
        error: 'redirect_uri is not one of the redirect_uris of the client’s metadata document.',
      });
    }
  });

  it('refuses a missing client_id and a repeated redirect_uri as error pages', async () => {
    expect(await thrown(startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge, { client_id: null })))).toMatchObject({
      error: 'invalid_request',
      redirectable: false,
    });
    const q = authorizeQuery(w, clientId, pkce().challenge);
    q.append('redirect_uri', REDIRECT);
    expect(await thrown(startAuthorization(w.core, q))).toMatchObject({ error: 'invalid_request', redirectable: false });
  });

  it('refuses what the client got wrong once it is trusted, as a redirect: no PKCE, plain PKCE, another response type, resource, scope', async () => {
    const { challenge } = pkce();
    const cases: [Record<string, string | null>, string][] = [
      [{ code_challenge: null }, 'invalid_request'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge_method: null }, 'invalid_request'],
      [{ code_challenge: 'short' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ resource: null }, 'invalid_target'],
      [{ resource: 'https://elsewhere.example/mcp' }, 'invalid_target'],
      [{ resource: 'http://local/agent/v1/mcp/' }, 'invalid_target'],
      [{ scope: 'setup:read orders:write' }, 'invalid_scope'],
      [{ state: 's'.repeat(513) }, 'invalid_request'],
    ];
    for (const [fields, error] of cases) {
      const err = await thrown(startAuthorization(w.core, authorizeQuery(w, clientId, challenge, fields)));
      expect({ fields, error: err.error, redirectable: err.redirectable }).toEqual({ fields, error, redirectable: true });
    }
  });

  it('a redirectable refusal goes back to the client with its state and iss, by authorizationRedirect', async () => {
    const q = authorizeQuery(w, clientId, pkce().challenge, { code_challenge_method: 'plain' });
    const err = await thrown(startAuthorization(w.core, q));
    const back = new URL(
      authorizationRedirect(w.core, { redirectUri: q.get('redirect_uri')!, state: q.get('state') }, { error: err.error, error_description: err.description }),
    );
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(Object.fromEntries(back.searchParams)).toEqual({
      error: 'invalid_request',
      error_description: 'PKCE is required: code_challenge_method must be S256.',
      state: 'st-123',
      iss: 'http://local',
    });
  });

  it('accepts the API as the resource', async () => {
    const req = await startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge, { resource: 'http://local/agent/v1' }));
    expect(req.resource).toBe('http://local/agent/v1');
  });
});

describe('offeredTiers', () => {
  it('offers from observer up to the lowest tier covering the scope, leaving out a tier holding none of it', () => {
    expect(offeredTiers(['setup:read'])).toEqual(['observer']);
    expect(offeredTiers(['replay:execute'])).toEqual(['recovery_operator']);
    expect(offeredTiers(['event:read', 'secret:rotate'])).toEqual(['observer', 'operator', 'recovery_operator']);
    expect(offeredTiers(['endpoint:delete'])).toEqual(['admin_assistant']);
  });
});

describe('approveAuthorization, denyAuthorization, finishAuthorization', () => {
  it('refuses a tier above the requested scope, a TTL over 90 days and a bad label, leaving the request pending', async () => {
    const req = await startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge));
    for (const choice of [
      { tier: 'recovery_operator', ttl: '8h' },
      { tier: 'admin_assistant', ttl: '8h' },
      { tier: 'operator', ttl: '91d' },
      { tier: 'operator', ttl: 'soon' },
      { tier: 'nobody', ttl: '8h' },
      { tier: 'operator', ttl: '8h', label: 'x'.repeat(101) },
    ]) {
      const err = await thrown(approveAuthorization(w.core, w.human, req.userCode, choice));
      expect(err).toBeInstanceOf(AppError);
      expect({ choice, code: err.code }).toEqual({ choice, code: 'invalid_input' });
    }
    expect((await findAuthorization(w.core, req.id))?.status).toBe('pending');
    expect(await finishAuthorization(w.core, req.id)).toBeNull();
  });

  it('issues a grant of the tier within the requested scopes, recording the client; the browser then gets one code with state and iss', async () => {
    const req = await startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge, { scope: 'setup:read endpoint:write replay:execute' }));
    expect(req.offeredTiers).toEqual(['observer', 'operator', 'recovery_operator']);
    const approved = await approveAuthorization(w.core, w.human, req.userCode, { tier: 'operator', ttl: '7d', label: 'Claude' });
    expect(approved).toMatchObject({ status: 'approved', storeId: w.human.store.id });
    const listed = (await listGrants(w.core, 'demo.myshopify.com')).find((g) => g.grantId === approved.grantId);
    expect(listed?.client).toEqual({ id: clientId, name: 'Test Agent' });
    const byHand = await addGrant(w, 'observer');
    expect((await listGrants(w.core, 'demo.myshopify.com')).filter((g) => g.client === null)).toHaveLength(1);
    expect(byHand).toStartWith('hrg_');
    const [grant] = await rows(w, 'SELECT * FROM grants WHERE id = ?', approved.grantId);
    expect(grant).toMatchObject({ tier: 'operator', label: 'Claude', client_id: clientId, client_name: 'Test Agent' });
    expect(JSON.parse(grant!.scopes)).toEqual(['setup:read', 'endpoint:write']);
    const [audit] = await rows(w, "SELECT * FROM audit_log WHERE operation_id = 'issueGrant' AND target_id = ?", approved.grantId);
    expect(audit).toMatchObject({ actor_kind: 'human', actor_label: 'merchant@test', surface: 'console', outcome: 'ok' });
    expect(audit!.transition).toContain(clientId);

    const location = new URL((await finishAuthorization(w.core, req.id))!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get('code')).toMatch(/^hro_/);
    expect(location.searchParams.get('state')).toBe('st-123');
    expect(location.searchParams.get('iss')).toBe('http://local');
    expect((await findAuthorization(w.core, req.id))?.status).toBe('finished');
    expect(await thrown(finishAuthorization(w.core, req.id))).toMatchObject({ error: 'invalid_request', redirectable: false });
    // Only the code's hash is stored.
    const [code] = await rows(w, 'SELECT * FROM oauth_codes WHERE grant_id = ?', approved.grantId);
    expect(code!.code_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(code)).not.toContain(location.searchParams.get('code'));
    expect(await thrown(approveAuthorization(w.core, w.human, req.id, { tier: 'observer', ttl: '1h' }))).toMatchObject({ code: 'conflict' });
  });

  it('a denial sends the browser back with access_denied, audited as the person’s', async () => {
    const req = await startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge));
    expect((await denyAuthorization(w.core, w.human, req.userCode)).status).toBe('denied');
    const location = new URL((await finishAuthorization(w.core, req.id))!);
    expect(location.searchParams.get('error')).toBe('access_denied');
    expect(location.searchParams.get('state')).toBe('st-123');
    expect(location.searchParams.get('code')).toBeNull();
    const [audit] = await rows(w, "SELECT * FROM audit_log WHERE operation_id = 'denyAuthorization' AND target_id = ?", req.id);
    expect(audit).toMatchObject({ actor_kind: 'human', actor_label: 'merchant@test', store_id: w.human.store.id });
  });

  it('a request nobody decided within ten minutes expires: approving it is refused, its browser is told', async () => {
    const req = await startAuthorization(w.core, authorizeQuery(w, clientId, pkce().challenge));
    w.clock.advance(10 * 60_000 + 1);
    expect((await findAuthorization(w.core, req.id))?.status).toBe('expired');
    expect(await thrown(approveAuthorization(w.core, w.human, req.id, { tier: 'observer', ttl: '1h' }))).toMatchObject({ code: 'conflict' });
    expect(new URL((await finishAuthorization(w.core, req.id))!).searchParams.get('error')).toBe('access_denied');
    expect(await thrown(approveAuthorization(w.core, w.human, 'oar_nothing', { tier: 'observer', ttl: '1h' }))).toMatchObject({ code: 'not_found' });
    expect(await thrown(finishAuthorization(w.core, 'oar_nothing'))).toMatchObject({ error: 'invalid_request', redirectable: false });
  });
});
