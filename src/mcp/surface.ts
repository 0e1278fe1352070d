/**
 * Which surface a call came through, for its audit row: `mcp` for code mode's in-process calls (marked on the
 * Request object itself, which no remote client can reach), `cli` when the request carries the CLI's
 * User-Agent (self-declared: any HTTP client may send it), `http` otherwise. Nothing but the
 * contract imported: the pipeline imports it without loading MCP.
 */
import { CLI_USER_AGENT_PREFIX } from '../contract/scopes.ts';

/** `embedded` and `console`: the merchant's seat (src/seat), its two faces, calling invoke in process. */
export type Surface = 'http' | 'mcp' | 'cli' | 'embedded' | 'console';

const fromCodeMode = new WeakSet<Request>();

/** Marks a Request built in process by code mode's `api.*`; only an object reference can carry the mark. */
export function markCodeMode(req: Request): Request {
  fromCodeMode.add(req);
  return req;
}

export function surfaceOf(req: Request): Surface {
  if (fromCodeMode.has(req)) return 'mcp';
  return req.headers.get('user-agent')?.startsWith(CLI_USER_AGENT_PREFIX) ? 'cli' : 'http';
}
