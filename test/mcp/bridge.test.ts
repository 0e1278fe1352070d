/** `hookrelay mcp` spawned as a desktop client would, driven by the SDK's own Client over stdio. */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioTransport } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { EDITION } from '../../src/contract/scopes.ts';
import { revokeGrant } from '../../src/ops/grants.ts';
import { ENTRY, scratchHome } from '../cli/harness.ts';
import { execute, INITIALIZE, MODERN_META, startMcpServer, type McpServerUnderTest } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 30_000;

let s: McpServerUnderTest;
let home: ReturnType<typeof scratchHome>;

beforeAll(async () => {
  s = await startMcpServer();
  home = scratchHome();
  // The profile names the variable holding the token, never the token.
  mkdirSync(join(home.dir, '.config', 'hookrelay'), { recursive: true });
  writeFileSync(
    join(home.dir, '.config', 'hookrelay', 'profiles.json'),
    JSON.stringify({ profiles: { default: { baseUrl: s.url, tokenEnv: 'HOOKRELAY_TOKEN_DESKTOP' } } }),
  );
}, SLOW);
afterAll(async () => {
  await s.stop();
  home.cleanup();
});

/** The bridge's environment: a scratch home whose profile names the variable holding the token. */
const bridgeEnv = (token: string) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home.dir,
  XDG_CONFIG_HOME: join(home.dir, '.config'),
  NO_COLOR: '1',
  HOOKRELAY_TOKEN_DESKTOP: token,
});

/** Spawns `bun commands/index.ts mcp` with a clean environment; stderr is collected, stdout is the protocol. */
async function bridge(token: string, args: string[] = []) {
  const transport = new StdioClientTransport({ command: 'bun', args: [ENTRY, 'mcp', ...args], cwd: home.dir, env: bridgeEnv(token), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'desktop-test', version: '1.0.0' });
  const protocolErrors: Error[] = [];
  client.onerror = (err) => protocolErrors.push(err);
  return { client, transport, protocolErrors, stderr: () => stderr };
}

describe('hookrelay mcp', () => {
  it(
    'bridges stdio to the remote endpoint with the profile: initialize, tools/list, execute',
    async () => {
      const { grantId, token } = await s.grant('operator');
      const b = await bridge(token);
      try {
        await b.client.connect(b.transport);
        expect(b.client.getServerVersion()?.name).toBe('hookrelay');
        const { tools } = await b.client.listTools();
        expect(tools.map((t) => t.name).sort()).toEqual(['execute', 'search']);
        const r = await execute(b.client, `const g = await api.call('getCurrentAgentGrant'); return [g.data.grant.id, g.data.grant.tier];`);
        expect(r.isError).toBe(false);
        expect(r.doc.result).toEqual([grantId, 'operator']);
        expect(b.protocolErrors).toEqual([]);
      } finally {
        await b.client.close();
      }
      expect(b.stderr()).toContain('forwarding stdio');
      expect(b.stderr()).not.toContain(token);
    },
    SLOW,
  );

  it(
    'answers a request the remote refuses with a JSON-RPC error, not silence',
    async () => {
      const { grantId, token } = await s.grant('operator');
      await revokeGrant(s.env.core, grantId);
      const b = await bridge(token);
      // A failed initialize closes the client and the bridge with it.
      await expect(b.client.connect(b.transport)).rejects.toThrow('unauthorized: This grant was revoked');
      expect(b.stderr()).not.toContain(token);
    },
    SLOW,
  );

  it(
    'opens a new remote session when the remote no longer knows its own (404), and the client never notices',
    async () => {
      // A proxy in front of the server plays a remote that lost the session (one whose box key changed, or an older
      // server that kept sessions in memory and restarted): it answers 404 for the first session once told to.
      const opened: string[] = [];
      const lost = new Set<string>();
      const proxy = Bun.serve({
        port: 0,
        async fetch(req) {
          const session = req.headers.get('mcp-session-id');
          if (session && lost.has(session))
            return Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 });
          const body = req.method === 'POST' ? await req.arrayBuffer() : undefined;
          const res = await fetch(new URL(new URL(req.url).pathname, s.url), { method: req.method, headers: req.headers, body });
          if (res.headers.get('mcp-session-id')) opened.push(res.headers.get('mcp-session-id')!);
          return res;
        },
      });
      writeFileSync(
        join(home.dir, '.config', 'hookrelay', 'profiles.json'),
        JSON.stringify({
          profiles: {
            default: { baseUrl: s.url, tokenEnv: 'HOOKRELAY_TOKEN_DESKTOP' },
            proxied: { baseUrl: proxy.url.origin, tokenEnv: 'HOOKRELAY_TOKEN_DESKTOP' },
          },
        }),
      );
      const { token } = await s.grant('operator');
      const b = await bridge(token, ['--profile', 'proxied']);
      try {
        await b.client.connect(b.transport);
        expect((await execute(b.client, 'return 1')).doc.result).toBe(1);
        expect(opened).toHaveLength(1);
        lost.add(opened[0]!);
        const r = await execute(b.client, `return (await api.call('getCurrentAgentGrant')).data.grant.tier;`);
        expect(r.isError).toBe(false);
        expect(r.doc.result).toBe('operator');
        expect(b.protocolErrors).toEqual([]);
        expect(opened).toHaveLength(2);
      } finally {
        await b.client.close();
        await proxy.stop(true);
      }
      expect(b.stderr()).toContain('opened a new one');
    },
    SLOW,
  );

  it(
    'delivers the answers still in flight when stdin closes, then exits',
    async () => {
      const { token } = await s.grant('operator');
      const proc = Bun.spawn(['bun', ENTRY, 'mcp'], { cwd: home.dir, env: bridgeEnv(token), stdin: 'pipe', stdout: 'pipe', stderr: 'ignore' });
      const lines = readLines(proc.stdout);
      const frame = (m: unknown) => proc.stdin.write(`${JSON.stringify(m)}\n`);
      frame(INITIALIZE);
      await proc.stdin.flush();
      expect((await lines.next()).value).toMatchObject({ id: 1, result: { serverInfo: { name: 'hookrelay' } } });
      frame({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const code = `for (let i = 0; i < 5; i++) await api.call('getCurrentAgentGrant'); return 'answered';`;
      frame({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'execute', arguments: { code } } });
      await proc.stdin.end(); // the client hangs up with its call in flight
      const rest: any[] = [];
      for await (const m of lines) rest.push(m);
      expect(await proc.exited).toBe(0);
      const answer = rest.find((m) => m.id === 2);
      expect(JSON.parse(answer.result.content[0].text)).toMatchObject({ result: 'answered', calls: 5 });
    },
    SLOW,
  );
});

