/**
 * One test per refusal category, each through a real code path, plus the order of 429 and 402 and the 24-hour
 * life of an Idempotency-Key. Every refusal carries a reason and a recommended action, and is audited.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import type { RefusalCategory } from '../../src/contract/errors.ts';
import { acceptedCapacity } from '../../src/contract/plans.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, execSql, executeIntent, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let admin: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env, { plan: 'free' }); // a capped plan: these tests reach its meters
  admin = await addGrant(env, 'admin_assistant', { ttlMs: 3 * 86400_000 });
});

/** Checks the refusal envelope and its audit row; returns the refusal. */
async function expectRefusal(r: Awaited<ReturnType<typeof call>>, status: number, category: RefusalCategory, code: string) {
  expect(r.status).toBe(status);
  expect(r.json.data).toBeUndefined();
  expect(r.json.refusal).toMatchObject({ category, code });
  expect(r.json.refusal.reason.length).toBeGreaterThan(10);
  expect(r.json.refusal.recommendedAction.length).toBeGreaterThan(10);
  const audit = await env.repo.listAudit({ limit: 500 });
  expect(audit.some((a) => a.outcome === 'refused' && a.refusalCategory === category && a.refusalCode === code)).toBe(true);
  return r.json.refusal;
}

async function eventOf(ext: string, body = orderEvent(ext)) {
  const { endpoint, secret } = await createEndpoint(env, admin);
  const sent = await sendHook(env, endpoint, secret, body);
  return { endpoint, secret, eventId: sent.json.eventId as string };
}

const replayPreview = (eventId: string, token = admin) =>
  call(env, 'POST', `/agent/v1/events/${eventId}/replay-intents`, { token, body: { mode: 'preview', input: {} } });

describe('refusal categories', () => {
  it('scope: a grant without the scope (403 insufficient_scope, missing scopes named)', async () => {
    const observer = await addGrant(env, 'observer');
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token: observer, body: { triggerVariant: 'order', resourceIdPath: 'order.id' } });
    await expectRefusal(r, 403, 'scope', 'missing_scope');
    expect(r.json.error.code).toBe('insufficient_scope');
    expect(r.json.error.details.missingScopes).toEqual(['endpoint:write']);
  });

  it('usage: a plan meter exhausted (402 plan_capacity_exhausted, with reset time)', async () => {
    const { eventId } = await eventOf('u1');
    await new HandoffWorker(env.core).drain();
    const store = (await env.repo.listStores())[0]!;
    await env.repo.addUsage(store.id, 'replay_executions', acceptedCapacity(store, env.clock.now()).periodStart, 25);
    const r = await replayPreview(eventId);
    await expectRefusal(r, 402, 'usage', 'replay_executions_exhausted');
    expect(r.json.error.code).toBe('plan_capacity_exhausted');
    expect(r.json.refusal.recommendedAction).toContain('billing-handoff');
  });

  it('target_state: an action the target is not in a state for (archived endpoint)', async () => {
    const { endpoint } = await createEndpoint(env, admin);
    await execSql(env, "UPDATE endpoints SET status = 'archived' WHERE id = ?", endpoint.id);
    const r = await call(env, 'POST', `/agent/v1/endpoints/${endpoint.id}/edit-intents`, { token: admin, body: { mode: 'preview', input: { name: 'x' } } });
    await expectRefusal(r, 403, 'target_state', 'endpoint_archived');
  });

  it('safety: replaying a request that failed authentication', async () => {
    const { endpoint, secret } = await createEndpoint(env, admin);
    await sendHook(env, endpoint, secret, orderEvent('bad'), { auth: 'f'.repeat(64) });
    const failure = (await env.repo.listAuthFailures((await env.repo.listStores())[0]!.id))[0]!;
    await expectRefusal(await replayPreview(failure.id), 403, 'safety', 'auth_failure_not_replayable');
  });

  it('product_boundary: a test receipt is never handed to the workflow platform', async () => {
    const { eventId } = await eventOf('t', JSON.stringify({ event_type: 'test', external_event_id: 'hookrelay_test_abc' }));
    await expectRefusal(await replayPreview(eventId), 403, 'product_boundary', 'test_event');
  });

  it('human_only: minting a grant and approving a charge are for humans (403, not 405)', async () => {
    const mint = await call(env, 'POST', '/agent/v1/grant', { token: admin, body: { tier: 'admin_assistant' } });
    await expectRefusal(mint, 403, 'human_only', 'grant_minting_human_only');
    expect(mint.json.error.code).toBe('action_refused');
    expect(mint.json.refusal.recommendedAction).toContain('hookrelay grant issue');

    const approve = await call(env, 'POST', '/agent/v1/billing-handoff', { token: admin, body: { plan: 'growth' } });
    await expectRefusal(approve, 403, 'human_only', 'billing_approval_human_only');
    expect((await env.repo.listStores())[0]!.plan).toBe('free');

    // Still a grant-authenticated route: no token, no refusal detail.
    expect((await call(env, 'POST', '/agent/v1/grant')).status).toBe(401);
    // Other methods stay 405.
    expect((await call(env, 'DELETE', '/agent/v1/grant', { token: admin })).status).toBe(405);
  });

  it('edition: an endpoint for a platform outside this edition', async () => {
    const body = { triggerVariant: 'order', resourceIdPath: 'order.id' };
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token: admin, body: { ...body, platformKey: 'bigcommerce' } });
    await expectRefusal(r, 403, 'edition', 'platform_outside_edition');
    expect(r.json.refusal.recommendedAction).toContain('expansion-requests');
    expect((await call(env, 'POST', '/agent/v1/endpoints', { token: admin, body: { ...body, platformKey: 'shopify' } })).status).toBe(201);
  });
});

