/**
 * A canary for the authorization server's secrets: one client's whole journey over real HTTP (start, approve, the
 * code at the redirect, its exchange, a refused exchange with a wrong verifier, a replayed code, a refresh and a
 * replayed refresh token, the tokens on the wrong resource and revoked, the latter in both MCP eras' frames with its challenge), then every log line (the request log
 * included), every audit row and every answer body is searched for the code, the PKCE verifier and each token issued.
 * None may appear: they are in the answers that hand them over (the redirect's Location, the token answer) only.
 */
import { afterAll, beforeAll, expect, it } from 'bun:test';
import { findAuthorization, approveAuthorization } from '../../src/oauth/authorization.ts';
import { MODERN_PROTOCOL_VERSION } from '../../src/mcp/server.ts';
import { startServer } from '../../src/server/serve.ts';
import { rows } from '../helpers.ts';
import { MODERN_META } from '../mcp/harness.ts';
import { authorizeQuery, clientDocument, oauthWorld, type OAuthWorld, pkce } from './_world.ts';

let w: OAuthWorld;
let running: Awaited<ReturnType<typeof startServer>>;
let base: string;
/** Every body answered to the client, except the two that hand a secret over (collected apart). */
const bodies: string[] = [];

beforeAll(async () => {
  w = await oauthWorld();
  running = await startServer(w.core, { port: 0, host: '127.0.0.1', worker: false, publicUrlFor: (p) => `http://127.0.0.1:${p}` });
  base = w.core.config.publicUrl;
});
afterAll(async () => {
  await running.stop();
  w.close();
});

async function send(path: string, init: RequestInit & { form?: Record<string, string> } = {}) {
  const res = await fetch(`${base}${path}`, {
    redirect: 'manual',
    ...init,
    ...(init.form
      ? { method: 'POST', body: new URLSearchParams(init.form).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...init.headers } }
      : {}),
  });
  return { res, text: await res.text() };
}

it('no code, verifier, access or refresh token in a log line, an audit row or a refusal', async () => {
  const clientId = w.serve('/leak-agent.json', { body: clientDocument() });
  const { verifier, challenge } = pkce();
  const query = authorizeQuery(w, clientId, challenge);
  const started = await send(`/oauth/authorize?${query}`);
  expect(started.res.status).toBe(200);
  const cookie = started.res.headers.get('set-cookie')!.split(';')[0]!;
  const id = /request=(oar_[A-Za-z0-9]+)/.exec(started.text)![1]!;
  const ar = (await findAuthorization(w.core, id))!;
  await approveAuthorization(w.core, w.human, ar.userCode, { tier: 'operator', ttl: '1d' });
  const back = await send(`/oauth/authorize/continue?request=${id}`, { headers: { cookie } });
  expect(back.res.status).toBe(303);
  const code = new URL(back.res.headers.get('location')!).searchParams.get('code')!;
  expect(code).toStartWith('hro_');

  const exchange = { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: ar.redirectUri, code_verifier: verifier };
  const wrong = await send('/oauth/token', { form: { ...exchange, code_verifier: pkce().verifier } });
  expect(wrong.res.status).toBe(400);
  bodies.push(wrong.text);
  const issued = await send('/oauth/token', { form: exchange });
  expect(issued.res.status).toBe(200);
  const first = JSON.parse(issued.text) as { access_token: string; refresh_token: string };
  const rotated = await send('/oauth/token', { form: { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientId } });
  expect(rotated.res.status).toBe(200);
  const second = JSON.parse(rotated.text) as { access_token: string; refresh_token: string };

  // The MCP token on the API and on /metrics (another resource), then the refresh token replayed (the family ends),
  // the code replayed, and the revoked token on its own resource.
  for (const path of ['/agent/v1/grant', '/metrics']) {
    const refused = await send(path, { headers: { authorization: `Bearer ${second.access_token}` } });
    expect(refused.res.status).toBe(401);
    bodies.push(refused.text);
  }
  const replayed = await send('/oauth/token', { form: { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientId } });
  expect(replayed.res.status).toBe(400);
  bodies.push(replayed.text);
  const again = await send('/oauth/token', { form: exchange });
  expect(again.res.status).toBe(400);
  bodies.push(again.text);
  // The revoked token on the MCP endpoint, in each era's frame: a 401 with the MCP resource's challenge either way.
  const eras: { headers: Record<string, string>; frame: unknown }[] = [
    { headers: {}, frame: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
    {
      headers: { 'mcp-protocol-version': MODERN_PROTOCOL_VERSION, 'mcp-method': 'tools/list' },
      frame: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } },
    },
  ];
  for (const era of eras) {
    const revoked = await send('/agent/v1/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${second.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...era.headers,
      },
      body: JSON.stringify(era.frame),
    });
    expect(revoked.res.status).toBe(401);
    expect(revoked.res.headers.get('www-authenticate')).toStartWith(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/agent/v1/mcp"`);
    expect(revoked.res.headers.get('www-authenticate')).toEndWith('error="invalid_token"');
    bodies.push(revoked.text);
  }

  const secrets = { code, verifier, ...first, second: second.access_token, secondRefresh: second.refresh_token };
  const logs = w.log.lines.join('\n');
  // The request log was written (a line per request) and names paths, never a query.
  expect(logs).toContain('GET /oauth/authorize/continue 303');
  expect(logs).not.toContain('?');
  const audit = JSON.stringify(await rows(w, 'SELECT * FROM audit_log'));
  expect(audit).toContain('oauth_token_reused');
  for (const [name, secret] of Object.entries(secrets)) {
    expect({ name, inLogs: logs.includes(secret) }).toEqual({ name, inLogs: false });
    expect({ name, inAudit: audit.includes(secret) }).toEqual({ name, inAudit: false });
    for (const body of bodies) expect({ name, inAnswer: body.includes(secret) }).toEqual({ name, inAnswer: false });
  }
});
