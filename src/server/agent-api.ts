/**
 * The Agent Operations API half of the app: every served contract operation through the pipeline, the manifest,
 * openapi.json, the docs page and MCP. The app loads it with the first request for it: zod and the contract's
 * schemas are a fifth of a serve's resident memory, and the relay (hooks, lifecycle, status, metrics) needs none.
 */
import { requestIdOf, tagRequest } from '../lib/request-ids.ts';
import { MAX_API_BODY_BYTES } from '../contract/limits.ts';
import { buildManifest } from '../contract/manifest.ts';
import { appPlatform } from '../platform/registry.ts';
import { buildOpenApi } from '../contract/openapi.ts';
import { OPERATIONS, operations, pathMatcher, type Operation, type PublicOperationId } from '../contract/operations.ts';
import { OPENAPI_PATH } from '../contract/scopes.ts';
import { AppError, bodyTooLarge } from '../contract/errors.ts';
import type { ClientOf } from '../lib/auth-failures.ts';
import { readCapped, withCappedBody } from '../lib/body.ts';
import type { McpEndpoint, McpPipeline } from '../mcp/endpoint.ts';
import { surfaceOf } from '../mcp/surface.ts';
import { VERSION } from '../version.ts';
import { docsResponse } from './docs.ts';
import { HANDLERS } from './handlers.ts';
import { errorResponse, toResponse } from './http.ts';
import { createInvoke, type Call, type Invoke, type PipelineDeps } from './pipeline.ts';
import { RateLimiter } from './rate-limit.ts';
import { audit } from './steps/audit.ts';
import { authenticate, Refused } from './steps/authenticate.ts';

const UTF8 = new TextDecoder();

interface Route {
  op: Operation;
  pattern: RegExp;
  names: string[];
}

function compile(op: Operation): Route {
  const { re, names } = pathMatcher(op.path);
  return { op, pattern: re, names };
}

export interface AgentApi {
  /** Answers a path under the API prefix, or the docs page (`/docs`, `/`). */
  fetch(req: Request, path: string, client: ClientOf, decode: (s: string) => string | null): Promise<Response>;
  /** Ends open MCP sessions and their streams. */
  closeMcp(): Promise<void>;
  /** The pipeline's invoke, shared with the merchant's seat and MCP code mode (one limiter and idempotency map for all). */
  invoke: Invoke;
}

/** What the app shares with the API: the same store of failed authentications and storage health as the hooks. */
export type AgentApiDeps = Omit<PipelineDeps, 'limiter' | 'inflight'>;

