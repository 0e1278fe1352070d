/**
 * The authorization server's routes that need no person: the metadata documents (RFC 9728, RFC 8414) and the token
 * and revocation endpoints (form-encoded, RFC 6749 §3.2 and RFC 7009), answered in OAuth's JSON, never a stack
 * trace. Reachable by anyone: the app guards the two POST routes per client address (src/server/unsigned-routes.ts)
 * and loads this module with the first request for one of them. /oauth/authorize is the consent pages' own.
 */
import { AppError, ERROR_CODES } from '../contract/errors.ts';
import type { Core } from '../core.ts';
import { readCapped } from '../lib/body.ts';
import { errorLine } from '../lib/log.ts';
import { OAuthError } from './errors.ts';
import { authorizationServerMetadata, prmKindOf, protectedResourceMetadata, REVOKE_PATH, TOKEN_PATH } from './metadata.ts';
import { exchange, revokeToken } from './tokens.ts';

/** The largest form the token and revocation endpoints read. */
const MAX_FORM_BYTES = 16 * 1024;

/** Browser-based clients (an MCP inspector) read the metadata and call these endpoints from another origin, without cookies. */
const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'Content-Type, Authorization',
};
const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** An OAuth error answer (RFC 6749 §5.2): `error`, `error_description`, never cached. */
function oauthError(err: OAuthError, extra: Record<string, string> = {}): Response {
  return Response.json({ error: err.error, error_description: err.description }, { status: err.status, headers: { ...NO_STORE, ...CORS, ...extra } });
}

export type OAuthRoutes = ReturnType<typeof createOAuthRoutes>;

export function createOAuthRoutes(core: Core) {
  /** Runs a POST endpoint over its form: OAuth's errors as JSON, a fault as `server_error` (logged by its first line only). */
  async function post(req: Request, run: (form: URLSearchParams) => Promise<Response>): Promise<Response> {
    if (req.method !== 'POST') return oauthError(new OAuthError('invalid_request', 'Use POST.', false, 405), { Allow: 'POST, OPTIONS' });
    try {
      if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(req.headers.get('content-type') ?? '')) {
        throw new OAuthError('invalid_request', 'Send the parameters as application/x-www-form-urlencoded.');
      }
      const bytes = await readCapped(req, MAX_FORM_BYTES);
      if (!bytes) throw new OAuthError('invalid_request', `The form is larger than ${MAX_FORM_BYTES} bytes.`, false, 413);
      return await run(new URLSearchParams(new TextDecoder().decode(bytes)));
    } catch (err) {
      if (err instanceof OAuthError) return oauthError(err);
      if (err instanceof AppError && err.code !== 'internal_error') {
        return oauthError(new OAuthError('invalid_request', err.message, false, ERROR_CODES[err.code].status), err.headers);
      }
      core.log.error(`oauth ${new URL(req.url).pathname}: ${errorLine(err)}`);
      return oauthError(new OAuthError('server_error', 'The authorization server could not answer; try again.', false, 500));
    }
  }

  return {
    /** Answers one of the paths isOAuthRoute (src/oauth/metadata.ts) accepts. */
    async fetch(req: Request, path: string): Promise<Response> {
      if (req.method === 'OPTIONS') return new Response(null, { status: 204, headers: CORS });
      if (path === TOKEN_PATH) return post(req, async (form) => Response.json(await exchange(core, form), { headers: { ...NO_STORE, ...CORS } }));
      if (path === REVOKE_PATH) {
        return post(req, async (form) => {
          await revokeToken(core, form);
          return new Response(null, { status: 200, headers: { ...NO_STORE, ...CORS } });
        });
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return Response.json({ error: 'invalid_request', error_description: 'Use GET.' }, { status: 405, headers: { Allow: 'GET, HEAD, OPTIONS', ...CORS } });
      }
      const kind = prmKindOf(path);
      const doc = kind ? protectedResourceMetadata(core.config.publicUrl, kind) : authorizationServerMetadata(core.config.publicUrl);
      return Response.json(doc, { headers: { 'Cache-Control': 'public, max-age=3600', ...CORS } });
    },
  };
}
