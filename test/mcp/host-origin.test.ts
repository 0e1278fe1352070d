import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { DEFAULT_MCP } from '../../src/core.ts';
import { hostOriginRefusal } from '../../src/mcp/host-origin.ts';
import { INITIALIZE, rpc, startMcpServer, tool, type McpServerUnderTest } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 30_000;

const refusal = (headers: Record<string, string>, publicUrl: string, origins: string[] = [], hosts: string[] = []) =>
  hostOriginRefusal(new Headers(headers), publicUrl, { origins, hosts })?.refusal?.code ?? null;

describe('hostOriginRefusal', () => {
  it('takes a Host naming the public URL (any port), a loopback name or an IP address; refuses other names', () => {
    const pub = 'https://relay.example.com';
    for (const host of [
      'relay.example.com',
      'relay.example.com:8443',
      'RELAY.example.com',
      'localhost:8787',
      '127.0.0.1:8787',
      '[::1]:8787',
      '10.0.0.7:8787',
      '[fd00::7]',
    ]) {
      expect(refusal({ host }, pub), host).toBeNull();
    }
    for (const host of ['evil.example', 'relay.example.com.evil.example', 'evil.example:8787', 'hookrelay:8787', '', 'a b', 'x@relay.example.com']) {
      expect(refusal({ host }, pub), host).toBe('host_not_allowed');
    }
    expect(refusal({}, pub)).toBeNull(); // in process: no Host
    // A proxy that sends the name it reaches serve at (a container service name), once the operator allows it.
    expect(refusal({ host: 'hookrelay:8787' }, pub, [], ['hookrelay'])).toBeNull();
    expect(refusal({ host: 'evil.example' }, pub, [], ['hookrelay'])).toBe('host_not_allowed');
  });

  it('takes no Origin, the public origin, a configured one or the origin the request reached; loopback origins only on a loopback box', () => {
    const pub = 'https://relay.example.com';
    expect(refusal({ host: 'relay.example.com' }, pub)).toBeNull();
    expect(refusal({ host: 'relay.example.com', origin: 'https://relay.example.com' }, pub)).toBeNull();
    expect(refusal({ host: 'relay.example.com', origin: 'https://agents.example' }, pub, ['https://agents.example'])).toBeNull();
    expect(refusal({ host: '10.0.0.7:8787', origin: 'http://10.0.0.7:8787' }, pub)).toBeNull();
    for (const origin of ['https://evil.example', 'http://localhost:6274', 'null', 'https://relay.example.com.evil.example', 'http://10.0.0.8:8787']) {
      expect(refusal({ host: '10.0.0.7:8787', origin }, pub), origin).toBe('origin_not_allowed');
    }
    // Served on loopback (no public URL set: serve's own address), a local page may connect; others still may not.
    const local = 'http://127.0.0.1:8787';
    for (const origin of ['http://localhost:6274', 'http://127.0.0.1:3000', 'http://[::1]:5173'])
      expect(refusal({ host: '127.0.0.1:8787', origin }, local), origin).toBeNull();
    expect(refusal({ host: '127.0.0.1:8787', origin: 'https://evil.example' }, local)).toBe('origin_not_allowed');
  });
});

describe('POST /agent/v1/mcp behind a public URL', () => {
  let s: McpServerUnderTest;
  let token: string;
  const bearer = () => ({ authorization: `Bearer ${token}` });

  beforeAll(async () => {
    s = await startMcpServer({ publicUrl: 'https://relay.example', mcp: { ...DEFAULT_MCP, allowedOrigins: ['https://agents.example'] } });
    token = (await s.grant()).token;
  }, SLOW);
  afterAll(() => s.stop());

  it(
    'refuses a foreign Host with 403 host_not_allowed before authentication, audited; the public name and the address pass',
    async () => {
      for (const headers of [{ ...bearer(), host: 'evil.example' }, { host: `rebound.example:${s.mcpUrl.port}` }]) {
        const r = await rpc(s.mcpUrl, INITIALIZE, headers);
        expect(r.status).toBe(403);
        expect(r.headers.get('mcp-session-id')).toBeNull();
        const body = (await r.json()) as any;
        expect(body.error.code).toBe('action_refused');
        expect(body.refusal).toMatchObject({ category: 'safety', code: 'host_not_allowed' });
        expect(body.edition.editionKey).toBe('workflow-automation');
      }
      const audited = (await s.env.repo.listAudit({ limit: 500 })).filter(
        (a) => a.operationId === 'connectMcpAgentOperations' && a.refusalCode === 'host_not_allowed',
      );
      expect(audited).toHaveLength(2);
      for (const host of ['relay.example', `127.0.0.1:${s.mcpUrl.port}`, `localhost:${s.mcpUrl.port}`]) {
        expect((await rpc(s.mcpUrl, INITIALIZE, { ...bearer(), host })).status, host).toBe(200);
      }
    },
    SLOW,
  );

  it(
    'refuses a foreign Origin with 403 origin_not_allowed; the public, configured and own origins pass',
    async () => {
      for (const origin of ['https://evil.example', 'http://localhost:6274']) {
        const r = await rpc(s.mcpUrl, INITIALIZE, { ...bearer(), origin });
        expect(r.status, origin).toBe(403);
        expect(((await r.json()) as any).refusal).toMatchObject({ category: 'safety', code: 'origin_not_allowed' });
      }
      for (const origin of ['https://relay.example', 'https://agents.example', `http://127.0.0.1:${s.mcpUrl.port}`]) {
        expect((await rpc(s.mcpUrl, INITIALIZE, { ...bearer(), origin })).status, origin).toBe(200);
      }
    },
    SLOW,
  );

  it(
    "keeps the SDK's client working: it sends no Origin and the address it connects to as Host",
    async () => {
      const client = await s.connect(token);
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['execute', 'search']);
      const r = await tool(client, 'execute', { code: 'return (await api.call("getCurrentAgentGrant")).data.grant.tier;' });
      expect(r.doc).toMatchObject({ result: 'admin_assistant', calls: 1 });
    },
    SLOW,
  );
});
