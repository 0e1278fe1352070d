/**
 * An MCP session is not held by the instance that opened it: the SDK's own client opens one on serve A and goes on
 * on serve B (two instances on one PostgreSQL, when HOOKRELAY_TEST_DATABASE_URL is set), or on the same SQLite box
 * after a restart. A load balancer in front is played by the client's fetch, which sends each request where the test says.
 */
import { afterAll, describe, expect, it } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { openPgRepo } from '../../db/pg/repo.ts';
import type { Repo } from '../../db/repo.ts';
import { openSqliteRepo } from '../../db/sqlite/repo.ts';
import { createCore, defaultConfig } from '../../src/core.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { initStore } from '../../src/ops/stores.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { TEST_DATABASE_URL, testSchema } from '../fixtures/storage.ts';
import { execute, INITIALIZE, rpc } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 60_000;
const SHOP = 'demo.myshopify.com';

interface Instance {
  server: RunningServer;
  /** Requests the balancer sent here. */
  requests: string[];
}

/** A serve on `repo` with the box key `key`, on a loopback port of its own, its public URL its own address. */
async function instance(repo: Repo, key: Uint8Array, clock: ManualClock): Promise<Instance> {
  const core = createCore({ repo, box: new SecretBox(key), clock, log: memoryLog(), config: defaultConfig({ env: () => undefined }) });
  const server = await startServer(core, { port: 0, host: '127.0.0.1', worker: false, publicUrlFor: (port) => `http://127.0.0.1:${port}` });
  return { server, requests: [] };
}

/** The SDK's client behind a balancer that sends each request to `balancer.to`, and notes which instance had it. */
function clientVia(balancer: { to: Instance }, token: string) {
  const route = (url: string | URL, init?: RequestInit) => {
    const { to } = balancer;
    to.requests.push(init?.method ?? 'GET');
    return fetch(new URL(new URL(url).pathname, to.server.url), init);
  };
  const transport = new StreamableHTTPClientTransport(new URL('/agent/v1/mcp', balancer.to.server.url), {
    fetch: route,
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  return { client: new Client({ name: 'hookrelay-test', version: '1.0.0' }), transport };
}

const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

describe.if(!!TEST_DATABASE_URL)('two serve instances on one PostgreSQL', () => {
  it(
    'serve a session opened on A on B, with A stopped: tools/list and execute; another grant is refused there',
    async () => {
      const schema = testSchema();
      const key = newSecretKey();
      const clock = new ManualClock();
      const a = await instance(await openPgRepo({ url: TEST_DATABASE_URL!, schema, max: 4 }), key, clock);
      const b = await instance(await openPgRepo({ url: TEST_DATABASE_URL!, schema, max: 4 }), key, clock);
      try {
        await initStore(a.server.app.core, { shopDomain: SHOP });
        const mine = await issueGrant(a.server.app.core, { shopDomain: SHOP, tier: 'admin_assistant', ttlMs: 3600_000 });
        const other = await issueGrant(b.server.app.core, { shopDomain: SHOP, tier: 'admin_assistant', ttlMs: 3600_000 });

        const balancer = { to: a };
        const { client, transport } = clientVia(balancer, mine.token);
        await client.connect(transport);
        const session = transport.sessionId!;
        expect(session).toStartWith('mcs_');
        expect(a.requests).toContain('POST');

        balancer.to = b;
        await a.server.stop(); // nothing of the session stays behind on A
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name).sort()).toEqual(['execute', 'search']);
        const run = await execute(client, `const g = await api.call('getCurrentAgentGrant'); return [g.data.grant.id, g.data.grant.tier];`);
        expect(run.isError).toBe(false);
        expect(run.doc.result).toEqual([mine.grantId, 'admin_assistant']);
        expect(b.requests.filter((m) => m === 'POST')).toHaveLength(2);
        expect(transport.sessionId).toBe(session); // the same session throughout, never a new initialize

        // B knows the session only for the grant that opened it.
        const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
        const refused = await rpc(new URL('/agent/v1/mcp', b.server.url), list, { ...headers, authorization: `Bearer ${other.token}` });
        expect(refused.status).toBe(404);
        expect(((await refused.json()) as any).error).toMatchObject({ code: -32001, message: 'Session not found' });
        expect((await rpc(new URL('/agent/v1/mcp', b.server.url), list, { ...headers, authorization: `Bearer ${mine.token}` })).status).toBe(200);
        // The session start is audited once, by A, in the shared audit log.
        const starts = (await b.server.app.core.repo.listAudit({ limit: 500 })).filter(
          (r) => r.operationId === 'connectMcpAgentOperations' && r.transition !== 'execute',
        );
        expect(starts.filter((r) => r.grantId === mine.grantId)).toHaveLength(1);
        await client.close();
      } finally {
        await Promise.all([a.server.stop(), b.server.stop()]);
      }
    },
    SLOW,
  );

  it(
    'never run beside an instance with another box key: it refuses to start (secret_key_mismatch), and the first keeps its sessions',
    async () => {
      const schema = testSchema();
      const clock = new ManualClock();
      const a = await instance(await openPgRepo({ url: TEST_DATABASE_URL!, schema, max: 4 }), newSecretKey(), clock);
      const other = await openPgRepo({ url: TEST_DATABASE_URL!, schema, max: 4 });
      try {
        await initStore(a.server.app.core, { shopDomain: SHOP });
        const { token } = await issueGrant(a.server.app.core, { shopDomain: SHOP, tier: 'observer', ttlMs: 3600_000 });
        const bearer = { authorization: `Bearer ${token}` };
        const init = await rpc(new URL('/agent/v1/mcp', a.server.url), INITIALIZE, bearer);
        const headers = { ...bearer, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
        // A session sealed under A's key is never handed to a process that could not open it: such a process does not start.
        await expect(instance(other, newSecretKey(), clock)).rejects.toMatchObject({ code: 'secret_key_mismatch' });
        expect((await rpc(new URL('/agent/v1/mcp', a.server.url), list, headers)).status).toBe(200);
      } finally {
        await a.server.stop();
        await other.close();
      }
    },
    SLOW,
  );
});

describe('one SQLite box', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-mcp-restart-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'keeps serving a session after serve restarts: the SDK client goes on without a new initialize',
    async () => {
      const path = join(dir, 'hookrelay.db');
      const key = newSecretKey();
      const clock = new ManualClock();
      const first = await instance(await openSqliteRepo({ path }), key, clock);
      let second: Instance | null = null;
      try {
        await initStore(first.server.app.core, { shopDomain: SHOP });
        const { grantId, token } = await issueGrant(first.server.app.core, { shopDomain: SHOP, tier: 'operator', ttlMs: 3600_000 });
        const balancer = { to: first };
        const { client, transport } = clientVia(balancer, token);
        await client.connect(transport);
        const session = transport.sessionId;
        await first.server.stop();

        second = await instance(await openSqliteRepo({ path }), key, clock);
        balancer.to = second;
        const run = await execute(client, `return (await api.call('getCurrentAgentGrant')).data.grant.id;`);
        expect(run.doc.result).toBe(grantId);
        expect(transport.sessionId).toBe(session);
        expect(second.requests).toEqual(['POST']);
        await client.close();
      } finally {
        await first.server.stop();
        await second?.server.stop();
      }
    },
    SLOW,
  );
});