export function createAgentApi(shared: AgentApiDeps): AgentApi {
  const { core } = shared;
  const routes = OPERATIONS.map(compile);
  const MCP = operations.connectMcpAgentOperations;
  // Loaded on the first MCP request: servers without MCP traffic never pay for the SDK.
  let mcp: Promise<McpEndpoint> | null = null;
  const mcpPipeline: McpPipeline = {
    audit: (ctx, status, err, requestId) => audit(core, MCP, ctx, {}, status, null, err, requestId, false, 'mcp'),
    async authenticate(authorization, client, requestId) {
      const who = await authenticate(shared, MCP, authorization, { client, requestId, surface: 'mcp' });
      return who instanceof Refused ? toResponse(who.answer) : who;
    },
    errorResponse,
  };
  // Loaded with the first MCP request; a load that failed is not kept, so the next request tries again.
  const mcpEndpoint = () =>
    (mcp ??= import('../mcp/endpoint.ts')
      .then((m) => m.createMcpEndpoint({ core, version: VERSION, invoke, pipeline: mcpPipeline }))
      .catch((err: unknown) => {
        mcp = null;
        throw err;
      }));
  const available = new Set(
    routes
      .filter((r) => Object.hasOwn(HANDLERS, r.op.operationId) || r.op.auth === 'none' || (r.op.transport === 'mcp' && core.config.mcp.codeMode))
      .map((r) => r.op.operationId),
  );
  /** The public operations, answered here without the pipeline (no bearer, no audit). */
  const PUBLIC: Record<PublicOperationId, () => Response> = {
    getAgentOperationsManifest: () =>
      Response.json(buildManifest(core.config.publicUrl, available, { adminApiVersion: appPlatform.apiVersion(core.clock.now()) })),
  };
  const deps: PipelineDeps = { ...shared, limiter: new RateLimiter(core.repo, core.clock, core.config.rateLimits), inflight: new Map() };
  const invoke = createInvoke(deps);

  async function fetch(req: Request, path: string, client: ClientOf, decode: (s: string) => string | null): Promise<Response> {
    if (path === MCP.path) {
      // POST, and GET / DELETE of its streams and sessions. The SDK buffers any body whole: cap it first.
      const capped = await withCappedBody(req, MAX_API_BODY_BYTES);
      if (!capped) return errorResponse(null, bodyTooLarge());
      tagRequest(capped, requestIdOf(req));
      return (await mcpEndpoint()).fetch(capped, client);
    }
    if (req.method === 'GET' && path === OPENAPI_PATH) return Response.json(buildOpenApi(core.config.publicUrl));
    if (req.method === 'GET' && (path === '/docs' || path === '/')) {
      return docsResponse(core.config.publicUrl);
    }

    let methodMismatch: Operation | null = null;
    for (const r of routes) {
      const m = r.pattern.exec(path);
      if (!m) continue;
      if (r.op.method !== req.method) {
        if (req.method === 'POST' && r.op.humanOnlyWrite) return toResponse(await invoke(r.op, callOf(req, r.op, {}, client, true)));
        methodMismatch = r.op;
        continue;
      }
      if (r.op.auth === 'none') return PUBLIC[r.op.operationId as PublicOperationId]();
      const params = Object.fromEntries(r.names.map((n, i) => [n, decode(m[i + 1]!) ?? '']));
      // Every other operation reached here has a handler: HANDLERS is total over them, and the transport is answered above.
      return toResponse(await invoke(r.op, callOf(req, r.op, params, client)));
    }
    if (methodMismatch) {
      return errorResponse(
        null,
        new AppError('method_not_allowed', `Use ${methodMismatch.method} for ${methodMismatch.operationId}.`, undefined, undefined, {
          Allow: methodMismatch.method,
        }),
      );
    }
    return errorResponse(null, new AppError('not_found', 'No such route. GET /agent/v1/manifest lists the operations.'));
  }

  return {
    fetch,
    async closeMcp() {
      if (mcp) await (await mcp).close();
    },
    invoke,
  };
}

/** A request to `op`'s route as a call: its bearer, headers, query, Idempotency-Key; its body is read once authorized. */
function callOf(req: Request, op: Operation, params: Record<string, string>, client: ClientOf, humanOnlyWrite = false): Call {
  return {
    authorization: req.headers.get('authorization'),
    expected: req.headers,
    params,
    query: op.query ? Object.fromEntries(new URL(req.url).searchParams) : undefined,
    readBody: op.body ? () => readJsonBody(req) : undefined,
    idempotencyKey: req.headers.get('idempotency-key'),
    requestId: requestIdOf(req),
    client,
    surface: surfaceOf(req),
    humanOnlyWrite,
    aborted: () => req.signal.aborted,
  };
}

/**
 * The request body as JSON: `{}` when empty, 415 for another type, 413 past 1 MiB (declared, or found while
 * reading a body sent without a length: never buffered whole), 400 when malformed.
 */
async function readJsonBody(req: Request): Promise<unknown> {
  const bytes = await readCapped(req, MAX_API_BODY_BYTES);
  if (!bytes) throw bodyTooLarge();
  const text = UTF8.decode(bytes);
  if (text.trim() === '') return {};
  const type = req.headers.get('content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) throw new AppError('unsupported_media_type', 'Send Content-Type: application/json.');
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('invalid_input', 'The body is not valid JSON.', [{ path: 'body', code: 'invalid_json', message: 'Malformed JSON' }]);
  }
}
