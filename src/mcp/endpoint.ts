/**
 * `POST|GET|DELETE /agent/v1/mcp`: MCP over Streamable HTTP inside Bun.serve, both eras negotiated per request.
 * Every request passes the Host and Origin checks (host-origin.ts) and bearer authentication first; a session never
 * stands in for the grant, and a session answers only the grant that created it.
 *
 * A 2026-07-28 request (one whose params carry the protocol version in `_meta`) goes to the 2.x SDK's per-request
 * handler, which is stateless by the spec: it serves `server/discover`, checks the MCP-Protocol-Version, Mcp-Method
 * and Mcp-Name headers against the body (-32020) and refuses a revision it does not serve (-32022). Any other request
 * is 2025-era (2025-11-25, 2025-06-18) and goes to the 1.x SDK's web-standard transport, exactly as before the 2026
 * revision: initialize, then the Mcp-Session-Id it answers. The 2.x SDK routes 2025 traffic to a stateless fallback
 * of its own; keeping the 1.x transport keeps the session ids below, and what 2025 clients see, unchanged.
 *
 * No session lives in memory: each POST is served by a server and transport of its own, and a session id carries
 * the proof of the grant that opened it (session-ids.ts), so any instance sharing the box key serves any session.
 * Nothing reaches a client unasked (every answer is the JSON of its POST): GET, a stream for server-initiated
 * messages, and DELETE, which would need a record of ended sessions every instance reads, answer 405.
 * Every JSON-RPC frame answered names the edition (withEdition).
 */
import { createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { requestIdOf } from '../lib/request-ids.ts';
import { checkExpectedContext, EXPECTED_CONTEXT } from '../contract/context.ts';
import { AppError } from '../contract/errors.ts';
import { EDITION } from '../contract/scopes.ts';
import type { AgentPrincipal } from '../ops/grants.ts';
import type { OpContext } from '../ops/context.ts';
import { NO_CLIENT, type ClientOf } from '../lib/auth-failures.ts';
import { codeModeAvailable } from './code-mode.ts';
import { hostOriginRefusal } from './host-origin.ts';
import { closeSandboxes } from './sandbox-process.ts';
import { createMcpServer, createModernMcpServer, endpointDescription, type ServerDeps, type SessionGrant } from './server.ts';
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
  // One handler for every 2026-07-28 request: it builds a server per request, for the grant the request carries.
  const modern = createMcpHandler(({ authInfo }) => createModernMcpServer(deps, authInfo?.extra?.grant as SessionGrant), {
    legacy: 'reject',
    maxRequestBodySize: MAX_BODY_BYTES,
  });

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
    if (req.method !== 'POST') return withEdition(methodNotAllowed(req.method));
    // The body is optional: without one there is no frame for the transport, and the endpoint describes itself.
    const body = req.body ? new Uint8Array(await req.arrayBuffer()) : null;
    if (!body?.byteLength) return withEdition(Response.json(endpointDescription(deps.version, core.config.publicUrl)));
    req = new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal });

    const sessionGrant: SessionGrant = { grantId: grant.id, label: grant.label, storeId: store.id, scopes };
    const authInfo = {
      token: req.headers.get('authorization')!.trim().split(/\s+/)[1]!,
      clientId: grant.id,
      scopes,
      expiresAt: Math.floor(grant.expiresAt / 1000),
      // What `execute` runs as (api.ts Caller): the grant authenticated above, once for the whole request.
      extra: { principal: ctx, expected: expectedContext(req), requestId, grant: sessionGrant },
    };
    if (!(await isLegacyRequest(req, undefined, { maxRequestBodySize: MAX_BODY_BYTES }))) {
      const res = await modern.fetch(req, { authInfo });
      // 2026-07-28 has no session to start: discovery is the connect, audited as initialize is.
      if (res.ok && req.headers.get('mcp-method') === 'server/discover') await pipeline.audit(ctx, res.status, null, requestId);
      return withEdition(res);
    }

    const id = req.headers.get('mcp-session-id');
    if (id !== null && !sessionIds.verify(id, grant.id)) return withEdition(sessionNotFound());
    // Without a session only an initialize passes (the transport answers anything else 400), and it mints the id;
    // with one, the session is known (checked above) and the transport runs stateless.
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: id === null ? () => sessionIds.mint(grant.id) : undefined,
      enableJsonResponse: true,
      maxRequestBodySize: MAX_BODY_BYTES,
    });
    const server = createMcpServer(deps, sessionGrant);
    await server.connect(transport);
    try {
      const res = await transport.handleRequest(req, { authInfo });
      if (id === null && transport.sessionId !== undefined) await pipeline.audit(ctx, res.status, null, requestId);
      return withEdition(res);
    } finally {
      await server.close().catch(() => {});
    }
  }

  /** A connect refused before any session: audited like a refused HTTP call (by its grant once known), then answered. */
  async function refused(err: AppError, requestId: string, ctx: Scoped = null): Promise<Response> {
    await pipeline.audit(ctx, err.status, err, requestId).catch(() => {});
    return pipeline.errorResponse(ctx, err);
  }

  return {
    fetch: handle,
    async close() {
      await modern.close();
      await closeSandboxes();
    },
  };
}

/**
 * Names the edition in every JSON-RPC frame of a JSON answer, as every answer of the HTTP API does: a result in
 * `result._meta.edition` (`_meta` is where MCP lets a server add to any result, so both SDKs' clients keep it), an
 * error in `error.data.edition`; only an empty result (ping's) is left as it is. Frames the SDKs build themselves (tools/list, header and version refusals) get it
 * here, the same way for both eras.
 */
async function withEdition(res: Response): Promise<Response> {
  if (!res.headers.get('content-type')?.startsWith('application/json')) return res;
  const text = await res.text();
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return new Response(text, res);
  }
  const headers = new Headers(res.headers);
  headers.delete('content-length');
  const stamped = Array.isArray(doc) ? doc.map(stampFrame) : stampFrame(doc);
  return new Response(JSON.stringify(stamped), { status: res.status, statusText: res.statusText, headers });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function stampFrame(frame: unknown): unknown {
  if (!isObject(frame)) return frame;
  // An empty result (ping's answer) stays `{}`, as the spec words it and the conformance suite checks.
  if (isObject(frame.result) && Object.keys(frame.result).length > 0) {
    const meta = isObject(frame.result._meta) ? frame.result._meta : {};
    return { ...frame, result: { ...frame.result, _meta: { ...meta, edition: EDITION } } };
  }
  if (isObject(frame.error)) {
    const { data } = frame.error;
    const edited = isObject(data) ? { ...data, edition: EDITION } : { ...(data === undefined ? {} : { detail: data }), edition: EDITION };
    return { ...frame, error: { ...frame.error, data: edited } };
  }
  return frame;
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
