/**
 * The token half of the OAuth server over HTTP in process: /oauth/token (code with PKCE, refresh with rotation),
 * /oauth/revoke, the metadata documents, and access tokens at the one bearer step, bound to their resource.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { AUTHORIZE_PATH } from '../../src/oauth/metadata.ts';
import { revokeGrant } from '../../src/ops/grants.ts';
import { call, rows } from '../helpers.ts';
import { authorized, clientDocument, oauthWorld, postForm, REDIRECT, type OAuthWorld } from './_world.ts';

let w: OAuthWorld;
let clientId: string;
let otherClient: string;
beforeAll(async () => {
  w = await oauthWorld();
  clientId = w.serve('/client.json', { body: clientDocument() });
  otherClient = w.serve('/other.json', { body: clientDocument() });
});
afterAll(() => w.close());

const MCP = 'http://local/agent/v1/mcp';
const API = 'http://local/agent/v1';

/** The code's exchange as the client sends it; `fields` override or add. */
const exchange = (a: { code: string; verifier: string }, fields: Record<string, string> = {}) =>
  postForm(w, '/oauth/token', {
    grant_type: 'authorization_code',
    code: a.code,
    code_verifier: a.verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
    resource: MCP,
    ...fields,
  });

const refresh = (token: string, fields: Record<string, string> = {}) =>
  postForm(w, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: clientId, ...fields });

/** The MCP endpoint's answer to an initialize with `token` (status and challenge). */
async function mcpStatus(token: string): Promise<{ status: number; challenge: string | null }> {
  const res = await w.app.fetch(
    new Request(MCP, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    }),
  );
  await res.body?.cancel();
  return { status: res.status, challenge: res.headers.get('www-authenticate') };
}

