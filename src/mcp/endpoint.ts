/**
 * `POST|GET|DELETE /agent/v1/mcp`: the SDK's web-standard Streamable HTTP transport inside Bun.serve.
 * Every request passes the Host and Origin checks (host-origin.ts) and bearer authentication first; a session never
 * stands in for the grant, and a session answers only the grant that created it.
 */
import { requestIdOf } from '../lib/request-ids.ts';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuditLog, TenantStore } from '../../db/repo.ts';
import { checkExpectedContext, EXPECTED_CONTEXT } from '../contract/context.ts';
import { AppError } from '../contract/errors.ts';
import { MCP_SESSIONS_PER_GRANT } from '../contract/limits.ts';
import type { Scope } from '../contract/scopes.ts';
import type { CoreWith } from '../core.ts';
import { randomBase62 } from '../lib/ids.ts';
import { authenticateBearer } from '../ops/grants.ts';
import type { OpContext } from '../ops/context.ts';
import { NO_CLIENT, type ClientOf } from '../lib/auth-failures.ts';
import { codeModeAvailable } from './code-mode.ts';
import { hostOriginRefusal } from './host-origin.ts';
import { closeSandboxes } from './sandbox-process.ts';
import { createMcpServer, endpointDescription, type ServerDeps } from './server.ts';

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  grantId: string;
  grantExpiresAt: number;
  lastUsedAt: number;
}

const MAX_BODY_BYTES = 1024 * 1024;
/** Sent first on every SSE stream: Bun sends a streaming response's headers only with its first chunk. */
const OPEN_FRAME = new TextEncoder().encode(': open\n\n');

export interface McpEndpoint {
  /** `client`: the caller's address key; failed bearer authentication is limited by it. */
  fetch(req: Request, client?: ClientOf): Promise<Response>;
  /** Closes every session and its open streams (shutdown: a graceful stop waits for open responses). */
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
  /** A failed bearer authentication: 401, or 429 past the client's limit; audited or folded as the pipeline does. */
  failedAuthentication(err: AppError, client: ClientOf, requestId: string): Promise<Response>;
  /** The error envelope. */
  errorResponse(ctx: Scoped, err: AppError): Response;
}

