/**
 * The seat's one way to act (src/seat/call.ts): a contract operation through invoke with the human as principal —
 * actor kind `human`, no grant, every scope of the tiers, still checked, validated, limited, metered and audited.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import type { StoreRow } from '../../db/types.ts';
import { operations, type Operation } from '../../src/contract/operations.ts';
import { DEFAULT_RATE_LIMITS } from '../../src/contract/limits.ts';
import { authenticateBearer } from '../../src/ops/grants.ts';
import type { Call, Invoke } from '../../src/server/pipeline.ts';
import { seatCall } from '../../src/seat/call.ts';
import type { Human, SeatContext } from '../../src/seat/types.ts';
import { addGrant, addStore, createTestEnv, rows, type TestEnv, testInvoke } from '../helpers.ts';

let env: TestEnv;
let store: StoreRow;
let invoke: Invoke;

async function setUp(rateLimits = DEFAULT_RATE_LIMITS) {
  env = await createTestEnv({ rateLimits });
  await addStore(env);
  store = (await env.core.repo.getStoreByShop('demo.myshopify.com'))!;
  invoke = testInvoke(env);
}

beforeEach(() => setUp());

const human = (actor: string, face: Human['face'] = 'console'): Human => ({ face, store, actor, sessionId: 'ses_test' });
const as = (h: Human, requestId = 'req_seat'): SeatContext['call'] => seatCall(invoke, h, requestId, () => '127.0.0.1');
async function asAgent(id: keyof typeof operations, over: Partial<Call> = {}) {
  const principal = await authenticateBearer(env.core, `Bearer ${await addGrant(env, 'admin_assistant')}`);
  const base: Call = { principal, params: {}, expected: new Headers(), idempotencyKey: null, requestId: 'req_agent', client: () => null, surface: 'http' };
  return invoke(operations[id] as Operation, { ...base, ...over });
}
const auditOf = (requestId: string) =>
  rows(
    env,
    `SELECT operation_id AS "operationId", status, actor_kind AS "actorKind", actor_label AS "actorLabel", grant_id AS "grantId", surface, outcome
       FROM audit_log WHERE request_id = ? ORDER BY at, id`,
    requestId,
  );

describe('seatCall', () => {
  it('reads as the human: envelope actor human with no grant, audited actorKind human with the label and face', async () => {
    const a = await as(human('shopify-staff:42', 'embedded'), 'req_read')({ operationId: 'getSetupState' });
    expect(a.status).toBe(200);
    expect(a.body.actor).toEqual({ kind: 'human', grantId: null, label: 'shopify-staff:42' });
    expect(a.body.scope).toMatchObject({ storeId: store.id, grantId: null });
    expect(await auditOf('req_read')).toEqual([
      { operationId: 'getSetupState', status: 200, actorKind: 'human', actorLabel: 'shopify-staff:42', grantId: null, surface: 'embedded', outcome: 'ok' },
    ]);
  });

  it('validates the input once, as for an agent', async () => {
    const a = await as(human('jane@laptop'))({ operationId: 'createEndpoint', body: { triggerVariant: 'nope' } });
    expect(a.status).toBe(400);
    expect((a.body.error as { code: string }).code).toBe('invalid_input');
  });

  it('answers an operation the contract does not have with 404, invoking nothing', async () => {
    const a = await as(human('jane@laptop'), 'req_none')({ operationId: 'dropEverything' });
    expect(a.status).toBe(404);
    expect(await auditOf('req_none')).toEqual([]);
  });

  it("binds a human's preview to that human: another human and an agent cannot execute it", async () => {
    const jane = as(human('jane@laptop'));
    const created = await jane({ operationId: 'createEndpoint', body: { triggerVariant: 'order', resourceIdPath: 'order.id' } });
    expect(created.status).toBe(201);
    const endpointId = (created.body.data as { endpoint: { id: string } }).endpoint.id;
    const preview = await jane({ operationId: 'createEndpointEditIntent', params: { endpointId }, body: { mode: 'preview', input: { name: 'Orders' } } });
    expect(preview.status).toBe(201);
    const intent = (preview.body.data as { intent: { id: string; confirmation: { token: string } } }).intent;
    const execute = { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token };
    const bob = await as(human('bob@laptop'))({ operationId: 'createEndpointEditIntent', params: { endpointId }, body: execute, idempotencyKey: 'k-bob' });
    expect(bob.status).toBe(403);
    expect((bob.body.refusal as { code: string }).code).toBe('intent_of_another_grant');
    const byAgent = await asAgent('createEndpointEditIntent', { params: { endpointId }, body: execute, idempotencyKey: 'k-agent' });
    expect(byAgent.status).toBe(403);
    expect((byAgent.body.refusal as { code: string }).code).toBe('intent_of_another_grant');
    const done = await jane({ operationId: 'createEndpointEditIntent', params: { endpointId }, body: execute, idempotencyKey: 'k-jane' });
    expect(done.status).toBe(200);
    expect((done.body.data as { intent: { state: string } }).intent.state).toBe('executed');
  });

  it('lets the merchant delete an archived endpoint permanently, as an admin_assistant grant may', async () => {
    const jane = as(human('jane@laptop'));
    const created = await jane({ operationId: 'createEndpoint', body: { triggerVariant: 'order', resourceIdPath: 'order.id' } });
    const endpointId = (created.body.data as { endpoint: { id: string } }).endpoint.id;
    const del = async (stage: string, key: string) => {
      const p = await jane({ operationId: 'createEndpointDeleteIntent', params: { endpointId }, body: { mode: 'preview', input: { stage } } });
      const intent = (p.body.data as { intent: { id: string; confirmation: { token: string } } }).intent;
      return jane({
        operationId: 'createEndpointDeleteIntent',
        params: { endpointId },
        body: { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token },
        idempotencyKey: key,
      });
    };
    expect((await del('archive', 'k-archive')).status).toBe(200);
    const permanent = await del('permanent', 'k-permanent');
    expect(permanent.body.refusal).toBeNull();
    expect(permanent.status).toBe(200);
  });

  it("limits each human by their own window: one human's full window neither limits another nor an agent's grant", async () => {
    await setUp({ ...DEFAULT_RATE_LIMITS, simple_read: { grant: 2, store: 100 } });
    const jane = as(human('jane@laptop'));
    expect((await jane({ operationId: 'getSetupState' })).status).toBe(200);
    expect((await jane({ operationId: 'getSetupState' })).status).toBe(200);
    const limited = await jane({ operationId: 'getSetupState' });
    expect(limited.status).toBe(429);
    expect(limited.body.scope).toBe('grant');
    expect((await as(human('bob@laptop'))({ operationId: 'getSetupState' })).status).toBe(200);
    expect((await asAgent('getSetupState')).status).toBe(200);
    const refused = await auditOf('req_seat');
    expect(refused.at(-2)).toMatchObject({ status: 429, actorKind: 'human', actorLabel: 'jane@laptop', grantId: null });
  });
});
