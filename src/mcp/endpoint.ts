/**
 * `POST|GET|DELETE /agent/v1/mcp`: the SDK's web-standard Streamable HTTP transport inside Bun.serve.
 * Every request passes the Host and Origin checks (host-origin.ts) and bearer authentication first; a session never
 * stands in for the grant, and a session answers only the grant that created it.
 *
 * No session lives in memory: each POST is served by a server and transport of its own, and a session id carries
 * the proof of the grant that opened it (session-ids.ts), so any instance sharing the box key serves any session.
 * Nothing reaches a client unasked (every answer is the JSON of its POST): GET, a stream for server-initiated
 * messages, and DELETE, which would need a record of ended sessions every instance reads, answer 405.
 */
import { requestIdOf } from '../lib/request-ids.ts';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { checkExpectedContext, EXPECTED_CONTEXT } from '../contract/context.ts';
import { AppError } from '../contract/errors.ts';
import type { AgentPrincipal } from '../ops/grants.ts';
import type { OpContext } from '../ops/context.ts';
import { NO_CLIENT, type ClientOf } from '../lib/auth-failures.ts';
import { codeModeAvailable } from './code-mode.ts';
import { hostOriginRefusal } from './host-origin.ts';
import { closeSandboxes } from './sandbox-process.ts';
import { createMcpServer, endpointDescription, type ServerDeps } from './server.ts';
import { createSessionIds } from './session-ids.ts';

const MAX_BODY_BYTES = 1024 * 1024;

export interface McpEndpoint {
  /** `client`: the caller's address key; failed bearer authentication is limited by it. */
  fetch(req: Request, client?: ClientOf): Promise<Response>;
  /** Ends the sandbox processes (shutdown); requests in flight finish first, as any request. */
  close(): Promise<void>;
}

type Scoped = Pick<OpContext, 'store' | 'grant' | 'scopes' | 'actor'> | null;

/**
 * What the endpoint needs of the HTTP pipeline, handed in by the app: the MCP layer never imports the server, so
 * audit rows, failed-authentication limits and error envelopes stay the pipeline's, written once.
 */
export interface McpPipeline {
  /** Audits a connect or its refusal as the MCP operation (surface `mcp`). */
  audit(ctx: Scoped, status: number, err: AppError | null, requestId: string): Promise<void>;
  /**
   * The pipeline's one bearer step: the grant behind `authorization`, or the answer to a failed authentication (401,
   * or 429 past the client's limit; audited or folded as the API's are).
   */
  authenticate(authorization: string | null, client: ClientOf, requestId: string): Promise<AgentPrincipal | Response>;
  /** The error envelope. */
  errorResponse(ctx: Scoped, err: AppError): Response;
}

export function createMcpEndpoint(deps: ServerDeps & { pipeline: McpPipeline }): McpEndpoint {
  const { core, pipeline } = deps;
  const sessionIds = createSessionIds(core.box);

  async function handle(req: Request, client: ClientOf = NO_CLIENT): Promise<Response> {
    const requestId = requestIdOf(req);
    const misdirected = hostOriginRefusal(req.headers, core.config.publicUrl, { origins: core.config.mcp.allowedOrigins, hosts: core.config.mcp.allowedHosts });
    if (misdirected) return refused(misdirected, requestId);
    const ctx = await pipeline.authenticate(req.headers.get('authorization'), client, requestId);
    if (ctx instanceof Response) return ctx;
    const { grant, store, scopes } = ctx;
    try {
      checkExpectedContext(req.headers, store); // as REST: a session never binds to a store the client did not expect
    } catch (err) {
      if (err instanceof AppError) return refused(err, requestId, ctx);
      throw err;
    }
    if (!(await codeModeAvailable(core.config.mcp))) {
      return Response.json(
        {
          code: 'mcp_code_mode_unavailable',
          message: 'Code mode (the sandbox behind search and execute) is unavailable on this server; the HTTP API and CLI keep working.',
        },
        { status: 503 },
      );
    }
    if (req.method !== 'POST') return methodNotAllowed(req.method);
    // The body is optional: without one there is no frame for the transport, and the endpoint describes itself.
    const body = req.body ? new Uint8Array(await req.arrayBuffer()) : null;
    if (!body?.byteLength) return Response.json(endpointDescription(deps.version, core.config.publicUrl));
    req = new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal });

    const id = req.headers.get('mcp-session-id');
    if (id !== null && !sessionIds.verify(id, grant.id)) return sessionNotFound();
    // Without a session only an initialize passes (the transport answers anything else 400), and it mints the id;
    // with one, the session is known (checked above) and the transport runs stateless.
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: id === null ? () => sessionIds.mint(grant.id) : undefined,
      enableJsonResponse: true,
      maxRequestBodySize: MAX_BODY_BYTES,
    });
    const server = createMcpServer(deps, { grantId: grant.id, label: grant.label, storeId: store.id, scopes });
    await server.connect(transport);
    const authInfo = {
      token: req.headers.get('authorization')!.trim().split(/\s+/)[1]!,
      clientId: grant.id,
      scopes,
      expiresAt: Math.floor(grant.expiresAt / 1000),
      // What `execute` runs as (api.ts Caller): the grant authenticated above, once for the whole request.
      extra: { principal: ctx, expected: expectedContext(req), requestId },
    };
    try {
      const res = await transport.handleRequest(req, { authInfo });
      if (id === null && transport.sessionId !== undefined) await pipeline.audit(ctx, res.status, null, requestId);
      return res;
    } finally {
      await server.close().catch(() => {});
    }
  }

  /** A connect refused before any session: audited like a refused HTTP call (by its grant once known), then answered. */
  async function refused(err: AppError, requestId: string, ctx: Scoped = null): Promise<Response> {
    await pipeline.audit(ctx, err.status, err, requestId).catch(() => {});
    return pipeline.errorResponse(ctx, err);
  }

  return { fetch: handle, close: closeSandboxes };
}

/** As the SDK answers an unknown session: the client must initialize again. Another grant's session is unknown. */
function sessionNotFound(): Response {
  return Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 });
}

/** GET and DELETE: the spec lets a server offer no stream (405) and refuse to end sessions on request (405). */
function methodNotAllowed(method: string): Response {
  const message =
    method === 'GET'
      ? 'Method not allowed: this server sends nothing unprompted, so it offers no stream; every answer comes with its POST.'
      : method === 'DELETE'
        ? 'Method not allowed: sessions are not ended on request; a session holds nothing on the server and ends with its grant.'
        : 'Method not allowed: use POST.';
  return Response.json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }, { status: 405, headers: { Allow: 'POST' } });
}

/** The expected-context headers of the MCP request, passed on to every call `execute` makes. */
function expectedContext(req: Request): Headers {
  return new Headers(EXPECTED_CONTEXT.flatMap((c) => (req.headers.get(c.header) === null ? [] : [[c.header, req.headers.get(c.header)!]])));
}
