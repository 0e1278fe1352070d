/**
 * createBulkReplayIntent over HTTP: the preview counts and binds, the execute runs once per key and meters one replay
 * execution, outcomes a single replay refuses are refused the same way, and the limits hold.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { BULK_REPLAY_MAX_EVENTS } from '../../src/contract/limits.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { b, fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import {
  addGrant,
  addStore,
  call,
  count,
  createEndpoint,
  createTestEnv,
  eventRow,
  execSql,
  executeIntent,
  orderEvent,
  sendHook,
  type TestEnv,
} from '../helpers.ts';

const SHOP_TOKEN = 'shpat_bulk_replay_test';
const fake = fakeShopifyForFile({ token: SHOP_TOKEN });

const PATH = '/agent/v1/replay-intents';
const HOUR = 3600_000;

let env: TestEnv;
let token: string;
let endpoint: { id: string; auth: { headerName: string; mode: string } };
let secret: string;

beforeEach(async () => {
  env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => (n === 'SHOP_TOKEN' ? SHOP_TOKEN : undefined) });
  await addStore(env, { plan: 'free', destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' }); // capped: the replay meter counts
  token = await addGrant(env, 'recovery_operator');
  ({ endpoint, secret } = await createEndpoint(env, token));
});

let sent = 0;
/** Sends `n` events that Flow refuses with userErrors, hands them off, and returns their ids (oldest first). */
async function failedEvents(n: number): Promise<string[]> {
  fake.script(...Array.from({ length: n }, () => b.userErrors({ field: null, message: 'Flow refused it' })));
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await sendHook(env, endpoint, secret, orderEvent(`bulk-${++sent}`))).json.eventId);
  await drain();
  return ids;
}

const drain = () => new HandoffWorker(env.core).drain();
const preview = (input: unknown, tk = token) => call(env, 'POST', PATH, { token: tk, body: { mode: 'preview', input } });
const event = async (id: string) => (await call(env, 'GET', `/agent/v1/events/${id}`, { token })).json.data.event;
const replayMeter = async () =>
  (await call(env, 'GET', '/agent/v1/plan-usage', { token })).json.data.meters.find((m: { meter: string }) => m.meter === 'replay_executions').used as number;
const executions = async () =>
  (await env.repo.listAudit({ limit: 500 })).filter((a) => a.operationId === 'createBulkReplayIntent' && a.transition === 'executed');

