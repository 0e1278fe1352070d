/** The HTTP app: public routes, the inbound hook path, and every served contract operation through the pipeline. */
import { OPERATIONS, operations, type Operation, type OperationId } from '../contract/operations.ts';
import { buildManifest } from '../contract/manifest.ts';
import { buildOpenApi } from '../contract/openapi.ts';
import { EDITION } from '../contract/scopes.ts';
import { AppError, refuse } from '../contract/errors.ts';
import type { Core } from '../core.ts';
import { AUTH_FAILURE_LIMITS, MAX_API_BODY_BYTES } from '../contract/limits.ts';
import { withCappedBody } from '../lib/body.ts';
import { iso } from '../lib/clock.ts';
import type { McpEndpoint, McpPipeline } from '../mcp/endpoint.ts';
import { EndpointCache } from '../relay/endpoint-cache.ts';
import { createInboundHandler } from '../relay/inbound.ts';
import { createLifecycleHandler } from '../relay/lifecycle.ts';
import { describeFault, StorageHealth } from '../relay/storage-health.ts';
import { ReceiptWriter } from '../relay/writer.ts';
import { HANDLERS } from './handlers.ts';
import { errorResponse } from './http.ts';
import { audit, failedAuthentication, runOperation, type AnyHandler } from './pipeline.ts';
import { docsPage } from './docs.ts';
import { createMetricsHandler } from './metrics.ts';
import { VERSION } from '../version.ts';
import { AuthFailureLimiter, lazyClient } from '../lib/auth-failures.ts';
import { RateLimiter } from './rate-limit.ts';


interface Route {
  op: Operation;
  pattern: RegExp;
  names: string[];
  handler: AnyHandler | undefined;
}

