/**
 * Inbound events over plan capacity are `held`: acknowledged, stored with their body, never dropped and never
 * handed off until capacity returns (a bigger plan, or the next 30-day period).
 */
import { describe, expect, it } from 'bun:test';
import { acceptedCapacity, PERIOD_MS } from '../../src/contract/plans.ts';
import { setPlan } from '../../src/ops/stores.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

async function setup() {
  const env = await createTestEnv();
  const store = await addStore(env, { plan: 'free' }); // 500 accepted events, no grace
  const token = await addGrant(env, 'admin_assistant', { ttlMs: 40 * 86400_000 }); // outlives a period change
  const { endpoint, secret } = await createEndpoint(env, token);
  const worker = new HandoffWorker(env.core);
  return { env, store, token, endpoint, secret, worker };
}

/** Puts `used` accepted events on the store's current meter without sending them. */
async function useUp(env: TestEnv, storeId: string, used: number) {
  const store = (await env.repo.getStore(storeId))!;
  await env.repo.addUsage(storeId, 'accepted_events', acceptedCapacity(store, env.clock.now()).periodStart, used);
}

async function meter(env: TestEnv, token: string) {
  const usage = (await call(env, 'GET', '/agent/v1/plan-usage', { token })).json.data;
  return usage.meters.find((m: { meter: string }) => m.meter === 'accepted_events');
}

async function outcomes(env: TestEnv, token: string) {
  const events = (await call(env, 'GET', '/agent/v1/events?limit=100', { token })).json.data.events as { id: string; outcome: string }[];
  return Object.fromEntries(events.map((e) => [e.id, e.outcome]));
}

describe('held events', () => {
  it('acknowledges events past the limit as held (202), keeps their bodies and does not hand them off', async () => {
    const { env, store, token, endpoint, secret, worker } = await setup();
    await useUp(env, store.storeId, 498);

    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await sendHook(env, endpoint, secret, orderEvent(`ext-${i}`)));
    expect(replies.map((r) => r.status)).toEqual([202, 202, 202, 202]);
    expect(replies.map((r) => r.json.status)).toEqual(['accepted', 'accepted', 'held', 'held']);

    const held = (await call(env, 'GET', `/agent/v1/events/${replies[2]!.json.eventId}`, { token })).json.data.event;
    expect(held).toMatchObject({ outcome: 'held', code: 'SVC_OVER_CAPACITY', bodyRetention: 'retained', replayable: false });
    expect(await env.repo.getEventBody(replies[3]!.json.eventId)).not.toBeNull();
    expect(await meter(env, token)).toMatchObject({ used: 500, limit: 500, remaining: 0, enforcement: 'exhausted' });

    await worker.drain();
    const o = await outcomes(env, token);
    expect([o[replies[0]!.json.eventId], o[replies[1]!.json.eventId]]).toEqual(['delivered', 'delivered']);
    expect([o[replies[2]!.json.eventId], o[replies[3]!.json.eventId]]).toEqual(['held', 'held']);

    const replay = await call(env, 'POST', `/agent/v1/events/${replies[2]!.json.eventId}/replay-intents`, { token, body: { mode: 'preview', input: {} } });
    expect(replay.status).toBe(403);
    expect(replay.json.refusal).toMatchObject({ category: 'target_state', code: 'held_for_capacity' });
  });

  it('decides inside the commit: of concurrent events, exactly the remaining capacity is accepted', async () => {
    const { env, store, token, endpoint, secret } = await setup();
    await useUp(env, store.storeId, 497);
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => sendHook(env, endpoint, secret, orderEvent(`burst-${i}`))));
    expect(replies.every((r) => r.status === 202)).toBe(true);
    const statuses = replies.map((r) => r.json.status).sort();
    expect(statuses).toEqual([...Array(3).fill('accepted'), ...Array(7).fill('held')]);
    expect((await meter(env, token)).used).toBe(500);
    expect(Object.keys(await outcomes(env, token))).toHaveLength(10); // none dropped
  });

  it('flow again, oldest first, when a bigger plan gives room', async () => {
    const { env, store, token, endpoint, secret, worker } = await setup();
    await useUp(env, store.storeId, 500);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await sendHook(env, endpoint, secret, orderEvent(`wait-${i}`))).json.eventId as string);
    await worker.drain();
    expect(Object.values(await outcomes(env, token))).toEqual(['held', 'held', 'held']);

    await setPlan(env.core, 'demo.myshopify.com', 'starter');
    await worker.drain();
    const o = await outcomes(env, token);
    expect(ids.map((id) => o[id])).toEqual(['delivered', 'delivered', 'delivered']);
    expect(await meter(env, token)).toMatchObject({ used: 503, limit: 25_000, enforcement: 'ok' });
    expect(env.log.lines.join('\n')).toContain('released 3 held events');
  });

  it('flow again in the next 30-day period, counted against that period, up to its capacity', async () => {
    const { env, store, token, endpoint, secret, worker } = await setup();
    await useUp(env, store.storeId, 500);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await sendHook(env, endpoint, secret, orderEvent(`next-${i}`))).json.eventId as string);

    // The next period has room for only two of them.
    const next = (await env.repo.getStore(store.storeId))!;
    await env.repo.addUsage(store.storeId, 'accepted_events', acceptedCapacity(next, env.clock.now()).periodStart + PERIOD_MS, 498);
    env.clock.advance(PERIOD_MS);
    await worker.drain();
    const o = await outcomes(env, token);
    expect(ids.map((id) => o[id])).toEqual(['delivered', 'delivered', 'held']);
    expect((await meter(env, token)).used).toBe(500);
  });

  it('are looked for with one statement over every store: only the stores holding events are released, and none once they flow', async () => {
    const { env, store, token, endpoint, secret, worker } = await setup();
    // Stores holding nothing (a hosted deployment's thousands of quiet ones) are not among those released.
    for (let i = 0; i < 5; i++) await addStore(env, { shopDomain: `quiet-${i}.myshopify.com`, plan: 'free' });
    expect(await env.repo.storesWithHeld()).toEqual([]);
    await useUp(env, store.storeId, 500);
    await sendHook(env, endpoint, secret, orderEvent('waits'));
    expect(await env.repo.storesWithHeld()).toEqual([store.storeId]);

    await setPlan(env.core, 'demo.myshopify.com', 'starter');
    expect(await worker.releaseHeld()).toBe(1);
    expect(await env.repo.storesWithHeld()).toEqual([]);
    expect(Object.values(await outcomes(env, token))).toEqual(['accepted']);
  });

  it('rejected, duplicate and test receipts do not use capacity', async () => {
    const { env, store, token, endpoint, secret } = await setup();
    await useUp(env, store.storeId, 499);
    expect((await sendHook(env, endpoint, secret, '{"order":{}}')).status).toBe(422);
    expect((await sendHook(env, endpoint, secret, JSON.stringify({ external_event_id: 'hookrelay_test_1', event_type: 't' }))).json.status).toBe('test');
    expect((await sendHook(env, endpoint, secret, orderEvent('once'))).json.status).toBe('accepted');
    expect((await sendHook(env, endpoint, secret, orderEvent('once'))).json.status).toBe('duplicate_suppressed');
    expect((await meter(env, token)).used).toBe(500);
  });
});
