import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { operations, type DeclaredResponse } from '../../src/contract/operations.ts';
import { EDITION } from '../../src/contract/scopes.ts';
import { DEFAULT_MCP } from '../../src/core.ts';
import { SNAPSHOT_PATH } from '../../scripts/openapi.ts';
import { INITIALIZE, rpc, startMcpServer, type McpServerUnderTest } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 30_000;
const ROOT = new URL('../../', import.meta.url).pathname;
const MCP = operations.connectMcpAgentOperations;
const DECLARED: Readonly<Record<number, DeclaredResponse>> = MCP.responses;

let s: McpServerUnderTest;
let token: string;
const bearer = () => ({ authorization: `Bearer ${token}` });
const ACCEPT = 'application/json, text/event-stream';

beforeAll(async () => {
  s = await startMcpServer();
  token = (await s.grant()).token;
}, SLOW);
afterAll(() => s.stop());

/** A POST to the MCP endpoint with exactly these headers and body. */
const post = (headers: Record<string, string>, body?: string) => fetch(s.mcpUrl, { method: 'POST', headers, body });

type Answer = Pick<Response, 'status' | 'text'> & { headers: { get(name: string): string | null } };

/** The answer has a status the table declares, and a body its declaration describes (none when it declares none). */
async function expectDeclared(res: Answer, status: number): Promise<any> {
  expect(res.status).toBe(status);
  const declared = DECLARED[status];
  expect(declared, `status ${status} is declared`).toBeDefined();
  const text = await res.text();
  if (!declared!.body) {
    expect(text).toBe('');
    return null;
  }
  const json = JSON.parse(text);
  expect(declared!.body.safeParse(json).success, `${status}: ${text}`).toBe(true);
  for (const name of Object.keys(declared!.headers ?? {})) expect(res.headers.get(name), `${status} ${name}`).not.toBeNull();
  return json;
}

describe('connectMcpAgentOperations: the answers its table entry declares', () => {
  it('are the ones OpenAPI lists for POST /agent/v1/mcp, 400, 403, 404, 406 and 415 among them', async () => {
    const committed = (await Bun.file(`${ROOT}${SNAPSHOT_PATH}`).json()) as any;
    const listed = committed.paths[MCP.path].post.responses;
    expect(Object.keys(listed)).toEqual(Object.keys(DECLARED));
    for (const status of ['200', '202', '400', '401', '403', '404', '406', '413', '415', '429', '503']) expect(listed[status], status).toBeDefined();
    expect(committed.paths[MCP.path].post.requestBody.required).toBe(false);
  });

  it(
    'answer a POST without a body (the body is optional) with 200: a frame whose result describes the endpoint, not a parse error',
    async () => {
      const before = (await s.env.repo.listAudit({ limit: 500 })).length;
      const empty = new ReadableStream({ start: (c) => c.close() }); // sent chunked, with no bytes
      for (const [headers, body] of [
        [bearer(), undefined],
        [{ ...bearer(), 'content-type': 'application/json', accept: ACCEPT }, ''],
        [{ ...bearer(), 'content-type': 'application/json' }, empty],
      ] as const) {
        const res = await fetch(s.mcpUrl, { method: 'POST', headers, body });
        expect(res.headers.get('content-type')).toStartWith('application/json');
        expect(res.headers.get('mcp-session-id')).toBeNull();
        const frame = await expectDeclared(res, 200);
        expect(frame).toMatchObject({ jsonrpc: '2.0', id: null });
        expect(frame.result).toMatchObject({
          edition: EDITION,
          serverInfo: { name: 'hookrelay', title: EDITION.name },
          transport: 'streamable-http',
          endpoint: s.mcpUrl.href,
          tools: ['search', 'execute'],
          docs: { manifest: `${s.url}/agent/v1/manifest`, openapi: `${s.url}/agent/v1/openapi.json` },
        });
        expect(frame.result.protocolVersions).toContain('2025-06-18');
        expect(frame.result.start).toContain('initialize');
      }
      expect((await s.env.repo.listAudit({ limit: 500 })).length).toBe(before); // no session was started
      // Still only for a grant, as every operation but the manifest.
      expect((await fetch(s.mcpUrl, { method: 'POST' })).status).toBe(401);
      // The OpenAPI document says so.
      const committed = (await Bun.file(`${ROOT}${SNAPSHOT_PATH}`).json()) as any;
      expect(committed.paths[MCP.path].post.responses['200'].description).toContain('without a body');
    },
    SLOW,
  );

  it(
    'are each given by the server, with the declared body (500 aside: an unexpected failure)',
    async () => {
      const produced = new Set<number>();
      const check = async (res: Answer, status: number) => {
        produced.add(status);
        return expectDeclared(res, status);
      };
      const init = await rpc(s.mcpUrl, INITIALIZE, bearer());
      await check(init.clone(), 200);
      const session = { ...bearer(), 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
      await check(await rpc(s.mcpUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, session), 202);

      const parse = await check(await post({ ...bearer(), 'content-type': 'application/json', accept: ACCEPT }, '{"jsonrpc":'), 400);
      expect(parse.error.code).toBe(-32700);
      const noSession = await check(await rpc(s.mcpUrl, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, bearer()), 400);
      expect(noSession.error.message).toContain('not initialized');
      await check(await rpc(s.mcpUrl, INITIALIZE), 401);
      await check(await rpc(s.mcpUrl, INITIALIZE, { ...bearer(), origin: 'https://evil.example' }), 403);
      await check(await rpc(s.mcpUrl, INITIALIZE, { ...bearer(), host: 'evil.example' }), 403);
      await check(await rpc(s.mcpUrl, INITIALIZE, { ...bearer(), 'x-service-expected-shop-domain': 'other.myshopify.com' }), 403);
      const gone = await check(
        await rpc(s.mcpUrl, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, { ...session, 'mcp-session-id': 'mcs_nosuchsession' }),
        404,
      );
      expect(gone.error.code).toBe(-32001);
      await check(await rpc(s.mcpUrl, INITIALIZE, { ...bearer(), accept: 'application/json' }), 406);
      await check(await post({ ...bearer(), 'content-type': 'application/json', accept: ACCEPT }, ' '.repeat(1024 * 1024 + 1)), 413);
      await check(await post({ ...bearer(), 'content-type': 'text/plain', accept: ACCEPT }, JSON.stringify(INITIALIZE)), 415);

      const off = await startMcpServer({ mcp: { ...DEFAULT_MCP, codeMode: false } });
      try {
        await check(await rpc(off.mcpUrl, INITIALIZE, { authorization: `Bearer ${(await off.grant()).token}` }), 503);
      } finally {
        await off.stop();
      }

      // Failed authentications past the client's limit (AUTH_FAILURE_LIMITS.perClient): 429. A valid token still passes.
      let res = await rpc(s.mcpUrl, INITIALIZE, { authorization: 'Bearer hrg_wrong' });
      for (let i = 0; i < 100 && res.status === 401; i++) res = await rpc(s.mcpUrl, INITIALIZE, { authorization: 'Bearer hrg_wrong' });
      await check(res, 429);
      expect((await rpc(s.mcpUrl, INITIALIZE, bearer())).status).toBe(200);

      expect([...produced].sort((a, b) => a - b)).toEqual(
        Object.keys(DECLARED)
          .map(Number)
          .filter((st) => st !== 500),
      );
    },
    SLOW,
  );
});
