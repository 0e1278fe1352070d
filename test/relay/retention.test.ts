/** Retention: raw bodies are deleted once past their retention; the receipt outlives its body. */
import { describe, expect, it } from 'bun:test';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, executeIntent, orderEvent, row, sendHook } from '../helpers.ts';

const DAY = 86400_000;

describe('retention sweep', () => {
  it('deletes raw bodies past retention and day-old idempotency keys; receipts stay readable', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const token = await addGrant(env, 'admin_assistant', { ttlMs: 40 * DAY });
    const { endpoint, secret } = await createEndpoint(env, token);
    const eventId = (await sendHook(env, endpoint, secret, orderEvent('kept'))).json.eventId as string;
    const worker = new HandoffWorker(env.core);
    await worker.drain();
    const ack = await call(env, 'POST', '/agent/v1/expansion-requests', {
      token,
      headers: { 'Idempotency-Key': 'k1' },
      body: { kind: 'multi_store', summary: 'two' },
    });
    expect(ack.status).toBe(201);

    // Nothing is due yet: a sweep now deletes nothing.
    expect(await worker.sweep()).toMatchObject({ bodies: 0, idempotencyKeys: 0 });
    expect(await env.repo.getEventBody(eventId)).not.toBeNull();

    env.clock.advance(env.core.config.bodyRetentionMs + 1);
    expect(await worker.sweep()).toMatchObject({ bodies: 1, idempotencyKeys: 1 });
    expect(await env.repo.getEventBody(eventId)).toBeNull();
    expect(await count(env, 'idempotency_keys')).toBe(0);
    expect(env.log.lines.join('\n')).toContain('deleted 1 raw bodies');

    const event = (await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event;
    expect(event).toMatchObject({ id: eventId, outcome: 'delivered', bodyRetention: 'expired', replayable: false });
  });
});

describe('a shorter body retention', () => {
  it('reaches bodies already stored under the longer one, and those stored after them; a body inside the new retention stays', async () => {
    const env = await createTestEnv({ bodyRetentionMs: 30 * DAY });
    await addStore(env);
    const token = await addGrant(env, 'admin_assistant', { ttlMs: 40 * DAY });
    const { endpoint, secret } = await createEndpoint(env, token);
    const worker = new HandoffWorker(env.core);
    const old = (await sendHook(env, endpoint, secret, orderEvent('stored-under-30d'))).json.eventId as string;
    // The operator lowers retention.bodies to 1d (a restart with the new setting).
    env.core.config.bodyRetentionMs = DAY;
    env.clock.advance(60 * 60_000);
    const next = (await sendHook(env, endpoint, secret, orderEvent('stored-under-1d'))).json.eventId as string;
    await worker.drain();
    env.clock.advance(2 * DAY);
    const recent = (await sendHook(env, endpoint, secret, orderEvent('recent'))).json.eventId as string;
    await worker.drain();

    expect(await worker.sweep()).toMatchObject({ bodies: 2 });
    expect(await env.repo.getEventBody(old)).toBeNull();
    expect(await env.repo.getEventBody(next)).toBeNull();
    expect(await env.repo.getEventBody(recent)).not.toBeNull();
    expect(await count(env, 'event_bodies')).toBe(1);
    const event = (await call(env, 'GET', `/agent/v1/events/${old}`, { token })).json.data.event;
    expect(event).toMatchObject({ id: old, bodyRetention: 'expired', replayable: false });
  });
});

describe('retention of every kind of row', () => {
  it('sweeps ended events and their attempts, audit rows, ended intents, requests and failed authentications past their time; never an event still waiting', async () => {
    const retention = { events: 3 * DAY, audit: 2 * DAY, intents: 2 * DAY, requests: 2 * DAY, authFailures: 2 * DAY };
    const env = await createTestEnv({ bodyRetentionMs: DAY, retention });
    await addStore(env);
    const token = await addGrant(env, 'admin_assistant', { ttlMs: 40 * DAY });
    const { endpoint, secret } = await createEndpoint(env, token);
    const worker = new HandoffWorker(env.core);
    const delivered = (await sendHook(env, endpoint, secret, orderEvent('old-delivered'))).json.eventId as string;
    await worker.drain();
    expect((await sendHook(env, endpoint, 'whsec_wrong', orderEvent('bad'))).status).toBe(401);
    const preview = (await call(env, 'POST', `/agent/v1/events/${delivered}/replay-intents`, { token, body: { mode: 'preview', input: {} } })).json.data.intent;
    expect((await executeIntent(env, token, `/agent/v1/events/${delivered}/replay-intents`, preview, 'k-replay')).status).toBe(200);
    await worker.drain();
    expect((await call(env, 'POST', '/agent/v1/feature-requests', { token, body: { capability: 'a wish', problem: 'x' } })).status).toBeLessThan(300);
    // Received last and never handed off (no drain): it waits, and must outlive any retention.
    const waiting = (await sendHook(env, endpoint, secret, orderEvent('waiting'))).json.eventId as string;
    const before = {
      events: await count(env, 'events'),
      attempts: await count(env, 'attempts'),
      audit: await count(env, 'audit_log'),
      intents: await count(env, 'intents'),
      records: await count(env, 'records'),
      authFailures: await count(env, 'auth_failures'),
    };
    expect(before).toMatchObject({ events: 2, attempts: 2, intents: 1, records: 1, authFailures: 1 });
    expect(before.audit).toBeGreaterThan(2);

    // Within every retention: nothing goes.
    env.clock.advance(DAY + 60_000);
    const early = await worker.sweep();
    expect(early).toMatchObject({ events: 0, attempts: 0, audit: 0, intents: 0, requests: 0, authFailures: 0 });

    // Past them all: everything that ended goes; the waiting event stays, with its body still counted as its own.
    env.clock.advance(3 * DAY);
    const swept = await worker.sweep();
    expect(swept).toMatchObject({ events: 1, attempts: 2, audit: before.audit, intents: 1, requests: 1, authFailures: 1 });
    expect(await row(env, 'SELECT id FROM events WHERE id = ?', delivered)).toBeNull();
    expect((await row<{ outcome: string }>(env, 'SELECT outcome FROM events WHERE id = ?', waiting))?.outcome).toBe('accepted');
    expect(env.log.lines.join('\n')).toContain('retention: deleted 1 events, 2 attempts');
    expect(await worker.sweep()).toMatchObject({ events: 0, audit: 0, intents: 0, requests: 0, authFailures: 0 });
  });
});
