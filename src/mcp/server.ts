/**
 * The MCP server of one request (endpoint.ts): code mode's two tools, `search` and `execute`, over the contract.
 * One definition serves both eras: a 2025-era request (2025-06-18, 2025-11-25) gets an instance of the 1.x SDK's
 * McpServer, which its sessionful transport serves exactly as before; a 2026-07-28 request gets the 2.x SDK's,
 * which its per-request handler serves. The tools are registered on either the same way.
 */
import { McpServer as ModernMcpServer } from '@modelcontextprotocol/server';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SUPPORTED_PROTOCOL_VERSIONS, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { EDITION, OPENAPI_PATH, type Scope } from '../contract/scopes.ts';
import type { AuditLog } from '../../db/repo.ts';
import type { CoreWith } from '../core.ts';
import { apiHost, type Caller, type CodeModeInvoke } from './api.ts';
import { executeHints, searchCatalogue, SearchInputShape } from './catalogue.ts';
import { runCode } from './code-mode.ts';
import { consentFor } from './consent.ts';
import type { SandboxOutcome } from './sandbox.ts';
import { operations } from '../contract/operations.ts';
import { publicLink } from '../lib/web.ts';

export interface SessionGrant {
  grantId: string;
  /** The grant's label, for audit rows. */
  label: string;
  /** The grant's store: `execute` runs are shared fairly between stores. */
  storeId: string;
  scopes: Scope[];
}

export interface ServerDeps {
  core: CoreWith<AuditLog>;
  version: string;
  /** The pipeline's invoke: `execute` calls go to it in process, as the grant the MCP request authenticated. */
  invoke: CodeModeInvoke;
}

/** The stateless revision, served beside the 2025-era ones the 1.x SDK lists (SUPPORTED_PROTOCOL_VERSIONS). */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

const EDITION_ID = `${EDITION.platformKey}/${EDITION.editionKey}`;

const INSTRUCTIONS = `hookrelay Agent Operations over MCP: the same contract, grant, scopes, confirmations, idempotency, audit and metering as the HTTP API.
Edition: ${EDITION.name} (platformKey ${EDITION.platformKey}, editionKey ${EDITION.editionKey}); every tool result's structuredContent names it as \`edition\`.
1. search: find operations (operationId, scopes, effect, input/output JSON Schema; callable says whether this grant may call it).
2. execute: run JavaScript that calls them and returns only what you need.
Changes are two steps: a preview ({mode: "preview", input}) answers an intent with a confirmation token; then execute ({mode: "execute", intentId, confirmationToken}) with an idempotencyKey.
On ${MODERN_PROTOCOL_VERSION}, a client that declares elicitation is also asked to have its person confirm each execute step (input_required); the retry runs the code again, its earlier calls answered from the record, so keep a run's calls the same on each round.
"delivered" only means the trigger was handed to Shopify Flow; downstream results must be confirmed separately.`;

const EXECUTE_DESCRIPTION = `Run JavaScript (the body of an async function) in a sandbox with no network, file system or timers. Return a JSON value.
api.call(operationId, { params, query, body, idempotencyKey }) and api.request(method, path, body, { idempotencyKey }) call the contract with your grant and resolve to the response body ({ edition, scope, actor, refusal, data }); an error answer throws an ApiError with code, message, status and refusal. console.log lines come back as logs.
Example: const { data } = await api.call('listEvents', { query: { limit: 5 } }); return data.events.map(e => [e.id, e.outcome]);
Limits per run: CPU time, memory, number of api calls and result size; each ends the run with its own error code.`;

/**
 * What the initialize answer says of the server. `edition` is beyond MCP's Implementation fields: raw JSON-RPC
 * clients read it there; the SDK's client drops unknown fields, so title and description name the edition too.
 */
const serverInfo = (version: string) => ({
  name: 'hookrelay',
  version,
  title: EDITION.name,
  description: `Agent Operations of the ${EDITION_ID} edition: code mode (search, execute) over the contract.`,
  edition: EDITION,
});

