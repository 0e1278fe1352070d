/**
 * Audit of the MCP surface: each `execute` run is on record (with no call, and when a limit ends it), and every
 * row says which surface a call came through: `mcp` from code mode, `cli` from the CLI client, `http` otherwise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { operations } from '../../src/contract/operations.ts';
import { DEFAULT_MCP } from '../../src/core.ts';
import { HookrelayClient } from '../../src/client/http.ts';
import { execute, startMcpServer, type McpServerUnderTest } from './harness.ts';

const SLOW = 30_000;

let s: McpServerUnderTest;
let grant: { grantId: string; token: string };
let client: Client;

beforeAll(async () => {
  s = await startMcpServer({ mcp: { ...DEFAULT_MCP, limits: { ...DEFAULT_MCP.limits, cpuMs: 10_000, maxCalls: 2 } } });
  grant = await s.grant('observer');
  client = await s.connect(grant.token);
}, SLOW);
afterAll(() => s.stop());

const rows = async () => (await s.env.repo.listAudit({ limit: 1000 })).filter((a) => a.grantId === grant.grantId);

describe('audit of the MCP surface', () => {
  it(
    'records each execute run, one that made no call and one a sandbox limit ended, under the grant',
    async () => {
      expect((await execute(client, 'return 1 + 1')).doc.result).toBe(2);
      const limited = await execute(client, `for (;;) await api.call('getCurrentAgentGrant');`);
      expect(limited.doc.error.code).toBe('sandbox_call_limit');

      const runs = (await rows()).filter((a) => a.transition === 'execute');
      expect(runs).toHaveLength(2);
      expect(runs[0]).toMatchObject({ operationId: 'connectMcpAgentOperations', actorKind: 'agent', outcome: 'ok', errorCode: null, surface: 'mcp' });
      expect(runs[1]).toMatchObject({ outcome: 'error', errorCode: 'sandbox_call_limit', surface: 'mcp' });
      // The two calls the limited run made are on record too, as calls through MCP.
      const calls = (await rows()).filter((a) => a.operationId === 'getCurrentAgentGrant');
      expect(calls.map((a) => a.surface)).toEqual(['mcp', 'mcp']);
    },
    SLOW,
  );

  it(
    'marks HTTP calls http and the CLI client cli; no header makes an HTTP call mcp',
    async () => {
      const before = (await rows()).length;
      const raw = (headers: Record<string, string>) => fetch(`${s.url}/agent/v1/grant`, { headers: { authorization: `Bearer ${grant.token}`, ...headers } });
      expect((await raw({})).status).toBe(200);
      expect((await raw({ 'user-agent': 'mcp', 'x-hookrelay-surface': 'mcp', via: 'mcp' })).status).toBe(200);
      expect((await raw({ 'user-agent': 'hookrelay-cli/9.9.9' })).status).toBe(200);
      await new HookrelayClient({ baseUrl: s.url, token: grant.token }).send(operations.getCurrentAgentGrant, {});
      const surfaces = (await rows()).slice(before).map((a) => a.surface);
      expect(surfaces).toEqual(['http', 'http', 'cli', 'cli']);
    },
    SLOW,
  );
});
