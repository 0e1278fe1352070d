import { beforeEach, describe, expect, it } from 'bun:test';
import type { Destination } from '../../src/platform/types.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { FLOW_TEMPLATES } from '../../src/contract/templates.ts';
import { ALERT_TRIGGER } from '../../src/contract/triggers.ts';
import { setPlan } from '../../src/ops/stores.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, execSql, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let token: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env, 'operator', { ttlMs: 86400_000 });
});

const actionsOf = async () =>
  (await call(env, 'GET', '/agent/v1/setup-state', { token })).json.data.nextRecommendedActions.map((a: { action: string }) => a.action);

describe('getSetupState', () => {
  it('guides a fresh store to its first endpoint', async () => {
    const r = await call(env, 'GET', '/agent/v1/setup-state', { token });
    expect(r.status).toBe(200);
    const d = r.json.data;
    expect(d.endpoints).toEqual([]);
    expect(d.triggerReadiness).toHaveLength(8);
    expect(d.triggerReadiness[0]).toEqual({ triggerVariant: 'generic', handle: 'hookrelay-generic', hasEnabledFlow: null, updatedAt: null });
    expect(d.checklist.find((c: { item: string }) => c.item === 'endpoint_created').done).toBe(false);
    expect(d.nextRecommendedActions[0]).toMatchObject({ action: 'create_endpoint', operationId: 'createEndpoint' });
  });

  it("ends its checklist with the app's ready workflows, done once Flow reports a workflow on the alert trigger", async () => {
    const last = async () => (await call(env, 'GET', '/agent/v1/setup-state', { token })).json.data.checklist.at(-1);
    const before = await last();
    expect(before).toMatchObject({ item: 'workflow_templates', done: false });
    for (const t of FLOW_TEMPLATES) expect(before.text).toContain(t.name);
    const store = (await env.core.repo.getStoreByShop('demo.myshopify.com'))!;
    await env.core.repo.setTriggerReadiness({ storeId: store.id, handle: ALERT_TRIGGER.handle, hasEnabledFlow: true, updatedAt: env.clock.now() });
    expect((await last()).done).toBe(true);
  });

  it('summarises endpoints without secrets and recommends a replacement after two failures within 30 minutes', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    await sendHook(env, endpoint, secret, orderEvent('ok-1'));
    await new HandoffWorker(env.core).drain();
    let r = await call(env, 'GET', '/agent/v1/setup-state', { token });
    expect(r.text).not.toContain(secret);
    expect(r.json.data.endpoints[0]).toMatchObject({
      id: endpoint.id,
      authMode: 'hmac_sha256',
      secretLast4: secret.slice(-4),
      lastReceipt: { outcome: 'delivered' },
    });
    expect(r.json.data.checklist.find((c: { item: string }) => c.item === 'first_delivered_event').done).toBe(true);

    env.clock.advance(60_000);
    await sendHook(env, endpoint, secret, orderEvent('x'), { auth: 'f'.repeat(64) });
    expect(await actionsOf()).not.toContain('create_replacement_endpoint');
    env.clock.advance(31 * 60_000);
    await sendHook(env, endpoint, secret, orderEvent('y'), { auth: null });
    expect(await actionsOf()).not.toContain('create_replacement_endpoint');
    env.clock.advance(29 * 60_000);
    await sendHook(env, endpoint, secret, orderEvent('z'), { auth: 'e'.repeat(64) });
    r = await call(env, 'GET', '/agent/v1/setup-state', { token });
    const replacement = r.json.data.nextRecommendedActions.find((a: { action: string }) => a.action === 'create_replacement_endpoint');
    expect(replacement.endpointId).toBe(endpoint.id);
    expect(replacement.text).toContain('stays active');
    expect(r.json.data.endpoints[0].status).toBe('active');

    await sendHook(env, endpoint, secret, orderEvent('fixed'));
    expect(await actionsOf()).not.toContain('create_replacement_endpoint');
  });

  it('recommends a replacement only for two consecutive failures: a request that authenticated between them resets the pair', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    expect((await sendHook(env, endpoint, secret, orderEvent('a'), { auth: 'f'.repeat(64) })).status).toBe(401);
    env.clock.advance(60_000);
    expect((await sendHook(env, endpoint, secret, orderEvent('b'))).status).toBe(202);
    env.clock.advance(60_000);
    expect((await sendHook(env, endpoint, secret, orderEvent('c'), { auth: null })).status).toBe(401);
    expect(await actionsOf()).not.toContain('create_replacement_endpoint');

    env.clock.advance(60_000);
    await sendHook(env, endpoint, secret, orderEvent('d'), { auth: 'e'.repeat(64) });
    expect(await actionsOf()).toContain('create_replacement_endpoint');
  });

  it('recommends a replacement for a fresh endpoint whose first two requests failed within 30 minutes', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    await sendHook(env, endpoint, secret, orderEvent('a'), { auth: null });
    expect(await actionsOf()).not.toContain('create_replacement_endpoint');
    env.clock.advance(29 * 60_000);
    await sendHook(env, endpoint, secret, orderEvent('b'), { auth: 'f'.repeat(64) });
    expect(await actionsOf()).toContain('create_replacement_endpoint');
  });
});

