import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEFAULT_MCP, mcpConfigFromEnv } from '../../src/core.ts';
import { revokeGrant } from '../../src/ops/grants.ts';
import { call } from '../helpers.ts';
import { INITIALIZE, rpc, startMcpServer, type McpServerUnderTest } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 30_000;

let s: McpServerUnderTest;
let admin: { grantId: string; token: string };
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  s = await startMcpServer({ mcp: { ...DEFAULT_MCP, allowedOrigins: ['https://agents.example'] } });
  admin = await s.grant();
}, SLOW);
afterAll(() => s.stop());

describe('POST /agent/v1/mcp', () => {
  it(
    'starts a session with initialize: 200 JSON and an Mcp-Session-Id; a notification is 202',
    async () => {
      const init = await rpc(s.mcpUrl, INITIALIZE, bearer(admin.token));
      expect(init.status).toBe(200);
      expect(init.headers.get('content-type')).toStartWith('application/json');
      const session = init.headers.get('mcp-session-id');
      expect(session).toStartWith('mcs_');
      const body = (await init.json()) as any;
      expect(body.result.serverInfo.name).toBe('hookrelay');
      expect(body.result.capabilities.tools).toBeDefined();
      expect(body.result.instructions).toContain('search');
      const note = await rpc(s.mcpUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...bearer(admin.token), 'mcp-session-id': session! });
      expect(note.status).toBe(202);

      // The session start is audited like any call: the operation, the grant, the outcome.
      const rows = (await s.env.repo.listAudit({ limit: 500 })).filter((a) => a.operationId === 'connectMcpAgentOperations' && a.grantId === admin.grantId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ actorKind: 'agent', outcome: 'ok', status: 200 });
    },
    SLOW,
  );

  it(
    'refuses initialize with 403 agent_context_mismatch when an expected-context header names another store, as REST does',
    async () => {
      const before = (await s.env.repo.listAudit({ limit: 500 })).filter((a) => a.errorCode === 'agent_context_mismatch').length;
      for (const [header, value] of [
        ['x-service-expected-shop-domain', 'other.myshopify.com'],
        ['x-service-expected-platform-account-id', 'acct-2'],
        ['x-service-expected-installation-id', 'inst-2'],
      ]) {
        const r = await rpc(s.mcpUrl, INITIALIZE, { ...bearer(admin.token), [header!]: value! });
        expect(r.status).toBe(403);
        expect(r.headers.get('mcp-session-id')).toBeNull();
        const body = (await r.json()) as any;
        expect(body.error).toMatchObject({ code: 'agent_context_mismatch', details: { header } });
      }
      await expect(s.connect(admin.token, { 'x-service-expected-shop-domain': 'other.myshopify.com' })).rejects.toMatchObject({ code: 403 });
      const rows = (await s.env.repo.listAudit({ limit: 500 })).filter((a) => a.errorCode === 'agent_context_mismatch');
      expect(rows.length - before).toBe(4);
      expect(rows.at(-1)).toMatchObject({ operationId: 'connectMcpAgentOperations', grantId: admin.grantId, status: 403 });

      // Matching headers pass; the shop domain compares case-insensitively.
      const ok = await rpc(s.mcpUrl, INITIALIZE, {
        ...bearer(admin.token),
        'x-service-expected-shop-domain': 'Demo.MyShopify.com',
        'x-service-expected-platform-account-id': 'acct-1',
      });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('mcp-session-id')).toStartWith('mcs_');
    },
    SLOW,
  );

  it(
    'lists exactly two tools, search and execute, with hints from the effect classes',
    async () => {
      const client = await s.connect(admin.token);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['execute', 'search']);
      const byName = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
      expect(byName.search).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
      expect(byName.execute).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false });

      const observer = await s.connect((await s.grant('observer')).token);
      const executeAsObserver = (await observer.listTools()).tools.find((t) => t.name === 'execute')!;
      expect(executeAsObserver.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
    },
    SLOW,
  );

  it(
    'answers 401 with WWW-Authenticate: Bearer without a valid token, to raw and SDK clients',
    async () => {
      for (const headers of [{}, bearer('hrg_notarealtoken'), { authorization: 'Basic abc' }]) {
        const r = await rpc(s.mcpUrl, INITIALIZE, headers);
        expect(r.status).toBe(401);
        expect(r.headers.get('www-authenticate')).toStartWith('Bearer');
        expect(((await r.json()) as any).error.code).toBe('unauthorized');
      }
      await expect(s.connect(null)).rejects.toMatchObject({ code: 401 });
      const refused = (await s.env.repo.listAudit({ limit: 500 })).filter((a) => a.operationId === 'connectMcpAgentOperations' && a.status === 401);
      expect(refused.length).toBeGreaterThanOrEqual(3);
      expect(refused.every((a) => a.actorKind === 'anonymous' && a.errorCode === 'unauthorized' && a.grantId === null)).toBe(true);
      expect(JSON.stringify(refused)).not.toContain('hrg_notarealtoken');
    },
    SLOW,
  );

  it(
    'checks the grant on every request: a revoked grant is refused on its existing session',
    async () => {
      const g = await s.grant('operator');
      const client = await s.connect(g.token);
      expect((await client.listTools()).tools).toHaveLength(2);
      const init = await rpc(s.mcpUrl, INITIALIZE, bearer(g.token));
      const session = init.headers.get('mcp-session-id')!;

      await revokeGrant(s.env.core, g.grantId);
      await expect(client.listTools()).rejects.toMatchObject({ code: 401, message: expect.stringContaining('revoked') });
      const raw = await rpc(s.mcpUrl, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { ...bearer(g.token), 'mcp-session-id': session });
      expect(raw.status).toBe(401);
      expect(raw.headers.get('www-authenticate')).toStartWith('Bearer');
    },
    SLOW,
  );

  it(
    'binds a session to the grant that created it: another grant cannot use it',
    async () => {
      const init = await rpc(s.mcpUrl, INITIALIZE, bearer(admin.token));
      const session = init.headers.get('mcp-session-id')!;
      const other = await s.grant('admin_assistant');
      const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
      const refused = await rpc(s.mcpUrl, list, { ...bearer(other.token), 'mcp-session-id': session });
      expect(refused.status).toBe(404);
      const own = await rpc(s.mcpUrl, list, { ...bearer(admin.token), 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' });
      expect(own.status).toBe(200);
    },
    SLOW,
  );

  it(
    'answers 403 for a browser Origin that is not allowed; its own and configured origins pass',
    async () => {
      const bad = await rpc(s.mcpUrl, INITIALIZE, { ...bearer(admin.token), origin: 'https://evil.example' });
      expect(bad.status).toBe(403);
      const body = (await bad.json()) as any;
      expect(body.refusal).toMatchObject({ category: 'safety', code: 'origin_not_allowed' });
      expect((await rpc(s.mcpUrl, INITIALIZE, { origin: 'https://evil.example' })).status).toBe(403);
      for (const origin of [s.url, 'https://agents.example']) {
        expect((await rpc(s.mcpUrl, INITIALIZE, { ...bearer(admin.token), origin })).status).toBe(200);
      }
    },
    SLOW,
  );

  it(
    'is marked available in the manifest',
    async () => {
      const manifest = (await call(s.env, 'GET', '/agent/v1/manifest')).json;
      expect(manifest.operations.find((o: { operationId: string }) => o.operationId === 'connectMcpAgentOperations').available).toBe(true);
    },
    SLOW,
  );
});

