/**
 * MCP 2026-07-28 beside 2025-11-25 on one endpoint, negotiated per request: the 2.x SDK's client (stateless, no
 * initialize) and the 1.x SDK's (sessions) against the same real server; the standard headers, the version
 * refusal, and the edition in tool lists and error frames of both eras.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Client as ModernClient } from '@modelcontextprotocol/client';
import { EDITION } from '../../src/contract/scopes.ts';
import { revokeGrant } from '../../src/ops/grants.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { createEndpoint, orderEvent, sendHook } from '../helpers.ts';
import { execute, INITIALIZE, MODERN_META, modernRpc, rpc, startMcpServer, tool, type McpServerUnderTest } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 30_000;

let s: McpServerUnderTest;
let admin: { grantId: string; token: string };
let modern: ModernClient;
let eventId: string;

beforeAll(async () => {
  s = await startMcpServer();
  admin = await s.grant('admin_assistant');
  modern = await s.connectModern(admin.token);
  const created = await createEndpoint(s.env, admin.token);
  eventId = (await sendHook(s.env, created.endpoint, created.secret, orderEvent('mcp-2026'))).json.eventId;
  await new HandoffWorker(s.env.core).drain();
}, SLOW);
afterAll(() => s.stop());

describe('2026-07-28 with the 2.x client', () => {
  it(
    'discovers instead of initializing: the modern era, the server named with its edition, no session; discovery is audited as the connect',
    async () => {
      expect(modern.getProtocolEra()).toBe('modern');
      expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect(modern.getServerVersion()).toMatchObject({ name: 'hookrelay', title: EDITION.name });
      expect(modern.getInstructions()).toContain(EDITION.editionKey);

      // An 'auto' client probes with server/discover and lands on the modern era too.
      const auto = await s.connectModern(admin.token, { mode: 'auto' });
      expect(auto.getProtocolEra()).toBe('modern');

      const raw = await modernRpc(s.mcpUrl, admin.token, 'server/discover');
      expect(raw.status).toBe(200);
      expect(raw.headers.get('mcp-session-id')).toBeNull();
      const { result } = (await raw.json()) as any;
      expect(result).toMatchObject({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, ttlMs: 300_000, cacheScope: 'private' });
      expect(result._meta).toMatchObject({ edition: EDITION, 'io.modelcontextprotocol/serverInfo': { name: 'hookrelay', edition: EDITION } });

      const connects = (await s.env.repo.listAudit({ limit: 500 })).filter((a) => a.operationId === 'connectMcpAgentOperations' && a.grantId === admin.grantId);
      expect(connects.length).toBe(3);
      expect(connects.every((a) => a.outcome === 'ok' && a.status === 200 && a.surface === 'mcp')).toBe(true);
    },
    SLOW,
  );

  it(
    'lists search then execute, the same on every call, with ttlMs and cacheScope and the edition',
    async () => {
      const listed = await modern.listTools();
      expect(listed.tools.map((t) => t.name)).toEqual(['search', 'execute']);
      expect(listed._meta?.edition).toEqual(EDITION);
      const first = (await (await modernRpc(s.mcpUrl, admin.token, 'tools/list')).json()) as any;
      const second = (await (await modernRpc(s.mcpUrl, admin.token, 'tools/list')).json()) as any;
      expect(first.result).toMatchObject({ ttlMs: 300_000, cacheScope: 'private', _meta: { edition: EDITION } });
      expect(JSON.stringify(second.result.tools)).toBe(JSON.stringify(first.result.tools));
    },
    SLOW,
  );

  it(
    'searches the catalogue',
    async () => {
      const { doc, isError } = await tool(modern, 'search', { query: 'replay', schemas: false });
      expect(isError).toBe(false);
      expect(doc.edition).toEqual(EDITION);
      expect(doc.operations.map((o: { operationId: string }) => o.operationId)).toContain('createReplayIntent');
    },
    SLOW,
  );

  it(
    'previews a replay in one request and executes it with the confirmation in another; the audit shows one execution',
    async () => {
      const params = JSON.stringify({ eventId });
      const preview = await execute(
        modern,
        `const r = await api.call('createReplayIntent', { params: ${params}, body: { mode: 'preview', input: { reason: 'mcp 2026' } } });
         return { id: r.data.intent.id, token: r.data.intent.confirmation.token, state: r.data.intent.state };`,
      );
      expect(preview).toMatchObject({ isError: false, doc: { result: { state: 'previewed' } } });
      const { id, token } = preview.doc.result;
      const body = JSON.stringify({ mode: 'execute', intentId: id, confirmationToken: token });
      const run = `const r = await api.call('createReplayIntent', { params: ${params}, body: ${body}, idempotencyKey: 'mcp-2026-replay' }); return r.data.intent.state;`;
      expect((await execute(modern, run)).doc.result).toBe('executed');
      expect((await execute(modern, run)).doc.result).toBe('executed'); // the idempotent replay, not a second execution

      const audited = (await s.env.repo.listAudit({ limit: 500 })).filter((a) => a.operationId === 'createReplayIntent' && a.intentId === id);
      expect(audited.map((a) => a.transition)).toEqual(['previewed', 'executed', 'executed (idempotent replay)']);
      expect(audited.every((a) => a.grantId === admin.grantId && a.surface === 'mcp')).toBe(true);
    },
    SLOW,
  );

  it(
    'refuses a request whose Mcp-Method or Mcp-Name header is missing or disagrees with the body: 400, -32020, the edition in the error',
    async () => {
      const search = { name: 'search', arguments: { query: 'replay' } };
      const cases: [string, Promise<Response>][] = [
        ['no Mcp-Method', modernRpc(s.mcpUrl, admin.token, 'tools/list', {}, { 'mcp-method': '' })],
        ['Mcp-Method of another method', modernRpc(s.mcpUrl, admin.token, 'tools/list', {}, { 'mcp-method': 'tools/call' })],
        ['no Mcp-Name', modernRpc(s.mcpUrl, admin.token, 'tools/call', search, { 'mcp-name': '' })],
        ['Mcp-Name of another tool', modernRpc(s.mcpUrl, admin.token, 'tools/call', search, { 'mcp-name': 'execute' })],
        ['no MCP-Protocol-Version', modernRpc(s.mcpUrl, admin.token, 'tools/list', {}, { 'mcp-protocol-version': '' })],
      ];
      for (const [name, sent] of cases) {
        const r = await sent;
        expect(r.status, name).toBe(400);
        const { error } = (await r.json()) as any;
        expect(error.code, name).toBe(-32020);
        expect(error.data.edition, name).toEqual(EDITION);
      }
    },
    SLOW,
  );

  it(
    'refuses a revision it does not serve with -32022, naming what it supports',
    async () => {
      const meta = { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' };
      const r = await rpc(
        s.mcpUrl,
        { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: meta } },
        { authorization: `Bearer ${admin.token}`, 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
      );
      expect(r.status).toBe(400);
      const { error, id } = (await r.json()) as any;
      expect(id).toBe(7);
      expect(error).toMatchObject({ code: -32022, data: { requested: '2099-01-01', supported: ['2026-07-28'], edition: EDITION } });
    },
    SLOW,
  );

  it(
    'authenticates every request as 2025 ones are: no token 401, another store expected 403, a revoked grant 401 on the next call',
    async () => {
      expect((await modernRpc(s.mcpUrl, admin.token, 'server/discover', {}, { authorization: '' })).status).toBe(401);
      const mismatch = await modernRpc(s.mcpUrl, admin.token, 'tools/list', {}, { 'x-service-expected-shop-domain': 'other.myshopify.com' });
      expect(mismatch.status).toBe(403);
      expect(((await mismatch.json()) as any).error.code).toBe('agent_context_mismatch');

      const g = await s.grant('observer');
      const client = await s.connectModern(g.token);
      expect((await client.listTools()).tools).toHaveLength(2);
      await revokeGrant(s.env.core, g.grantId);
      // (tools/list is the client's to cache for ttlMs; a call reaches the server)
      await expect(client.callTool({ name: 'search', arguments: {} })).rejects.toThrow(/401|revoked/);
      expect((await modernRpc(s.mcpUrl, g.token, 'tools/list')).status).toBe(401);
    },
    SLOW,
  );

  it(
    'also speaks 2025-11-25 from the 2.x client when it does not negotiate (initialize, a session id)',
    async () => {
      const legacy = await s.connectModern(admin.token, { mode: 'legacy' });
      expect(legacy.getProtocolEra()).toBe('legacy');
      expect(legacy.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      expect((await legacy.listTools()).tools.map((t) => t.name)).toEqual(['search', 'execute']);
      expect((await tool(legacy, 'execute', { code: 'return 1 + 1' })).doc.result).toBe(2);
    },
    SLOW,
  );
});

describe('2026-07-28: asking the person before an execute step (MRTR)', () => {
  /** A failed event of its own, to replay. */
  const newEvent = async (tag: string) => {
    const created = await createEndpoint(s.env, admin.token);
    const id = (await sendHook(s.env, created.endpoint, created.secret, orderEvent(tag))).json.eventId as string;
    await new HandoffWorker(s.env.core).drain();
    return id;
  };
  /** Preview then execute in one run; the code catches a refused execute and returns its code. */
  const previewAndExecute = (id: string, reason = "'asked'") => `
    const params = { eventId: ${JSON.stringify(id)} };
    const p = await api.call('createReplayIntent', { params, body: { mode: 'preview', input: { reason: ${reason} } } });
    const body = { mode: 'execute', intentId: p.data.intent.id, confirmationToken: p.data.intent.confirmation.token };
    try {
      const e = await api.call('createReplayIntent', { params, body, idempotencyKey: 'mrtr-' + p.data.intent.id });
      return { id: p.data.intent.id, state: e.data.intent.state };
    } catch (err) {
      return { id: p.data.intent.id, refused: err.code };
    }`;
  /** `execute` of `code` as a raw 2026-07-28 request from a client that declares elicitation; `extra` joins its params. */
  const rawExecute =
    (code: string, token = admin.token) =>
    (extra: Record<string, unknown>) =>
      rpc(
        s.mcpUrl,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'execute',
            arguments: { code },
            _meta: { ...MODERN_META, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } },
            ...extra,
          },
        },
        { authorization: `Bearer ${token}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'execute' },
      ).then((res) => res.json() as Promise<any>);
  const transitions = async (intentId: string) =>
    (await s.env.repo.listAudit({ limit: 1000 })).filter((a) => a.operationId === 'createReplayIntent' && a.intentId === intentId).map((a) => a.transition);

  it(
    'asks once; on yes the retried run replays the preview from the record and sends the execute once',
    async () => {
      const asked: string[] = [];
      const client = await s.connectModern(admin.token, {
        onElicit: ({ message }) => {
          asked.push(message);
          return { action: 'accept', content: { execute: true } };
        },
      });
      const r = await execute(client, previewAndExecute(await newEvent('mrtr-yes')));
      expect(r.isError).toBe(false);
      expect(r.doc.result.state).toBe('executed');
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain(r.doc.result.id);
      expect(await transitions(r.doc.result.id)).toEqual(['previewed', 'executed']);
    },
    SLOW,
  );

  it(
    'on no the step is not sent: the code gets confirmation_declined, and the preview was made once',
    async () => {
      const client = await s.connectModern(admin.token, { onElicit: () => ({ action: 'decline' }) });
      const r = await execute(client, previewAndExecute(await newEvent('mrtr-no')));
      expect(r.doc.result.refused).toBe('confirmation_declined');
      expect(await transitions(r.doc.result.id)).toEqual(['previewed']);
    },
    SLOW,
  );

  it(
    'the first round answers input_required with the question and a sealed state, and sends nothing past the preview',
    async () => {
      const id = await newEvent('mrtr-raw');
      const call = rawExecute(previewAndExecute(id));
      const first = await call({});
      expect(first.result).toMatchObject({ resultType: 'input_required', _meta: { edition: EDITION } });
      expect(first.result.inputRequests.execute).toMatchObject({ method: 'elicitation/create', params: { requestedSchema: { required: ['execute'] } } });
      expect(first.result.requestState).toStartWith('v1.');
      expect(first.result.requestState).not.toContain('confirmation'); // sealed, not only signed
      const previews = (await s.env.repo.listAudit({ limit: 1000 })).filter((a) => a.operationId === 'createReplayIntent' && a.transition === 'previewed');
      const intentId = previews.at(-1)!.intentId!;
      expect(await transitions(intentId)).toEqual(['previewed']);

      // A forged or altered state is refused before any code runs.
      const altered = first.result.requestState.slice(0, -4) + (first.result.requestState.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      const forged = await call({ requestState: altered, inputResponses: { execute: { action: 'accept', content: { execute: true } } } });
      expect(forged.result.isError).toBe(true);
      expect(forged.result.structuredContent.error.code).toBe('invalid_input');
      // A retry is a round of the asking even when its _meta no longer declares elicitation: never run afresh.
      const undeclared = await call({ _meta: MODERN_META, requestState: altered, inputResponses: {} });
      expect(undeclared.result.structuredContent.error.code).toBe('invalid_input');
      expect(await transitions(intentId)).toEqual(['previewed']);

      // The same state for another grant is refused too.
      const other = await s.grant('admin_assistant');
      const stolen = await rawExecute(previewAndExecute(id), other.token)({ requestState: first.result.requestState, inputResponses: {} });
      expect(stolen.result.structuredContent.error.code).toBe('invalid_input');

      // The genuine retry with a yes: the preview answered from the record, the execute sent once.
      const done = await call({ requestState: first.result.requestState, inputResponses: { execute: { action: 'accept', content: { execute: true } } } });
      expect(done.result.structuredContent.result).toEqual({ id: intentId, state: 'executed' });
      expect(await transitions(intentId)).toEqual(['previewed', 'executed']);
    },
    SLOW,
  );

  it(
    'code that calls differently on the retry is stopped at the difference: sandbox_replay_diverged, nothing sent twice',
    async () => {
      const client = await s.connectModern(admin.token, { onElicit: () => ({ action: 'accept', content: { execute: true } }) });
      const id = await newEvent('mrtr-random');
      const r = await execute(client, previewAndExecute(id, 'String(Math.random())'));
      expect(r.isError).toBe(true);
      expect(r.doc.error.code).toBe('sandbox_replay_diverged');
      const audited = (await s.env.repo.listAudit({ limit: 1000 })).filter((a) => a.operationId === 'createReplayIntent' && a.targetId === id);
      expect(audited.map((a) => a.transition)).toEqual(['previewed']);
    },
    SLOW,
  );
  it(
    'a requestState past its 15 minutes is refused before any code runs: the step is not sent, even on yes',
    async () => {
      const id = await newEvent('mrtr-late');
      const call = rawExecute(previewAndExecute(id));
      const first = await call({});
      expect(first.result.resultType).toBe('input_required');
      const intentId = (await s.env.repo.listAudit({ limit: 1000 })).filter((a) => a.operationId === 'createReplayIntent' && a.targetId === id)[0]!.intentId!;
      s.env.clock.advance(15 * 60_000 + 1000);
      const late = await call({ requestState: first.result.requestState, inputResponses: { execute: { action: 'accept', content: { execute: true } } } });
      expect(late.result.isError).toBe(true);
      expect(late.result.structuredContent.error.code).toBe('invalid_input');
      expect(late.result.structuredContent.error.message).toContain('expired');
      expect(await transitions(intentId)).toEqual(['previewed']);
    },
    SLOW,
  );
});

describe('the edition in tool lists and JSON-RPC errors, both eras', () => {
  it(
    '2025-11-25: tools/list carries it in _meta; an unknown method, an unknown session and GET carry it in error.data',
    async () => {
      const legacy = await s.connect(admin.token);
      expect((await legacy.listTools())._meta?.edition).toEqual(EDITION);

      const init = await rpc(
        s.mcpUrl,
        { ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: '2025-11-25' } },
        { authorization: `Bearer ${admin.token}` },
      );
      expect(((await init.json()) as any).result._meta.edition).toEqual(EDITION);
      const session = { authorization: `Bearer ${admin.token}`, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
      const unknown = await rpc(s.mcpUrl, { jsonrpc: '2.0', id: 2, method: 'no/such/method' }, session);
      expect(((await unknown.json()) as any).error).toMatchObject({ code: -32601, data: { edition: EDITION } });
      const lost = await rpc(s.mcpUrl, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, { ...session, 'mcp-session-id': 'mcs_unknown' });
      expect(lost.status).toBe(404);
      expect(((await lost.json()) as any).error).toMatchObject({ code: -32001, data: { edition: EDITION } });
      const stream = await fetch(s.mcpUrl, { headers: { ...session, accept: 'text/event-stream' } });
      expect(stream.status).toBe(405);
      expect(((await stream.json()) as any).error.data.edition).toEqual(EDITION);
    },
    SLOW,
  );

  it(
    '2026-07-28: an unknown tool and an unknown method carry it in error.data',
    async () => {
      const unknownTool = (await (await modernRpc(s.mcpUrl, admin.token, 'tools/call', { name: 'nosuchtool', arguments: {} })).json()) as any;
      expect(unknownTool.error).toMatchObject({ code: -32602, data: { edition: EDITION } });
      const unknownMethod = (await (await modernRpc(s.mcpUrl, admin.token, 'no/such/method')).json()) as any;
      expect(unknownMethod.error).toMatchObject({ code: -32601, data: { edition: EDITION } });
    },
    SLOW,
  );
});
