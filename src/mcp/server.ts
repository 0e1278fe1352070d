/** The MCP server of one session: code mode's two tools, `search` and `execute`, over the contract. */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Scope } from '../contract/scopes.ts';
import type { AuditLog } from '../../db/repo.ts';
import type { CoreWith } from '../core.ts';
import { apiHost, type Caller } from './api.ts';
import { executeHints, searchCatalogue, SearchInputShape } from './catalogue.ts';
import { runCode } from './code-mode.ts';
import type { SandboxOutcome } from './sandbox.ts';
import { operations } from '../contract/operations.ts';

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
  /** The app's own fetch: `execute` calls go through it in process. */
  appFetch(req: Request): Promise<Response>;
}

const INSTRUCTIONS = `hookrelay Agent Operations over MCP: the same contract, grant, scopes, confirmations, idempotency, audit and metering as the HTTP API.
1. search: find operations (operationId, scopes, effect, input/output JSON Schema; callable says whether this grant may call it).
2. execute: run JavaScript that calls them and returns only what you need.
Changes are two steps: a preview ({mode: "preview", input}) answers an intent with a confirmation token; then execute ({mode: "execute", intentId, confirmationToken}) with an idempotencyKey.
"delivered" only means the trigger was handed to Shopify Flow; downstream results must be confirmed separately.`;

const EXECUTE_DESCRIPTION = `Run JavaScript (the body of an async function) in a sandbox with no network, file system or timers. Return a JSON value.
api.call(operationId, { params, query, body, idempotencyKey }) and api.request(method, path, body, { idempotencyKey }) call the contract with your grant and resolve to the response body ({ edition, scope, actor, refusal, data }); an error answer throws an ApiError with code, message, status and refusal. console.log lines come back as logs.
Example: const { data } = await api.call('listEvents', { query: { limit: 5 } }); return data.events.map(e => [e.id, e.outcome]);
Limits per run: CPU time, memory, number of api calls and result size; each ends the run with its own error code.`;

const text = (doc: unknown, isError = false): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(doc) }], ...(isError ? { isError } : {}) });

/** The caller of a tool call: the token and expected context of the HTTP request that carried it. */
function callerOf(extra: { authInfo?: { token: string; extra?: Record<string, unknown> } }): Caller | null {
  const auth = extra.authInfo;
  return auth ? { token: auth.token, expected: (auth.extra?.expected ?? {}) as Caller['expected'] } : null;
}

export function createMcpServer(deps: ServerDeps, grant: SessionGrant): McpServer {
  const server = new McpServer({ name: 'hookrelay', version: deps.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });

  server.registerTool(
    'search',
    {
      title: 'Search the operation catalogue',
      description: 'Find Agent Operations by words, effect class or scope. Each result has operationId, method, path, scopes, effect, confirmation, input/output JSON Schema and whether this grant may call it.',
      inputSchema: SearchInputShape,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (input) => text(searchCatalogue(input, grant.scopes)),
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
      if (!caller) return text({ error: { code: 'unauthorized', message: 'No grant on this request.' } }, true);
      const started = performance.now();
      const run = await runCode(code, deps.core.config.mcp.limits, apiHost(deps.appFetch, caller), grant.storeId);
      const ms = (performance.now() - started).toFixed(0);
      deps.core.log.info(`mcp execute grant=${grant.grantId} calls=${run.calls} outcome=${run.ok ? 'ok' : run.error.code} ${ms}ms`);
      await auditRun(deps.core, grant, run).catch((err: unknown) => deps.core.log.warn(`mcp execute audit failed: ${err instanceof Error ? err.message : 'error'}`));
      const logs = run.logs.length ? { logs: run.logs } : {};
      return run.ok ? text({ result: run.result, ...logs, calls: run.calls }) : text({ error: run.error, ...logs, calls: run.calls }, true);
    },
  );
  return server;
}

/**
 * One audit row per `execute` run, besides the rows of the calls it made (surface `mcp`): so a run that made
 * no call, or that a sandbox limit ended (`error_code` sandbox_*), is on record too. Transition `execute`
 * tells it apart from the session start, which is audited under the same operation.
 */
async function auditRun(core: CoreWith<AuditLog>, grant: SessionGrant, run: SandboxOutcome): Promise<void> {
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
    requestId: null,
    surface: 'mcp',
  });
}