describe('429 before 402', () => {
  it('checks the rate limit first; a refused call still spends rate budget but never the meter', async () => {
    const { eventId } = await eventOf('order');
    await new HandoffWorker(env.core).drain();
    const store = (await env.repo.listStores())[0]!;
    const periodStart = acceptedCapacity(store, env.clock.now()).periodStart;
    await env.repo.addUsage(store.id, 'replay_executions', periodStart, 25);
    const operator = await addGrant(env, 'recovery_operator');

    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await replayPreview(eventId, operator)).status);
    // recovery previews: 20 per minute per grant; all 20 inside the budget are refused for usage.
    expect(statuses).toEqual([...Array(20).fill(402), 429]);
    const limited = await replayPreview(eventId, operator);
    expect(limited.status).toBe(429);
    expect(limited.json.error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    env.clock.advance(60_000);
    expect((await replayPreview(eventId, operator)).status).toBe(402);
    const used = await env.repo.getUsage(store.id, periodStart);
    expect(used.action_previews ?? 0).toBe(0);
    expect(used.replay_executions).toBe(25);
  });
});

describe('Idempotency-Key lifetime', () => {
  const expansion = (summary: string, key: string) =>
    call(env, 'POST', '/agent/v1/expansion-requests', { token: admin, headers: { 'Idempotency-Key': key }, body: { kind: 'multi_store', summary } });

  it('replays for 24 hours, then the key is free again (no replay, no 422)', async () => {
    const first = await expansion('two stores', 'k-24h');
    expect(first.status).toBe(201);
    env.clock.advance(24 * 3600_000 - 1);
    const within = await expansion('two stores', 'k-24h');
    expect(within.headers.get('idempotent-replayed')).toBe('true');
    expect(within.json.data.request.id).toBe(first.json.data.request.id);
    expect((await expansion('three stores', 'k-24h')).status).toBe(422);

    env.clock.advance(2);
    // Past 24 h the key binds to whatever request uses it next, even a different one.
    const after = await expansion('three stores', 'k-24h');
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(after.json.data.request.id).not.toBe(first.json.data.request.id);
    expect((await expansion('two stores', 'k-24h')).status).toBe(422);
  });
});