describe('createBulkReplayIntent', () => {
  it('previews the count, a sample, the window and the cost, changing nothing; execute queues them all as one replay', async () => {
    const ids = await failedEvents(3);
    env.clock.advance(60_000);
    const expired = (await failedEvents(1))[0]!;
    await execSql(env, "UPDATE events SET body_retention = 'expired' WHERE id = ?", expired);
    await sendHook(env, endpoint, secret, orderEvent(`bulk-${++sent}`)); // delivered: another outcome
    await drain();
    expect((await event(ids[0]!)).outcome).toBe('failed');

    const since = new Date(env.clock.now() - 2 * HOUR).toISOString();
    const p = await preview({ reason: 'Flow workflow fixed', filter: { since } });
    expect(p.status).toBe(201);
    const intent = p.json.data.intent;
    expect(intent).toMatchObject({ kind: 'bulk_replay', state: 'previewed', targetId: null });
    const { selection } = intent.preview;
    expect(selection).toMatchObject({
      filter: { outcome: 'failed', since },
      count: 3,
      excluded: { bodyNotRetained: 1 },
      throughEventId: ids[2],
      asOf: new Date(env.clock.now()).toISOString(),
    });
    expect(selection.sample.map((e: { id: string }) => e.id)).toEqual(ids);
    expect(selection.sample[0]).toEqual({
      id: ids[0],
      endpointId: endpoint.id,
      outcome: 'failed',
      code: 'SVC_HANDOFF_REJECTED',
      receivedAt: expect.any(String),
    });
    expect(selection.window.oldestReceivedAt <= selection.window.newestReceivedAt).toBe(true);
    expect(intent.preview.meterCost).toEqual([
      { meter: 'replay_executions', units: 1 },
      { meter: 'executed_actions', units: 1 },
    ]);
    expect(intent.preview.warnings.join(' ')).toContain('1 matching event no longer has its raw body');
    expect(intent.preview.sideEffects.join(' ')).toContain('Duplicate suppression is bypassed');
    for (const id of ids) expect((await event(id)).outcome).toBe('failed');
    expect(await replayMeter()).toBe(0);

    const x = await executeIntent(env, token, PATH, intent, 'bulk-1');
    expect(x.status).toBe(200);
    expect(x.json.data.intent.state).toBe('executed');
    expect(x.json.data.intent.result).toMatchObject({ queued: 3, skipped: 0, resourceId: null });
    for (const id of ids) expect((await event(id)).outcome).toBe('queued');
    expect((await event(expired)).outcome).toBe('failed');
    expect(await replayMeter()).toBe(1);
    expect(await executions()).toHaveLength(1);
    expect((await executions())[0]!.targetId).toBeNull();

    await drain(); // the fake answers ok now
    for (const id of ids) expect(await event(id)).toMatchObject({ outcome: 'delivered', attempts: 2 });
  });

  it('binds what the preview showed: an event failing after it is not replayed, one replayed singly meanwhile is skipped', async () => {
    const [a, bb, c] = await failedEvents(3);
    const p = (await preview({ filter: { outcome: 'failed' } })).json.data.intent;
    expect(p.preview.selection.count).toBe(3);
    expect(p.preview.warnings.join(' ')).toContain('No reason given');

    env.clock.advance(1000);
    const later = (await failedEvents(1))[0]!; // received and failed after the preview
    // a: replayed singly and failed again; b: replayed singly, still waiting for its handoff.
    for (const [id, key] of [
      [a!, 'single-a'],
      [bb!, 'single-b'],
    ] as const) {
      const single = (await call(env, 'POST', `/agent/v1/events/${id}/replay-intents`, { token, body: { mode: 'preview', input: {} } })).json.data.intent;
      expect((await executeIntent(env, token, `/agent/v1/events/${id}/replay-intents`, single, key)).status).toBe(200);
      if (id === a) {
        fake.script(b.userErrors({ field: null, message: 'again' }));
        await drain();
      }
    }
    expect(await event(a!)).toMatchObject({ outcome: 'failed', attempts: 2 });
    expect((await event(bb!)).outcome).toBe('queued');

    const x = await executeIntent(env, token, PATH, p, 'bind-1');
    expect(x.status).toBe(200);
    expect(x.json.data.intent.result).toMatchObject({ queued: 1, skipped: 2 });
    expect(x.json.data.intent.result.summary).toContain('2 of the 3 previewed left alone');
    expect((await event(c!)).outcome).toBe('queued');
    expect(await event(a!)).toMatchObject({ outcome: 'failed', attempts: 2 });
    expect((await event(later)).outcome).toBe('failed');
  });

  it('executes once per Idempotency-Key under concurrency: one requeue, the meter +1, one executed audit row', async () => {
    const ids = await failedEvents(4);
    const intent = (await preview({ reason: 'outage', filter: {} })).json.data.intent;
    const replies = await Promise.all([1, 2, 3, 4, 5].map(() => executeIntent(env, token, PATH, intent, 'race')));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(replies.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(4);
    for (const r of replies) expect(r.json.data.intent.result).toMatchObject({ queued: 4, skipped: 0 });
    expect(await replayMeter()).toBe(1);
    expect(await executions()).toHaveLength(1);
    const before = await count(env, 'attempts');
    await drain();
    expect(await count(env, 'attempts')).toBe(before + ids.length); // one more attempt each, not five
    expect(fake.requests.length).toBe(ids.length * 2);

    // Another key on the spent intent: 409, nothing more queued or metered.
    const again = await executeIntent(env, token, PATH, intent, 'race-2');
    expect(again.status).toBe(409);
    expect(await replayMeter()).toBe(1);
  });

  it('refuses outcomes a single replay refuses, with the same refusal', async () => {
    const rejected = (await sendHook(env, endpoint, secret, '{"order":{"id":"x"}}')).json.eventId;
    const single = await call(env, 'POST', `/agent/v1/events/${rejected}/replay-intents`, { token, body: { mode: 'preview', input: {} } });
    const bulk = await preview({ filter: { outcome: 'rejected' } });
    expect(bulk.status).toBe(403);
    expect(bulk.json.refusal).toEqual(single.json.refusal);
    expect(bulk.json.refusal).toMatchObject({ category: 'target_state', code: 'event_rejected' });

    const test = await preview({ filter: { outcome: 'test' } });
    expect(test.status).toBe(403);
    expect(test.json.refusal).toMatchObject({ category: 'product_boundary', code: 'test_event' });
    for (const [outcome, code] of [
      ['duplicate_suppressed', 'duplicate_event'],
      ['held', 'held_for_capacity'],
      ['accepted', 'handoff_in_progress'],
      ['queued', 'handoff_in_progress'],
    ]) {
      expect((await preview({ filter: { outcome } })).json.refusal.code).toBe(code);
    }
    expect(await count(env, 'intents')).toBe(0);
  });

  it('refuses a filter that matches nothing (target_state nothing_to_replay) and validates the window', async () => {
    await failedEvents(1);
    const none = await preview({ filter: { outcome: 'no_workflow' } });
    expect(none.status).toBe(403);
    expect(none.json.refusal).toMatchObject({ category: 'target_state', code: 'nothing_to_replay' });
    const otherEndpoint = await preview({ filter: { endpointId: 'ep_0000000000' } });
    expect(otherEndpoint.json.refusal.code).toBe('nothing_to_replay');
    const otherCode = await preview({ filter: { code: 'SVC_HANDOFF_RETRY_EXHAUSTED' } });
    expect(otherCode.json.refusal.code).toBe('nothing_to_replay');
    const future = new Date(env.clock.now() + HOUR).toISOString();
    expect((await preview({ filter: { since: future } })).json.refusal.code).toBe('nothing_to_replay');

    const inverted = await preview({ filter: { since: future, until: new Date(env.clock.now()).toISOString() } });
    expect(inverted.status).toBe(400);
    expect(inverted.json.error.details[0].path).toContain('until');
    expect((await preview({})).status).toBe(400); // the filter is required, even empty
  });

  it(`refuses more than ${BULK_REPLAY_MAX_EVENTS} events with where to split the window`, async () => {
    const store = (await env.repo.listStores())[0]!;
    const t0 = env.clock.now() - HOUR;
    const receipts = Array.from({ length: BULK_REPLAY_MAX_EVENTS + 1 }, (_, i) => ({
      event: eventRow({
        id: `evt_${(t0 + i).toString(32).padStart(10, '0')}${'0'.repeat(16)}`,
        storeId: store.id,
        endpointId: endpoint.id,
        receivedAt: t0 + i,
        outcome: 'failed',
        code: 'SVC_HANDOFF_RETRY_EXHAUSTED',
        attempts: 1,
        lastAttemptAt: t0 + i,
        nextAttemptAt: null,
      }),
      body: null,
      bodyExpiresAt: t0 + i + 30 * 86400_000,
      dedupeSince: null,
    }));
    await env.repo.commitIngest(receipts, []);
    const r = await preview({ filter: {} });
    expect(r.status).toBe(403);
    expect(r.json.refusal).toMatchObject({ category: 'safety', code: 'bulk_replay_too_many' });
    expect(r.json.refusal.recommendedAction).toContain('Narrow the filter');
    const { suggestedUntil, count: matched } = r.json.error.details;
    expect(matched).toBe(BULK_REPLAY_MAX_EVENTS + 1);
    expect(suggestedUntil).toBe(new Date(t0 + BULK_REPLAY_MAX_EVENTS).toISOString());
    const narrowed = await preview({ filter: { until: suggestedUntil } });
    expect(narrowed.status).toBe(201);
    expect(narrowed.json.data.intent.preview.selection.count).toBe(BULK_REPLAY_MAX_EVENTS);
  });

  it('needs replay:execute (an operator grant is refused, 403) and plan capacity (402)', async () => {
    await failedEvents(1);
    const operator = await addGrant(env, 'operator');
    const o = await preview({ filter: {} }, operator);
    expect(o.status).toBe(403);
    expect(o.json.error.code).toBe('insufficient_scope');
    expect(o.json.error.details.missingScopes).toEqual(['replay:execute']);

    const store = (await env.repo.listStores())[0]!;
    const usage = (await call(env, 'GET', '/agent/v1/plan-usage', { token })).json.data;
    await env.repo.addUsage(store.id, 'replay_executions', Date.parse(usage.periodStart), 25);
    const capped = await preview({ filter: {} });
    expect(capped.status).toBe(402);
    expect(capped.json.refusal).toMatchObject({ category: 'usage', code: 'replay_executions_exhausted' });
  });

  it('executes a bulk intent only through its own operation', async () => {
    const [id] = await failedEvents(1);
    const intent = (await preview({ filter: {} })).json.data.intent;
    const wrong = await executeIntent(env, token, `/agent/v1/events/${id}/replay-intents`, intent, 'wrong-op');
    expect(wrong.status).toBe(404);
    expect((await executeIntent(env, token, PATH, intent, 'right-op')).status).toBe(200);
  });
});