describe('POST /oauth/token: authorization_code', () => {
  it('exchanges a code once for an access token (≤ 1 h) and a refresh token, stored as hashes, never cached', async () => {
    const a = await authorized(w, clientId);
    const r = await exchange(a);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.json).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'setup:read event:read endpoint:write' });
    expect(r.json.access_token).toMatch(/^hra_[0-9A-Za-z]{40,}$/);
    expect(r.json.refresh_token).toMatch(/^hrr_[0-9A-Za-z]{40,}$/);
    const stored = await rows(w, 'SELECT * FROM oauth_tokens WHERE grant_id = ?', a.grantId);
    expect(stored.map((t) => t.kind).sort()).toEqual(['access', 'refresh']);
    expect(JSON.stringify(stored)).not.toContain(r.json.access_token);
    expect(JSON.stringify(stored)).not.toContain(r.json.refresh_token);
    expect(stored.every((t) => t.resource === MCP && t.client_id === clientId)).toBe(true);
    expect((await mcpStatus(r.json.access_token)).status).toBe(200);
  });

  it('gives an access token no longer than its grant', async () => {
    const a = await authorized(w, clientId, { ttl: '30m' });
    expect((await exchange(a)).json.expires_in).toBe(1800);
  });

  it('refuses a PKCE verifier that does not match (invalid_grant, 400)', async () => {
    const a = await authorized(w, clientId);
    const r = await exchange(a, { code_verifier: 'x'.repeat(43) });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: 'invalid_grant' });
    expect(r.json.error_description).toContain('PKCE');
    expect((await exchange(a, { code_verifier: 'short' })).json.error).toBe('invalid_grant');
  });

  it('refuses a reused code, and revokes what its first exchange issued and the grant; audited', async () => {
    const a = await authorized(w, clientId);
    const first = await exchange(a);
    expect(first.status).toBe(200);
    const again = await exchange(a);
    expect(again.status).toBe(400);
    expect(again.json.error).toBe('invalid_grant');
    expect((await mcpStatus(first.json.access_token)).status).toBe(401);
    expect((await refresh(first.json.refresh_token)).json.error).toBe('invalid_grant');
    const [grant] = await rows(w, 'SELECT revoked_at FROM grants WHERE id = ?', a.grantId);
    expect(grant!.revoked_at).not.toBeNull();
    const [audit] = await rows(w, "SELECT * FROM audit_log WHERE operation_id = 'oauthToken' AND grant_id = ?", a.grantId);
    expect(audit).toMatchObject({ outcome: 'refused', error_code: 'invalid_grant', refusal_code: 'oauth_token_reused' });
    expect(audit!.transition).toContain('authorization code used again');
  });

  it('leaves a code untouched by a refused exchange: a stolen code without its verifier neither spends it nor gets the grant revoked', async () => {
    const a = await authorized(w, clientId);
    const wrong: Record<string, string>[] = [
      { code_verifier: 'x'.repeat(43) },
      { code_verifier: 'short' },
      { client_id: otherClient },
      { redirect_uri: 'http://127.0.0.1:9/other' },
    ];
    for (const fields of [...wrong, ...wrong]) {
      const r = await exchange(a, fields);
      expect(r).toMatchObject({ status: 400, json: { error: 'invalid_grant' } });
      expect(r.json.error_description).not.toContain('already used');
    }
    expect((await exchange(a, { resource: API })).json.error).toBe('invalid_target');
    const [code] = await rows(w, 'SELECT used_at FROM oauth_codes WHERE grant_id = ?', a.grantId);
    expect(code!.used_at).toBeNull();
    expect((await rows(w, 'SELECT revoked_at FROM grants WHERE id = ?', a.grantId))[0]!.revoked_at).toBeNull();
    expect(await rows(w, "SELECT id FROM audit_log WHERE operation_id = 'oauthToken' AND grant_id = ?", a.grantId)).toEqual([]);

    const rightful = await exchange(a);
    expect(rightful.status).toBe(200);
    expect((await mcpStatus(rightful.json.access_token)).status).toBe(200);
    // Spent now: the thief's wrong verifier is still only a refusal, and the rightful tokens live on.
    expect((await exchange(a, { code_verifier: 'x'.repeat(43) })).json.error_description).toContain('PKCE');
    expect((await mcpStatus(rightful.json.access_token)).status).toBe(200);
  });

  it('gives two verified exchanges at once exactly one win; the other is a replay that revokes the grant', async () => {
    const a = await authorized(w, clientId);
    const answers = await Promise.all([exchange(a), exchange(a)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
    const won = answers.find((r) => r.status === 200)!.json;
    const lost = answers.find((r) => r.status === 400)!.json;
    expect(lost).toMatchObject({ error: 'invalid_grant', error_description: 'The authorization code was already used; what it issued is revoked.' });
    expect((await rows(w, 'SELECT revoked_at FROM grants WHERE id = ?', a.grantId))[0]!.revoked_at).not.toBeNull();
    expect((await mcpStatus(won.access_token)).status).toBe(401);
    expect((await refresh(won.refresh_token)).json.error).toBe('invalid_grant');
    const audit = await rows(w, "SELECT transition FROM audit_log WHERE operation_id = 'oauthToken' AND grant_id = ?", a.grantId);
    expect(audit.map((r) => r.transition)).toEqual(['authorization code used again: its tokens and the grant revoked']);
  });

  it('refuses a code for another client, another redirect_uri or another resource, and an expired one', async () => {
    expect((await exchange(await authorized(w, clientId), { client_id: otherClient })).json.error).toBe('invalid_grant');
    expect((await exchange(await authorized(w, clientId), { redirect_uri: 'http://127.0.0.1:9/other' })).json.error).toBe('invalid_grant');
    const wrongResource = await exchange(await authorized(w, clientId), { resource: API });
    expect(wrongResource).toMatchObject({ status: 400, json: { error: 'invalid_target' } });
    const late = await authorized(w, clientId);
    w.clock.advance(60_001);
    expect((await exchange(late)).json).toMatchObject({ error: 'invalid_grant', error_description: 'The authorization code has expired.' });
  });

  it('refuses what is not a token request as RFC 6749 JSON, never a 500', async () => {
    expect((await postForm(w, '/oauth/token', { grant_type: 'password' })).json.error).toBe('unsupported_grant_type');
    expect((await postForm(w, '/oauth/token', {})).json.error).toBe('invalid_request');
    expect((await postForm(w, '/oauth/token', { grant_type: 'authorization_code', code: 'hro_nope' })).json.error).toBe('invalid_request');
    const bogus = await postForm(w, '/oauth/token', {
      grant_type: 'authorization_code',
      code: 'hro_nope',
      code_verifier: 'v',
      client_id: clientId,
      redirect_uri: REDIRECT,
    });
    expect(bogus).toMatchObject({ status: 400, json: { error: 'invalid_grant' } });
    const twice = await w.app.fetch(
      new Request('http://local/oauth/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=refresh_token&refresh_token=a&refresh_token=b&client_id=x',
      }),
    );
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: string }).error).toBe('invalid_request');
    const json = await w.app.fetch(new Request('http://local/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }));
    expect(json.status).toBe(400);
    expect(((await json.json()) as { error: string }).error).toBe('invalid_request');
    const get = await w.app.fetch(new Request('http://local/oauth/token'));
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toContain('POST');
  });
});