describe('getPlanUsage and getBillingHandoff', () => {
  it('publishes seven meters with limits, remaining and enforcement', async () => {
    await setPlan(env.core, 'demo.myshopify.com', 'free');
    const { endpoint, secret } = await createEndpoint(env, token);
    for (let i = 0; i < 3; i++) await sendHook(env, endpoint, secret, orderEvent(`u-${i}`));
    await call(env, 'GET', '/agent/v1/events', { token });
    const r = await call(env, 'GET', '/agent/v1/plan-usage', { token });
    const d = r.json.data;
    expect(d.plan).toBe('free');
    expect(d.meters.map((m: { meter: string }) => m.meter)).toEqual([
      'accepted_events',
      'diagnostics_shares',
      'replay_executions',
      'simple_reads',
      'rich_reads',
      'action_previews',
      'executed_actions',
    ]);
    const m = Object.fromEntries(d.meters.map((x: { meter: string }) => [x.meter, x]));
    expect(m.accepted_events).toMatchObject({ used: 3, limit: 500, remaining: 497, enforcement: 'ok' });
    expect(m.rich_reads.used).toBe(1);
    expect(m.simple_reads.limit).toBeNull();
    expect(d.canApproveCharges).toBe(false);
  });

  it('a store made by init has no caps: every meter counted and published, no limit, nothing held', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    await execSql(env, "INSERT INTO usage_counters (store_id, meter, period_start, used) SELECT id, 'accepted_events', created_at, 1000000 FROM stores");
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push(await sendHook(env, endpoint, secret, orderEvent(`nocap-${i}`)));
    expect(replies.map((r) => r.json.status)).toEqual(['accepted', 'accepted', 'accepted']);
    const d = (await call(env, 'GET', '/agent/v1/plan-usage', { token })).json.data;
    expect(d.plan).toBe('unlimited');
    expect(d.enforcement).toBe('ok');
    for (const m of d.meters) expect(m).toMatchObject({ limit: null, remaining: null, enforcement: 'ok' });
    expect(d.meters.find((m: { meter: string }) => m.meter === 'accepted_events').used).toBe(1_000_003);
    // Not a paid option: billing lists the capped plans only.
    const billing = (await call(env, 'GET', '/agent/v1/billing-handoff', { token })).json.data;
    expect(billing.currentPlan).toBe('unlimited');
    expect(billing.paidPlanOptions.map((p: { plan: string }) => p.plan)).toEqual(['starter', 'growth', 'scale']);
  });

  it('hands billing to a human without creating a charge', async () => {
    const r = await call(env, 'GET', '/agent/v1/billing-handoff', { token });
    expect(r.json.data.humanOnly).toBe(true);
    expect(r.json.data.appBillingUrl).toContain('admin.shopify.com/store/demo');
    expect(r.json.data.paidPlanOptions.map((p: { plan: string }) => p.plan)).toEqual(['starter', 'growth', 'scale']);
  });
});

describe('reliability health', () => {
  it('counts outcomes and auth failures, and degrades when handoffs fail', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    for (let i = 0; i < 4; i++) await sendHook(env, endpoint, secret, orderEvent(`r-${i}`));
    await sendHook(env, endpoint, secret, orderEvent('r-0'));
    await sendHook(env, endpoint, secret, '{"order":{}}');
    await sendHook(env, endpoint, secret, orderEvent('bad'), { auth: null });
    await new HandoffWorker(env.core).drain();
    const t = (await call(env, 'GET', '/agent/v1/reliability/tenant?window=1h', { token })).json.data;
    expect(t.counts).toMatchObject({ delivered: 4, duplicate: 1, rejected: 1, failed: 0 });
    expect(t.authFailuresByEndpoint).toEqual([{ endpointId: endpoint.id, count: 1 }]);
    expect(t.verdict).toBe('degraded');
    expect(t.handoffLatencyMs.p50).toBe(10); // histogram bound: the manual clock does not move, so 0 ms

    // Four more handed off and rejected by the platform: half the handoffs failed.
    const rejecting: Destination = { name: 'log', send: async () => ({ kind: 'failed', httpStatus: 200, errorClass: 'user_errors', message: 'no' }) };
    for (let i = 4; i < 8; i++) await sendHook(env, endpoint, secret, orderEvent(`r-${i}`));
    await new HandoffWorker(env.core, { log: rejecting, shopify: rejecting }).drain();
    const d = (await call(env, 'GET', '/agent/v1/reliability/destination', { token })).json.data;
    expect(d.counts).toMatchObject({ delivered: 4, failed: 4 });
    expect(d.destinationErrors.userErrors).toBe(4);
    expect(d.window).toBe('24h');
    expect(d.verdict).toBe('unhealthy');
    expect(d.authFailuresByEndpoint).toEqual([]);
    expect((await call(env, 'GET', '/agent/v1/reliability/tenant?window=2h', { token })).status).toBe(400);
  });
});