describe('every refusal an agent can act on carries its refusal object', () => {
  it('403 agent_context_mismatch: scope refusal naming the header to fix', async () => {
    const r = await call(env, 'GET', '/agent/v1/grant', { token: admin, headers: { 'X-Service-Expected-Shop-Domain': 'other.myshopify.com' } });
    await expectRefusal(r, 403, 'scope', 'expected_context_mismatch');
    expect(r.json.error.code).toBe('agent_context_mismatch');
    expect(r.json.refusal.recommendedAction).toContain('X-Service-Expected-');
  });

  it('409 conflict: a spent, a mismatched and an expired confirmation each say which', async () => {
    const { eventId } = await eventOf('c1');
    await new HandoffWorker(env.core).drain();
    const path = `/agent/v1/events/${eventId}/replay-intents`;
    const intent = (await replayPreview(eventId)).json.data.intent;
    expect((await executeIntent(env, admin, path, intent, 'c-1')).status).toBe(200);
    const spent = await executeIntent(env, admin, path, intent, 'c-2');
    await expectRefusal(spent, 409, 'target_state', 'intent_not_previewed');
    expect(spent.json.error.code).toBe('conflict');
    expect(spent.json.refusal.reason).toBe(spent.json.error.message);

    const support = '/agent/v1/support-request-intents';
    const supportPreview = async () =>
      (await call(env, 'POST', support, { token: admin, body: { mode: 'preview', input: { category: 'other', urgency: 'low', summary: 'hello' } } })).json.data
        .intent;
    const fresh = await supportPreview();
    await expectRefusal(
      await executeIntent(env, admin, support, { ...fresh, confirmation: { token: 'cfm_wrong' } }, 'c-3'),
      409,
      'target_state',
      'confirmation_mismatch',
    );
    const late = await supportPreview();
    env.clock.advance(15 * 60_000);
    await expectRefusal(await executeIntent(env, admin, support, late, 'c-4'), 409, 'target_state', 'confirmation_expired');
  });

  it('409 conflict: a test intent for an archived endpoint', async () => {
    const { endpoint } = await createEndpoint(env, admin);
    await execSql(env, "UPDATE endpoints SET status = 'archived' WHERE id = ?", endpoint.id);
    const r = await call(env, 'POST', `/agent/v1/endpoints/${endpoint.id}/test-intents`, { token: admin, body: {} });
    await expectRefusal(r, 409, 'target_state', 'endpoint_archived');
  });

  it('422 idempotency_key_reused: a safety refusal that says how to retry', async () => {
    const send = (summary: string) =>
      call(env, 'POST', '/agent/v1/expansion-requests', { token: admin, headers: { 'Idempotency-Key': 'k-422' }, body: { kind: 'multi_store', summary } });
    expect((await send('two stores')).status).toBe(201);
    const r = await send('three stores');
    await expectRefusal(r, 422, 'safety', 'idempotency_key_reused');
    expect(r.json.refusal.recommendedAction).toContain('new Idempotency-Key');
  });

  it('429 rate_limited: a usage refusal with the same wait as Retry-After', async () => {
    const observer = await addGrant(env, 'observer');
    let r = await call(env, 'GET', '/agent/v1/grant', { token: observer });
    for (let i = 0; i < 200 && r.status !== 429; i++) r = await call(env, 'GET', '/agent/v1/grant', { token: observer });
    expect(r.status).toBe(429);
    expect(r.json.refusal).toMatchObject({ category: 'usage', code: 'rate_limited' });
    expect(r.json.refusal.reason).toBe(r.json.error.message);
    expect(r.json.refusal.recommendedAction).toBe(r.json.recommendedAction);
    expect(r.json.refusal.recommendedAction).toContain(`Wait ${r.headers.get('retry-after')} seconds`);
  });
});
