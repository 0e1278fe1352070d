/**
 * What a client discovers before it authorizes: Protected Resource Metadata for the MCP endpoint and the API
 * (RFC 9728), the authorization server's metadata (RFC 8414), and the challenge a 401 of either resource carries
 * (`WWW-Authenticate: Bearer resource_metadata=…, scope=…`), which points a client given only a URL at the rest.
 */
import { SCOPES } from '../contract/scopes.ts';
import { publicLink } from '../lib/web.ts';
import { issuerOf, RESOURCE_PATHS, resourceUri, type ResourceKind } from './tokens.ts';

/** Where RFC 9728 puts a resource's metadata (the well-known prefix, then the resource's path), and the endpoints. */
const PRM_PREFIX = '/.well-known/oauth-protected-resource';
const AS_METADATA_PATH = '/.well-known/oauth-authorization-server';
export const TOKEN_PATH = '/oauth/token';
export const REVOKE_PATH = '/oauth/revoke';
export const AUTHORIZE_PATH = '/oauth/authorize';

/** Whether `path` is one of the routes of src/oauth/routes.ts (the app sends it there). */
export const isOAuthRoute = (path: string) => path === TOKEN_PATH || path === REVOKE_PATH || path === AS_METADATA_PATH || prmKindOf(path) !== null;

/** The routes that take a credential: their refusals count against the client's address. */
export const GUARDED_OAUTH_PATHS: readonly string[] = [TOKEN_PATH, REVOKE_PATH];

/** The URL of a resource's metadata document. */
const prmUrl = (publicUrl: string, kind: ResourceKind) => publicLink(publicUrl, `${PRM_PREFIX}${RESOURCE_PATHS[kind]}`);

/** Which resource's metadata a path asks for; the bare prefix answers for the API. Null for another path. */
export function prmKindOf(path: string): ResourceKind | null {
  if (path === PRM_PREFIX || path === `${PRM_PREFIX}${RESOURCE_PATHS.api}`) return 'api';
  if (path === `${PRM_PREFIX}${RESOURCE_PATHS.mcp}`) return 'mcp';
  return null;
}

/** RFC 9728 metadata of one resource: hookrelay is its own authorization server; every scope may be asked for. */
export function protectedResourceMetadata(publicUrl: string, kind: ResourceKind) {
  return {
    resource: resourceUri(publicUrl, kind),
    authorization_servers: [issuerOf(publicUrl)],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: kind === 'mcp' ? 'hookrelay MCP server' : 'hookrelay Agent Operations API',
    resource_documentation: publicLink(publicUrl, '/docs'),
  };
}

/**
 * RFC 8414 metadata: authorization code with PKCE S256 and refresh, public clients named by their metadata
 * document's URL (no registration endpoint), `iss` in the authorization response.
 */
export function authorizationServerMetadata(publicUrl: string) {
  const issuer = issuerOf(publicUrl);
  return {
    issuer,
    authorization_endpoint: `${issuer}${AUTHORIZE_PATH}`,
    token_endpoint: `${issuer}${TOKEN_PATH}`,
    revocation_endpoint: `${issuer}${REVOKE_PATH}`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...SCOPES],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    service_documentation: publicLink(publicUrl, '/docs'),
  };
}

/**
 * The challenge of a 401 from `kind`: where its metadata is and the scopes a client may ask for, plus
 * `error="invalid_token"` when a credential was sent and refused (RFC 6750 §3).
 */
export function bearerChallenge(publicUrl: string, kind: ResourceKind, tokenSent: boolean): string {
  const error = tokenSent ? ', error="invalid_token"' : '';
  return `Bearer resource_metadata="${prmUrl(publicUrl, kind)}", scope="${SCOPES.join(' ')}"${error}`;
}
