/**
 * Which surface a call came through, for its audit row: `mcp` for the MCP endpoint and code mode's calls (src/mcp/
 * api.ts invokes the pipeline in process with it), `cli` when an HTTP request carries the CLI's User-Agent
 * (self-declared: any HTTP client may send it), `http` for any other HTTP request: no header makes one `mcp`.
 * Nothing but the contract imported: the pipeline imports it without loading MCP.
 */
import { CLI_USER_AGENT_PREFIX } from '../contract/scopes.ts';

/** `embedded` and `console`: the merchant's seat (src/seat), its two faces, calling invoke in process. */
export type Surface = 'http' | 'mcp' | 'cli' | 'embedded' | 'console';

/** The surface of an HTTP request to the API. */
export function surfaceOf(req: Request): 'http' | 'cli' {
  return req.headers.get('user-agent')?.startsWith(CLI_USER_AGENT_PREFIX) ? 'cli' : 'http';
}