/**
 * The answer to a POST without a body (the spec makes the body optional; no JSON-RPC message is there to answer):
 * a response frame, id null, whose result says what this endpoint is and how to open a session. Nothing changes.
 */
export function endpointDescription(version: string, publicUrl: string) {
  return {
    jsonrpc: '2.0' as const,
    id: null,
    result: {
      edition: EDITION,
      serverInfo: serverInfo(version),
      transport: 'streamable-http',
      endpoint: publicLink(publicUrl, operations.connectMcpAgentOperations.path),
      protocolVersions: [MODERN_PROTOCOL_VERSION, ...SUPPORTED_PROTOCOL_VERSIONS],
      tools: ['search', 'execute'],
      start: `${MODERN_PROTOCOL_VERSION}: POST server/discover, then each request on its own, with your bearer grant, the protocol version, client info and capabilities in its params._meta, and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers. 2025-11-25 and 2025-06-18: POST a JSON-RPC initialize request with your bearer grant, Content-Type: application/json and Accept: application/json, text/event-stream; send the Mcp-Session-Id it answers, and MCP-Protocol-Version, with every later request.`,
      docs: { manifest: publicLink(publicUrl, operations.getAgentOperationsManifest.path), openapi: publicLink(publicUrl, OPENAPI_PATH) },
    },
  };
}

/**
 * A tool result: the document with the edition that answered, as structured content and as its JSON text (for
 * clients that read only text). Every answer of the HTTP API names the edition; so does every tool result.
 */
const result = (doc: Record<string, unknown>, isError = false): CallToolResult => {
  const structuredContent = { edition: EDITION, ...doc };
  return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent, ...(isError ? { isError } : {}) };
};

/**
 * The SDK answers a call it refuses before any handler runs (an unknown tool, arguments failing the input
 * schema) with a text-only result of its own; this gives it the shape of ours, edition included. The message
 * is the McpError's, `MCP error -32602: …` for invalid params; anything else (a handler that threw) is ours, and
 * its message is not shown.
 */
function ownSdkToolErrors(server: McpServer): void {
  const internals = server as unknown as { createToolError(message: string): CallToolResult };
  internals.createToolError = (message) =>
    result(
      { error: /^MCP error -32602\b/.test(message) ? { code: 'invalid_input', message } : { code: 'internal_error', message: 'The call failed on our side.' } },
      true,
    );
}

type AuthOfCall = { extra?: Record<string, unknown> };

/**
 * The caller of a tool call: the grant, expected context and request id of the HTTP request that carried it
 * (endpoint.ts; the 1.x SDK hands it as `extra.authInfo`, the 2.x SDK as `ctx.http.authInfo`).
 */
function callerOf(extra: { authInfo?: AuthOfCall; http?: { authInfo?: AuthOfCall } }): Caller | null {
  const caller = (extra.authInfo ?? extra.http?.authInfo)?.extra as Partial<Caller> | undefined;
  return caller?.principal && caller.expected && caller.requestId ? (caller as Caller) : null;
}

/**
 * How long a 2026-07-28 client may keep the tool list and the discover answer: the tools a grant sees (their hints
 * follow its scopes) do not change while it lives, and `private` keeps one grant's list from another's cache.
 */
const CACHE_HINT = { ttlMs: 300_000, cacheScope: 'private' as const };