describe('POST /oauth/token: refresh_token', () => {
  it('rotates: a new pair of the same grant and resource; the old refresh token used again revokes the family and the grant, audited', async () => {
    const a = await authorized(w, clientId);
    const first = (await exchange(a)).json;
    const second = await refresh(first.refresh_token);
    expect(second.status).toBe(200);
    expect(second.json.refresh_token).not.toBe(first.refresh_token);
    expect((await mcpStatus(second.json.access_token)).status).toBe(200);
    const reused = await refresh(first.refresh_token);
    expect(reused).toMatchObject({ status: 400, json: { error: 'invalid_grant' } });
    expect((await mcpStatus(second.json.access_token)).status).toBe(401);
    expect((await refresh(second.json.refresh_token)).json.error).toBe('invalid_grant');
    const family = await rows(w, 'SELECT revoked_at FROM oauth_tokens WHERE grant_id = ?', a.grantId);
    expect(family.length).toBe(4);
    expect(family.every((t) => t.revoked_at !== null)).toBe(true);
    expect((await rows(w, 'SELECT revoked_at FROM grants WHERE id = ?', a.grantId))[0]!.revoked_at).not.toBeNull();
    const audit = await rows(w, "SELECT transition FROM audit_log WHERE operation_id = 'oauthToken' AND grant_id = ?", a.grantId);
    expect(audit.map((r) => r.transition)).toEqual(['refresh token used again after rotation: its tokens and the grant revoked']);
  });

  it('refuses a refresh token of another client, for another resource, or an access token in its place', async () => {
    const first = (await exchange(await authorized(w, clientId))).json;
    expect((await refresh(first.refresh_token, { client_id: otherClient })).json.error).toBe('invalid_grant');
    const other = (await exchange(await authorized(w, clientId))).json;
    expect((await refresh(other.refresh_token, { resource: API })).json.error).toBe('invalid_target');
    expect((await refresh(other.access_token)).json.error).toBe('invalid_grant');
  });
});