describe('GET and DELETE /agent/v1/mcp', () => {
  it(
    'answer 405 (Allow: POST): no stream, since nothing is sent unprompted, and no session to end; the SDK client carries on',
    async () => {
      const init = await rpc(s.mcpUrl, INITIALIZE, bearer(admin.token));
      const headers = { ...bearer(admin.token), 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
      const stream = await fetch(s.mcpUrl, { headers: { ...headers, accept: 'text/event-stream' } });
      expect(stream.status).toBe(405);
      expect(stream.headers.get('allow')).toBe('POST');
      expect(((await stream.json()) as any).error.message).toContain('unprompted');
      const end = await fetch(s.mcpUrl, { method: 'DELETE', headers });
      expect(end.status).toBe(405);
      expect(((await end.json()) as any).error.message).toContain('ends with its grant');
      expect((await rpc(s.mcpUrl, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers)).status).toBe(200);
      expect((await fetch(s.mcpUrl, { headers: { accept: 'text/event-stream' } })).status).toBe(401);

      // The SDK's client asks for a stream after initialize, takes the 405, and ends its session without an error.
      const transport = new StreamableHTTPClientTransport(s.mcpUrl, { requestInit: { headers: bearer(admin.token) } });
      const client = new Client({ name: 'hookrelay-test', version: '1.0.0' });
      const errors: Error[] = [];
      client.onerror = (err) => errors.push(err);
      const asked = () => s.env.log.lines.filter((l) => l.includes('GET /agent/v1/mcp 405')).length;
      const before = asked();
      await client.connect(transport);
      expect((await client.listTools()).tools).toHaveLength(2);
      for (let i = 0; i < 100 && asked() === before; i++) await Bun.sleep(20);
      expect(asked()).toBe(before + 1);
      await transport.terminateSession();
      expect(transport.sessionId).toBeUndefined();
      await client.close();
      expect(errors).toEqual([]);
    },
    SLOW,
  );
});

describe('code mode off', () => {
  it('is set by HOOKRELAY_MCP_CODE_MODE=off; HOOKRELAY_MCP_ALLOWED_ORIGINS and _HOSTS list extra origins and hosts', () => {
    expect(mcpConfigFromEnv({})).toMatchObject({ codeMode: true, allowedOrigins: [], allowedHosts: [] });
    expect(
      mcpConfigFromEnv({
        HOOKRELAY_MCP_CODE_MODE: 'off',
        HOOKRELAY_MCP_ALLOWED_ORIGINS: 'https://a.example, https://b.example',
        HOOKRELAY_MCP_ALLOWED_HOSTS: 'Hookrelay, relay-internal',
      }),
    ).toMatchObject({
      codeMode: false,
      allowedOrigins: ['https://a.example', 'https://b.example'],
      allowedHosts: ['hookrelay', 'relay-internal'],
    });
  });

  it(
    'answers 503 mcp_code_mode_unavailable while the API keeps working',
    async () => {
      const off = await startMcpServer({ mcp: { ...DEFAULT_MCP, codeMode: false } });
      try {
        const { token } = await off.grant();
        const r = await rpc(off.mcpUrl, INITIALIZE, bearer(token));
        expect(r.status).toBe(503);
        const body = (await r.json()) as any;
        expect(body.code).toBe('mcp_code_mode_unavailable');
        expect(typeof body.message).toBe('string');
        expect((await rpc(off.mcpUrl, INITIALIZE)).status).toBe(401);
        expect((await call(off.env, 'GET', '/agent/v1/grant', { token })).status).toBe(200);
        const manifest = (await call(off.env, 'GET', '/agent/v1/manifest')).json;
        expect(manifest.operations.find((o: { operationId: string }) => o.operationId === 'connectMcpAgentOperations').available).toBe(false);
      } finally {
        await off.stop();
      }
    },
    SLOW,
  );
});
