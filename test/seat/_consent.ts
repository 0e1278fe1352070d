/**
 * What the consent tests share: an agent's client as the OAuth flow sees it — its Client ID Metadata Document served
 * on loopback (the test setting that allows loopback documents is on), and the /oauth/authorize query it sends
 * (PKCE S256, state, resource, scope).
 */
import { createHash, randomBytes } from 'node:crypto';
import { defaultConfig } from '../../src/core.ts';

/** A client's metadata document on a loopback server: `id` is its URL (the client_id), `redirectUri` its one redirect. */
export function loopbackClient(opts: { name?: string; uri?: string; redirectUri?: string } = {}) {
  let id = '';
  let redirectUri = '';
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (req): Response =>
      new URL(req.url).pathname === '/client.json'
        ? Response.json({
            client_id: id,
            client_name: opts.name ?? 'Night Shift Agent',
            client_uri: opts.uri ?? 'https://agents.example.test',
            redirect_uris: [redirectUri],
            token_endpoint_auth_method: 'none',
          })
        : new Response('not found', { status: 404 }),
  });
  id = `http://127.0.0.1:${server.port}/client.json`;
  redirectUri = opts.redirectUri ?? `http://127.0.0.1:${server.port}/callback`;
  return { id, redirectUri, stop: () => server.stop(true) };
}

/** The config a test env needs for loopback clients (tests only: nothing else sets it). */
export const loopbackOAuth = () => ({ oauth: { ...defaultConfig().oauth, loopbackClients: true } });

const b64url = (b: Buffer) => b.toString('base64url');

/** An /oauth/authorize query for `client`, PKCE S256; `over` replaces or (undefined) removes parameters. */
export function authorizeQuery(
  client: { id: string; redirectUri: string },
  publicUrl: string,
  over: Record<string, string | undefined> = {},
): { query: string; verifier: string; state: string } {
  const verifier = b64url(randomBytes(32));
  const state = b64url(randomBytes(12));
  const params: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: client.id,
    redirect_uri: client.redirectUri,
    code_challenge: b64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
    state,
    resource: `${publicUrl.replace(/\/+$/, '')}/agent/v1/mcp`,
    scope: 'setup:read event:read endpoint:write',
    ...over,
  };
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  return { query: q.toString(), verifier, state };
}