describe('access tokens at the bearer step', () => {
  it('a token for the MCP endpoint is refused by the API and the reverse, with the challenge naming the resource', async () => {
    const forMcp = (await exchange(await authorized(w, clientId))).json.access_token;
    const api = await call(w, 'GET', '/agent/v1/grant', { token: forMcp });
    expect(api.status).toBe(401);
    expect(api.json.error.message).toContain('another resource');
    expect(api.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="http://local/.well-known/oauth-protected-resource/agent/v1", scope="setup:read event:read endpoint:write endpoint:delete secret:rotate endpoint:test replay:execute diagnostics:create support:request expansion:request", error="invalid_token"`,
    );
    const a = await authorized(w, clientId, { fields: { resource: API } });
    const forApi = (await exchange(a, { resource: API })).json.access_token;
    const grant = await call(w, 'GET', '/agent/v1/grant', { token: forApi });
    expect(grant.status).toBe(200);
    expect(grant.json.data.grant).toMatchObject({ id: a.grantId, tier: 'operator' });
    const mcp = await mcpStatus(forApi);
    expect(mcp.status).toBe(401);
    expect(mcp.challenge).toContain('resource_metadata="http://local/.well-known/oauth-protected-resource/agent/v1/mcp"');
    expect(mcp.challenge).toContain('error="invalid_token"');
  });

  it('a call without a token gets the challenge without an error', async () => {
    const r = await call(w, 'GET', '/agent/v1/grant');
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toStartWith('Bearer resource_metadata="http://local/.well-known/oauth-protected-resource/agent/v1", scope="');
    expect(r.headers.get('www-authenticate')).not.toContain('error=');
  });

  it('revoking the grant ends its access and refresh tokens at once', async () => {
    const a = await authorized(w, clientId);
    const t = (await exchange(a)).json;
    expect((await mcpStatus(t.access_token)).status).toBe(200);
    await revokeGrant(w.core, a.grantId);
    expect((await mcpStatus(t.access_token)).status).toBe(401);
    expect((await refresh(t.refresh_token)).json).toMatchObject({ error: 'invalid_grant' });
    const tokens = await rows(w, 'SELECT revoked_at FROM oauth_tokens WHERE grant_id = ?', a.grantId);
    expect(tokens.every((r) => r.revoked_at !== null)).toBe(true);
  });

  it('an access token ends after its hour', async () => {
    const t = (await exchange(await authorized(w, clientId))).json;
    w.clock.advance(3600_000);
    const r = await mcpStatus(t.access_token);
    expect(r.status).toBe(401);
    expect((await refresh(t.refresh_token)).status).toBe(200);
  });
});

describe('POST /oauth/revoke', () => {
  it('revokes a token and its family; an unknown token is answered 200 too', async () => {
    const t = (await exchange(await authorized(w, clientId))).json;
    const r = await postForm(w, '/oauth/revoke', { token: t.refresh_token, token_type_hint: 'refresh_token' });
    expect(r.status).toBe(200);
    expect((await mcpStatus(t.access_token)).status).toBe(401);
    expect((await refresh(t.refresh_token)).json.error).toBe('invalid_grant');
    expect((await postForm(w, '/oauth/revoke', { token: 'hra_unknown' })).status).toBe(200);
    expect((await postForm(w, '/oauth/revoke', {})).json.error).toBe('invalid_request');
  });
});

describe('metadata', () => {
  it('publishes RFC 9728 metadata for the MCP endpoint and the API (the bare path answering for the API)', async () => {
    const mcp = await call(w, 'GET', '/.well-known/oauth-protected-resource/agent/v1/mcp');
    expect(mcp.status).toBe(200);
    expect(mcp.json).toMatchObject({ resource: MCP, authorization_servers: ['http://local'], bearer_methods_supported: ['header'] });
    expect(mcp.json.scopes_supported).toHaveLength(10);
    for (const path of ['/.well-known/oauth-protected-resource/agent/v1', '/.well-known/oauth-protected-resource']) {
      expect((await call(w, 'GET', path)).json.resource).toBe(API);
    }
    expect((await call(w, 'GET', '/.well-known/oauth-protected-resource/other')).status).toBe(404);
  });

  it('publishes RFC 8414 metadata', async () => {
    const r = await call(w, 'GET', '/.well-known/oauth-authorization-server');
    expect(r.json).toMatchObject({
      issuer: 'http://local',
      authorization_endpoint: `http://local${AUTHORIZE_PATH}`,
      token_endpoint: 'http://local/oauth/token',
      revocation_endpoint: 'http://local/oauth/revoke',
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      response_types_supported: ['code'],
      token_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    });
    expect(r.json.scopes_supported).toHaveLength(10);
    expect(r.json.registration_endpoint).toBeUndefined();
  });
});

describe('per-address limit', () => {
  it('answers 429 once an address has sent too many refused codes, while another address still gets its answers', async () => {
    const send = (peer: string) =>
      w.app.fetch(
        new Request('http://local/oauth/token', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `grant_type=authorization_code&code=hro_x&code_verifier=v&client_id=${encodeURIComponent(clientId)}&redirect_uri=${encodeURIComponent(REDIRECT)}`,
        }),
        peer,
      );
    const statuses: number[] = [];
    for (let i = 0; i < 35; i++) statuses.push((await send('203.0.113.7')).status);
    expect(statuses.slice(0, 30).every((s) => s === 400)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    expect((await send('203.0.113.8')).status).toBe(400);
  });
});
