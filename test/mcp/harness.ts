/**
 * MCP test harness: the real server (startServer) on a loopback port, and the SDKs' own clients over HTTP: the 1.x
 * SDK's (2025-era) and the 2.x client's (`@modelcontextprotocol/client`, 2026-07-28 or either era).
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tier } from '../../src/contract/scopes.ts';
import type { Config } from '../../src/core.ts';
import { MODERN_PROTOCOL_VERSION } from '../../src/mcp/server.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { startServer } from '../../src/server/serve.ts';
import { closedPort } from '../cli/harness.ts';
import { addStore, createTestEnv, type TestEnv } from '../helpers.ts';

/** What a test's person answers an elicitation with. */
export type ElicitAnswer = { action: 'accept'; content: Record<string, string | number | boolean> } | { action: 'decline' | 'cancel' };

export interface McpServerUnderTest {
  /** The test env, its `app` being the served one. */
  env: TestEnv;
  url: string;
  mcpUrl: URL;
  grant(tier?: Tier): Promise<{ grantId: string; token: string }>;
  connect(token: string | null, headers?: Record<string, string>): Promise<Client>;
  /** The 2.x client; `mode` as its versionNegotiation (default: pinned to 2026-07-28). */
  connectModern(
    token: string | null,
    opts?: { headers?: Record<string, string>; mode?: 'legacy' | 'auto'; onElicit?: (params: { message: string }) => ElicitAnswer },
  ): Promise<ModernClient>;
  stop(): Promise<void>;
}

/** createTestEnv served by startServer (no handoff worker) on 127.0.0.1, its public URL set to that address. */
export async function startMcpServer(config: Partial<Config> = {}): Promise<McpServerUnderTest> {
  const port = closedPort();
  const url = `http://127.0.0.1:${port}`;
  const base = await createTestEnv({ publicUrl: url, ...config });
  await addStore(base, { platformAccountId: 'acct-1', installationId: 'inst-1' });
  const running = await startServer(base.core, { port, host: '127.0.0.1', worker: false });
  const env = { ...base, app: running.app };
  const mcpUrl = new URL('/agent/v1/mcp', url);
  const clients: { close(): Promise<void> }[] = [];
  return {
    env,
    url,
    mcpUrl,
    grant: async (tier = 'admin_assistant') => issueGrant(env.core, { shopDomain: 'demo.myshopify.com', tier, ttlMs: 3600_000 }),
    async connect(token, headers = {}) {
      const client = new Client({ name: 'hookrelay-test', version: '1.0.0' });
      const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      await client.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { ...auth, ...headers } } }));
      clients.push(client);
      return client;
    },
    async connectModern(token, { headers = {}, mode, onElicit } = {}) {
      const versionNegotiation = { mode: mode ?? { pin: MODERN_PROTOCOL_VERSION } };
      const capabilities = onElicit ? { elicitation: { form: {} } } : {};
      const client = new ModernClient({ name: 'hookrelay-test-2026', version: '1.0.0' }, { versionNegotiation, capabilities });
      if (onElicit) client.setRequestHandler('elicitation/create', async (req) => onElicit(req.params as { message: string }));
      const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      await client.connect(new ModernTransport(mcpUrl, { requestInit: { headers: { ...auth, ...headers } } }));
      clients.push(client);
      return client;
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await running.stop();
    },
  };
}

export interface ToolOutcome {
  isError: boolean;
  /** The tool's one text content, parsed. */
  doc: any;
  text: string;
}

/** Calls a tool (either SDK's client) and parses its JSON text result. */
export async function tool(client: Client | ModernClient, name: 'search' | 'execute', args: Record<string, unknown>): Promise<ToolOutcome> {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content as { type: string; text: string }[])[0]!.text;
  return { isError: r.isError === true, doc: JSON.parse(text), text };
}

export const execute = (client: Client | ModernClient, code: string) => tool(client, 'execute', { code });

/** A JSON-RPC POST to the MCP endpoint as a raw client would send it. */
export function rpc(mcpUrl: URL, body: unknown, headers: Record<string, string> = {}) {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** The per-request `_meta` a 2026-07-28 request carries in place of initialize. */
export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/**
 * A raw 2026-07-28 request: the envelope in `_meta`, and the MCP-Protocol-Version, Mcp-Method (and Mcp-Name) headers;
 * a header given as '' in `headers` is left out.
 */
export function modernRpc(mcpUrl: URL, token: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  const all = { authorization: `Bearer ${token}`, 'mcp-protocol-version': MODERN_PROTOCOL_VERSION, 'mcp-method': method, ...name, ...headers };
  const sent = Object.fromEntries(Object.entries(all).filter(([, v]) => v !== ''));
  return rpc(mcpUrl, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: MODERN_META } }, sent);
}
