/**
 * invoke(op, call): the whole contract without HTTP (src/server/pipeline.ts). A call authenticated once and made
 * several times keeps its grant and its request id; errors come back as data, with the headers HTTP would send.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { operations, type Operation } from '../../src/contract/operations.ts';
import { authenticateBearer, revokeGrant, type Principal } from '../../src/ops/grants.ts';
import type { Call, Invoke } from '../../src/server/pipeline.ts';
import { addGrant, addStore, call as httpCall, createTestEnv, rows, type TestEnv, testInvoke } from '../helpers.ts';

let env: TestEnv;
let token: string;
let invoke: Invoke;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env, 'admin_assistant');
  invoke = testInvoke(env);
});

const op = (id: keyof typeof operations) => operations[id] as Operation;
const base = (over: Partial<Call> = {}): Call => ({
  expected: new Headers(),
  params: {},
  idempotencyKey: null,
  requestId: 'req_invoke_test',
  client: () => null,
  surface: 'mcp',
  ...over,
});
const auditOf = (requestId: string) =>
  rows(
    env,
    `SELECT operation_id AS "operationId", status, actor_kind AS "actorKind", error_code AS "errorCode", surface FROM audit_log WHERE request_id = ? ORDER BY at, id`,
    requestId,
  );

describe('invoke', () => {
  it('answers a bearer call as the HTTP route does, as data', async () => {
    const a = await invoke(op('getCurrentAgentGrant'), base({ authorization: `Bearer ${token}` }));
    const viaHttp = await httpCall(env, 'GET', '/agent/v1/grant', { token });
    expect(a.status).toBe(200);
    expect(JSON.parse(JSON.stringify(a.body))).toEqual(viaHttp.json);
    expect(a.supportCode).toBeUndefined();
  });

  it('runs calls for a grant authenticated once under one request id, checking context and scopes on each', async () => {
    const principal: Principal = await authenticateBearer(env.core, `Bearer ${token}`);
    const run = base({ principal, requestId: 'req_one_run' });
    expect((await invoke(op('getCurrentAgentGrant'), run)).status).toBe(200);
    expect((await invoke(op('getSetupState'), run)).status).toBe(200);
    const elsewhere = await invoke(op('getSetupState'), { ...run, expected: new Headers({ 'X-Service-Expected-Shop-Domain': 'other.myshopify.com' }) });
    expect(elsewhere.status).toBe(403);
    expect((elsewhere.body.error as { code: string }).code).toBe('agent_context_mismatch');
    const observer = await authenticateBearer(env.core, `Bearer ${await addGrant(env, 'observer')}`);
    const lacking = await invoke(op('createEndpoint'), { ...run, principal: observer, body: { triggerVariant: 'order', resourceIdPath: 'order.id' } });
    expect((lacking.body.error as { code: string }).code).toBe('insufficient_scope');
    expect(await auditOf('req_one_run')).toEqual([
      { operationId: 'getCurrentAgentGrant', status: 200, actorKind: 'agent', errorCode: null, surface: 'mcp' },
      { operationId: 'getSetupState', status: 200, actorKind: 'agent', errorCode: null, surface: 'mcp' },
      { operationId: 'getSetupState', status: 403, actorKind: 'agent', errorCode: 'agent_context_mismatch', surface: 'mcp' },
      { operationId: 'createEndpoint', status: 403, actorKind: 'agent', errorCode: 'insufficient_scope', surface: 'mcp' },
    ]);
  });

  it('answers a failed authentication as data with its WWW-Authenticate header, audited', async () => {
    await revokeGrant(env.core, (await authenticateBearer(env.core, `Bearer ${token}`)).grant.id);
    const a = await invoke(op('getCurrentAgentGrant'), base({ authorization: `Bearer ${token}`, requestId: 'req_revoked' }));
    expect(a.status).toBe(401);
    expect(a.headers?.['WWW-Authenticate']).toStartWith('Bearer');
    expect((a.body.error as { requestId: string }).requestId).toBe('req_revoked');
    expect(a.supportCode).toMatch(/^sup-/);
    expect(await auditOf('req_revoked')).toEqual([
      { operationId: 'getCurrentAgentGrant', status: 401, actorKind: 'anonymous', errorCode: 'unauthorized', surface: 'mcp' },
    ]);
  });

  it('validates raw input, and hands input the caller validated to the handler as it is', async () => {
    const principal = await authenticateBearer(env.core, `Bearer ${token}`);
    const raw = await invoke(op('listEvents'), base({ principal, query: { limit: '0' } }));
    expect(raw.status).toBe(400);
    expect((raw.body.error as { details: { path: string }[] }).details[0]!.path).toBe('query.limit');
    // The raw query beside it is not parsed again: the caller's one validation stands.
    const query = operations.listEvents.query.parse({ limit: '1' });
    const valid = await invoke(op('listEvents'), base({ principal, query: { limit: '0' }, validated: { params: undefined, query, body: undefined } }));
    expect(valid.status).toBe(200);
  });

  it('reads the body only once the caller is authenticated', async () => {
    let reads = 0;
    const readBody = async () => {
      reads++;
      return { triggerVariant: 'order', resourceIdPath: 'order.id' };
    };
    expect((await invoke(op('createEndpoint'), base({ authorization: 'Bearer hrg_nope', readBody }))).status).toBe(401);
    expect(reads).toBe(0);
    expect((await invoke(op('createEndpoint'), base({ authorization: `Bearer ${token}`, readBody }))).status).toBe(201);
    expect(reads).toBe(1);
  });

  it('gives a keyed call its stored answer again, marked replayed', async () => {
    const principal = await authenticateBearer(env.core, `Bearer ${token}`);
    const create = base({ principal, body: { triggerVariant: 'order', resourceIdPath: 'order.id' }, idempotencyKey: 'k-1' });
    const first = await invoke(op('createEndpoint'), create);
    const again = await invoke(op('createEndpoint'), create);
    expect(first.replayed).toBeUndefined();
    expect(again.replayed).toBe(true);
    expect((again.body.data as { endpoint: { id: string } }).endpoint.id).toBe((first.body.data as { endpoint: { id: string } }).endpoint.id);
  });

  it('answers an operation with a route of its own (the manifest, the MCP transport) 404 without running anything', async () => {
    for (const id of ['getAgentOperationsManifest', 'connectMcpAgentOperations'] as const) {
      const a = await invoke(op(id), base({ authorization: `Bearer ${token}`, requestId: `req_${id}` }));
      expect(a.status).toBe(404);
      expect(await auditOf(`req_${id}`)).toEqual([]);
    }
  });
});