export function createMcpEndpoint(deps: ServerDeps & { core: CoreWith<AuditLog & TenantStore>; pipeline: McpPipeline }): McpEndpoint {
  const { core, pipeline } = deps;
  const sessions = new Map<string, Session>();

  function close(id: string): Promise<void> {
    const s = sessions.get(id);
    sessions.delete(id);
    return s ? s.server.close().catch(() => {}) : Promise.resolve();
  }

  /** Closes idle and expired sessions, and the oldest of a grant past its cap. */
  function sweep(grantId: string) {
    const now = core.clock.now();
    for (const [id, s] of sessions) {
      if (s.lastUsedAt < now - core.config.mcp.sessionIdleMs || s.grantExpiresAt <= now) void close(id);
    }
    const mine = [...sessions].filter(([, s]) => s.grantId === grantId).sort(([, a], [, b]) => a.lastUsedAt - b.lastUsedAt);
    for (const [id] of mine.slice(0, Math.max(0, mine.length - MCP_SESSIONS_PER_GRANT + 1))) void close(id);
  }

  async function open(grant: { id: string; label: string; storeId: string; expiresAt: number; scopes: Scope[] }): Promise<Session> {
    const session: Session = {
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => `mcs_${randomBase62(24)}`,
        enableJsonResponse: true,
        keepAliveMs: core.config.mcp.keepAliveMs,
        maxRequestBodySize: MAX_BODY_BYTES,
        onsessioninitialized: (id) => void sessions.set(id, session),
        onsessionclosed: (id) => void sessions.delete(id),
      }),
      server: createMcpServer(deps, { grantId: grant.id, label: grant.label, storeId: grant.storeId, scopes: grant.scopes }),
      grantId: grant.id,
      grantExpiresAt: grant.expiresAt,
      lastUsedAt: core.clock.now(),
    };
    await session.server.connect(session.transport);
    return session;
  }

  async function handle(req: Request, client: ClientOf = NO_CLIENT): Promise<Response> {
    const requestId = requestIdOf(req);
    const misdirected = hostOriginRefusal(req.headers, core.config.publicUrl, { origins: core.config.mcp.allowedOrigins, hosts: core.config.mcp.allowedHosts });
    if (misdirected) return refused(misdirected, requestId);
    let grant, store;
    try {
      ({ grant, store } = await authenticateBearer(core, req.headers.get('authorization')));
    } catch (err) {
      if (err instanceof AppError) return pipeline.failedAuthentication(err, client, requestId);
      throw err;
    }
    const scopes = JSON.parse(grant.scopes) as Scope[];
    const ctx = { store, grant, scopes, actor: { kind: 'agent' as const, grantId: grant.id, label: grant.label } };
    try {
      checkExpectedContext(req.headers, store); // as REST: a session never binds to a store the client did not expect
    } catch (err) {
      if (err instanceof AppError) return refused(err, requestId, ctx);
      throw err;
    }
    if (!(await codeModeAvailable(core.config.mcp))) {
      return Response.json({ code: 'mcp_code_mode_unavailable', message: 'Code mode (the sandbox behind search and execute) is unavailable on this server; the HTTP API and CLI keep working.' }, { status: 503 });
    }
    if (req.method === 'POST') {
      // The body is optional: without one there is no frame for the transport, and the endpoint describes itself.
      const body = req.body ? new Uint8Array(await req.arrayBuffer()) : null;
      if (!body?.byteLength) return Response.json(endpointDescription(deps.version, core.config.publicUrl));
      req = new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal });
    }
    const authInfo = {
      token: req.headers.get('authorization')!.trim().split(/\s+/)[1]!,
      clientId: grant.id,
      scopes,
      expiresAt: Math.floor(grant.expiresAt / 1000),
      extra: { expected: expectedContext(req) },
    };

    const id = req.headers.get('mcp-session-id');
    if (id !== null) {
      const session = sessions.get(id);
      if (!session || session.grantId !== grant.id) return sessionNotFound();
      session.lastUsedAt = core.clock.now();
      return flushHeadersAtOnce(await session.transport.handleRequest(req, { authInfo }));
    }
    sweep(grant.id);
    const session = await open({ id: grant.id, label: grant.label, storeId: store.id, expiresAt: grant.expiresAt, scopes });
    const res = await session.transport.handleRequest(req, { authInfo });
    if (session.transport.sessionId === undefined) await session.server.close(); // not an initialize: nothing to keep
    else await pipeline.audit(ctx, res.status, null, requestId);
    return res;
  }

  /** A connect refused before any session: audited like a refused HTTP call (by its grant once known), then answered. */
  async function refused(err: AppError, requestId: string, ctx: Scoped = null): Promise<Response> {
    await pipeline.audit(ctx, err.status, err, requestId).catch(() => {});
    return pipeline.errorResponse(ctx, err);
  }

  return {
    fetch: handle,
    async close() {
      await Promise.all([...sessions.keys()].map(close));
      await closeSandboxes();
    },
  };
}

/** As the SDK answers an unknown session: the client must initialize again. Another grant's session is unknown. */
function sessionNotFound(): Response {
  return Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 });
}

/** The expected-context headers of the MCP request, passed on to every call `execute` makes. */
function expectedContext(req: Request): Record<string, string> {
  return Object.fromEntries(EXPECTED_CONTEXT.flatMap((c) => (req.headers.get(c.header) === null ? [] : [[c.key, req.headers.get(c.header)!]])));
}

/** An SSE response whose first chunk is a comment frame, so the client sees the headers without waiting. */
function flushHeadersAtOnce(res: Response): Response {
  if (!res.body || !res.headers.get('content-type')?.startsWith('text/event-stream')) return res;
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    start: (c) => c.enqueue(OPEN_FRAME),
    async pull(c) {
      const { done, value } = await reader.read();
      if (done) c.close();
      else c.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, { status: res.status, headers: res.headers });
}