/** The server of a 2025-era request (1.x SDK, served by endpoint.ts's sessionful transport). */
export function createMcpServer(deps: ServerDeps, grant: SessionGrant): McpServer {
  const server = new McpServer(serverInfo(deps.version), { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  registerTools(server, deps, grant);
  return server;
}

/** The server of a 2026-07-28 request (2.x SDK, served by its per-request handler): the same tools. */
export function createModernMcpServer(deps: ServerDeps, grant: SessionGrant): ModernMcpServer {
  const server = new ModernMcpServer(serverInfo(deps.version), {
    capabilities: { tools: {} },
    instructions: INSTRUCTIONS,
    cacheHints: { 'tools/list': CACHE_HINT, 'server/discover': CACHE_HINT },
  });
  // The two SDKs' registerTool take the same (name, config, callback) for a zod shape; only their types differ.
  registerTools(server as unknown as McpServer, deps, grant);
  return server;
}

/** Registers `search` and `execute` for `grant`, in that order (tools/list is deterministic). */
function registerTools(server: McpServer, deps: ServerDeps, grant: SessionGrant): void {
  ownSdkToolErrors(server);

  server.registerTool(
    'search',
    {
      title: 'Search the operation catalogue',
      description:
        'Find Agent Operations by words, effect class or scope. Each result has operationId, method, path, scopes, effect, confirmation, input/output JSON Schema and whether this grant may call it.',
      inputSchema: SearchInputShape,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (input) => result(searchCatalogue(input, grant.scopes)),
  );

  server.registerTool(
    'execute',
    {
      title: 'Run code against the contract',
      description: EXECUTE_DESCRIPTION,
      inputSchema: { code: z.string().min(1).max(100_000).describe('JavaScript: the body of an async function; `return` the result') },
      annotations: executeHints(grant.scopes),
    },
    async ({ code }, extra) => {
      const caller = callerOf(extra);
      if (!caller) return result({ error: { code: 'unauthorized', message: 'No grant on this request.' } }, true);
      // 2026-07-28, a client that can ask its person: an execute step waits for the person's yes (consent.ts).
      const consent = consentFor(extra, grant.grantId, code, deps.core.box, deps.core.clock.now());
      if (consent && 'error' in consent) return result({ error: consent.error, calls: 0 }, true);
      const api = apiHost(deps.invoke, caller);
      const started = performance.now();
      const run = await runCode(code, deps.core.config.mcp.limits, consent ? consent.host(api) : api, grant.storeId, grant.grantId);
      const ms = (performance.now() - started).toFixed(0);
      deps.core.log.info(`mcp execute grant=${grant.grantId} calls=${run.calls} outcome=${run.ok ? 'ok' : run.error.code} ${ms}ms`);
      await auditRun(deps.core, grant, run, caller.requestId).catch((err: unknown) =>
        deps.core.log.warn(`mcp execute audit failed: ${err instanceof Error ? err.message : 'error'}`),
      );
      const stopped = consent?.stopped();
      if (stopped && 'ask' in stopped) return stopped.ask as unknown as CallToolResult;
      if (stopped) return result({ error: stopped.error, calls: run.calls }, true);
      const logs = run.logs.length ? { logs: run.logs } : {};
      return run.ok ? result({ result: run.result, ...logs, calls: run.calls }) : result({ error: run.error, ...logs, calls: run.calls }, true);
    },
  );
}

/**
 * One audit row per `execute` run, besides the rows of the calls it made (surface `mcp`, the same request id): so a
 * run that made no call, or that a sandbox limit ended (`error_code` sandbox_*), is on record too. Transition
 * `execute` tells it apart from the session start, which is audited under the same operation.
 */
async function auditRun(core: CoreWith<AuditLog>, grant: SessionGrant, run: SandboxOutcome, requestId: string): Promise<void> {
  await core.repo.insertAudit({
    id: core.ids.next('aud'),
    at: core.clock.now(),
    storeId: grant.storeId,
    grantId: grant.grantId,
    actorKind: 'agent',
    actorLabel: grant.label,
    operationId: operations.connectMcpAgentOperations.operationId,
    scopes: JSON.stringify(grant.scopes),
    targetId: null,
    intentId: null,
    transition: 'execute',
    outcome: run.ok ? 'ok' : 'error',
    status: 200,
    errorCode: run.ok ? null : run.error.code,
    refusalCategory: null,
    refusalCode: null,
    requestId,
    surface: 'mcp',
  });
}
