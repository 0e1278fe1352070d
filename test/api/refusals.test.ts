/**
 * One test per refusal category, each through a real code path, plus the order of 429 and 402 and the 24-hour
 * life of an Idempotency-Key. Every refusal carries a reason and a recommended action, and is audited.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import type { RefusalCategory } from '../../src/contract/errors.ts';
import { acceptedCapacity } from '../../src/ops/usage.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let admin: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
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
    env.repo.sqlite.query("UPDATE endpoints SET status = 'archived' WHERE id = ?").run(endpoint.id);
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