describe('hookrelay mcp, 2026-07-28', () => {
  it(
    'bridges a 2.x client pinned to 2026-07-28: discover, tools/list with the edition, execute',
    async () => {
      const { grantId, token } = await s.grant('operator');
      const transport = new ModernStdioTransport({ command: 'bun', args: [ENTRY, 'mcp'], cwd: home.dir, env: bridgeEnv(token), stderr: 'pipe' });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const client = new ModernClient({ name: 'desktop-test-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      try {
        await client.connect(transport);
        expect(client.getProtocolEra()).toBe('modern');
        expect(client.getServerVersion()?.name).toBe('hookrelay');
        const listed = await client.listTools();
        expect(listed.tools.map((t) => t.name)).toEqual(['search', 'execute']);
        expect(listed._meta?.edition).toEqual(EDITION);
        const r = await execute(client, `const g = await api.call('getCurrentAgentGrant'); return [g.data.grant.id, g.data.grant.tier];`);
        expect(r.doc.result).toEqual([grantId, 'operator']);
      } finally {
        await client.close();
      }
      expect(stderr).not.toContain(token);
    },
    SLOW,
  );

  it(
    'hands the remote refusal of a 2026-07-28 frame back as its JSON-RPC error (-32022), with the edition',
    async () => {
      const { token } = await s.grant('operator');
      const proc = Bun.spawn(['bun', ENTRY, 'mcp'], { cwd: home.dir, env: bridgeEnv(token), stdin: 'pipe', stdout: 'pipe', stderr: 'ignore' });
      const lines = readLines(proc.stdout);
      const meta = { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' };
      proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: meta } })}\n`);
      await proc.stdin.flush();
      expect((await lines.next()).value).toMatchObject({ id: 5, error: { code: -32022, data: { requested: '2099-01-01', edition: EDITION } } });
      await proc.stdin.end();
      expect(await proc.exited).toBe(0);
    },
    SLOW,
  );
});

/** Newline-delimited JSON frames from a stream, as they arrive. */
async function* readLines(stream: ReadableStream<Uint8Array>) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line) yield JSON.parse(line);
    }
  }
}