function compile(op: Operation): Route {
  const names: string[] = [];
  const source = op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{(\w+)\\?\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { op, pattern: new RegExp(`^${source}$`), names, handler: HANDLERS[op.operationId as OperationId] as AnyHandler | undefined };
}

/** decodeURIComponent that answers null for malformed escapes instead of throwing. */
function safeDecode(s: string): string | null {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/**
 * The path of a request URL. Plain paths (no dot segment, escape or backslash to normalise) are cut out of the
 * string; the rest go through the URL parser. Parsing every URL cost more than any other step of a receipt
 * before its commit.
 */
export function pathOf(url: string): string {
  const scheme = url.indexOf('://');
  const start = scheme < 0 ? -1 : url.indexOf('/', scheme + 3);
  // No slash, or a query or fragment before it (an absolute-form target such as `http://host?x=/hooks/…`).
  if (start < 0 || /[?#]/.test(url.slice(scheme + 3, start))) return new URL(url).pathname;
  let end = url.indexOf('?', start);
  if (end < 0) end = url.length;
  const path = url.slice(start, end);
  return /[.%\\#]/.test(path) ? new URL(url).pathname : path;
}

/** A handler that refuses: the pipeline still authenticates, rate-limits and audits the attempt. */
function refuseHumanOnly(write: NonNullable<Operation['humanOnlyWrite']>): AnyHandler {
  return async () => {
    throw refuse({ category: 'human_only', ...write });
  };
}

export interface App {
  /**
   * `peer`: the socket's remote address, or a function giving it (serve defers Bun's requestIP: only a failed
   * authentication needs it); failed authentication is limited by it.
   */
  fetch(req: Request, peer?: string | null | (() => string | null)): Promise<Response>;
  core: Core;
  writer: ReceiptWriter;
  endpoints: EndpointCache;
  /** Operations this server serves. */
  available: ReadonlySet<string>;
  /** Ends open MCP sessions and their streams (serve calls it on shutdown). */
  closeMcpSessions(): Promise<void>;
  /** Called after receipts commit (serve wires the worker's wake here). */
  onReceipts(fn: () => void): void;
  /** Called after an agent operation changed an endpoint (serve's relay thread forgets it too). */
  onEndpointChanged(fn: (id: string) => void): void;
  /** Whether writes succeed, as /status reports it. */
  storage: StorageHealth;
}

export function createApp(core: Core): App {
  const endpoints = new EndpointCache(core);
  let wake: () => void = () => {};
  const writer = new ReceiptWriter(core.repo, (committed) => {
    wake();
    // Receipts this instance's worker did not take are for any peer's claim.
    if (core.repo.notify && committed.some((c) => c.outcome === 'accepted' && !c.leased)) core.repo.notify('due', '').catch(() => {});
  });
  const storage = new StorageHealth(core.clock, core.log);
  writer.reportHealthTo(storage);
  // Instances on one PostgreSQL share the failure windows; a SQLite file has one process, which counts in memory.
  const authFailures = new AuthFailureLimiter(core.clock, AUTH_FAILURE_LIMITS, core.repo.dialect === 'postgres' ? core.repo : null);
  const trustProxy = /^(1|true|yes|on)$/i.test(core.config.env('HOOKRELAY_TRUST_PROXY')?.trim() ?? '');
  const inbound = createInboundHandler({ core, endpoints, writer, authFailures });
  const lifecycle = createLifecycleHandler(core);
  const metrics = createMetricsHandler(core);
  const routes = OPERATIONS.map(compile);
  const MCP = operations.connectMcpAgentOperations;
  // Loaded on the first MCP request: CLI commands and servers without MCP traffic never pay for the SDK.
  let mcp: Promise<McpEndpoint> | null = null;
  const mcpPipeline: McpPipeline = {
    audit: (ctx, status, err, requestId) => audit(core, MCP, ctx, {}, status, null, err, requestId, false, 'mcp'),
    failedAuthentication: (err, client, requestId) => failedAuthentication({ core, authFailures }, MCP, err, client, requestId, 'mcp'),
    errorResponse,
  };
  const mcpEndpoint = () =>
    (mcp ??= import('../mcp/endpoint.ts').then((m) => m.createMcpEndpoint({ core, version: VERSION, appFetch: (req) => fetch(req), pipeline: mcpPipeline })));
  const available = new Set(routes.filter((r) => r.handler || r.op.auth === 'none' || (r.op === MCP && core.config.mcp.codeMode)).map((r) => r.op.operationId));
  let alsoChanged: (id: string) => void = () => {};
  const endpointChanged = (id: string) => {
    endpoints.invalidate(id);
    alsoChanged(id);
    core.repo.notify?.('endpoint', id).catch(() => {}); // peers drop it too; their cache TTL bounds a lost signal
  };
  const deps = { core, endpointChanged, limiter: new RateLimiter(core.repo, core.clock, core.config.rateLimits), authFailures, inflight: new Map(), storage };

  async function fetch(req: Request, peer: string | null | (() => string | null) = null): Promise<Response> {
    const path = pathOf(req.url);
    const client = lazyClient(req, peer, trustProxy);
    if (path.startsWith('/hooks/')) {
      const id = safeDecode(path.slice('/hooks/'.length));
      if (id && !id.includes('/')) return inbound(req, id, client);
      return Response.json({ code: 'not_found', message: 'No such endpoint.' }, { status: 404 });
    }
    if (path === '/flow/lifecycle') return lifecycle(req);
    if (path === '/metrics') return metrics(req);
    if (path === MCP.path) {
      // POST, and GET / DELETE of its streams and sessions. The SDK buffers any body whole: cap it first.
      const capped = await withCappedBody(req, MAX_API_BODY_BYTES);
      if (!capped) return errorResponse(null, new AppError('payload_too_large', 'Request bodies are limited to 1 MiB.'));
      return (await mcpEndpoint()).fetch(capped, client);
    }
    if (req.method === 'GET' && path === '/status') return status();
    if (req.method === 'GET' && path === '/agent/v1/openapi.json') return Response.json(buildOpenApi(core.config.publicUrl));
    if (req.method === 'GET' && (path === '/docs' || path === '/')) {
      return new Response(docsPage(core.config.publicUrl), { headers: { 'Content-Type': 'text/html; charset=utf-8' } });
    }

    let methodMismatch: Operation | null = null;
    for (const r of routes) {
      const m = r.pattern.exec(path);
      if (!m) continue;
      if (r.op.method !== req.method) {
        if (req.method === 'POST' && r.op.humanOnlyWrite) return runOperation(deps, r.op, refuseHumanOnly(r.op.humanOnlyWrite), req, {}, core.ids.next('req'), client);
        methodMismatch = r.op;
        continue;
      }
      if (r.op.operationId === 'getAgentOperationsManifest') return Response.json(buildManifest(core.config.publicUrl, available));
      if (!r.handler) {
        return errorResponse(null, new AppError('not_implemented', `${r.op.operationId} is declared in the contract but not served by this server yet; the manifest lists what is available.`));
      }
      const params = Object.fromEntries(r.names.map((n, i) => [n, safeDecode(m[i + 1]!) ?? '']));
      return runOperation(deps, r.op, r.handler, req, params, core.ids.next('req'), client);
    }
    if (methodMismatch) {
      return errorResponse(null, new AppError('method_not_allowed', `Use ${methodMismatch.method} for ${methodMismatch.operationId}.`, undefined, undefined, { Allow: methodMismatch.method }));
    }
    return errorResponse(null, new AppError('not_found', 'No such route. GET /agent/v1/manifest lists the operations.'));
  }

  /**
   * Aggregate health. Storage is degraded from a failed write until a write succeeds again (a full disk still
   * reads fine, so a read probe alone would say operational); the read probe catches a database that cannot
   * even be read. Degraded answers 503, so a load balancer's check takes the box out of rotation.
   */
  async function status(): Promise<Response> {
    let readable = true;
    try {
      await core.repo.listStores();
    } catch {
      readable = false;
    }
    const writes = storage.state();
    const ok = readable && writes.status === 'operational';
    const health = ok ? 'operational' : 'degraded';
    const storageComponent: Record<string, unknown> = { name: 'storage', status: health };
    if (writes.status === 'degraded') {
      Object.assign(storageComponent, {
        code: 'storage_unavailable',
        fault: writes.fault,
        detail: `Writes are failing: ${describeFault(writes.fault!)}. Receipts and API calls answer 503 until a write succeeds again.`,
        failingSince: iso(writes.failingSince!),
        lastFailureAt: iso(writes.lastFailureAt!),
      });
    } else if (!readable) {
      Object.assign(storageComponent, { code: 'storage_unavailable', detail: 'The database cannot be read.' });
    }
    const body = {
      status: health,
      edition: EDITION,
      version: VERSION,
      components: [{ name: 'ingest', status: health }, { name: 'agent_api', status: health }, storageComponent],
      time: iso(core.clock.now()),
    };
    return Response.json(body, { status: ok ? 200 : 503 });
  }

  return {
    fetch,
    core,
    writer,
    endpoints,
    available,
    async closeMcpSessions() {
      if (mcp) await (await mcp).close();
    },
    onReceipts(fn) {
      wake = fn;
    },
    onEndpointChanged(fn) {
      alsoChanged = fn;
    },
    storage,
  };
}
