/** Retention: raw bodies are deleted once past their retention; the receipt outlives its body. */
import { describe, expect, it } from 'bun:test';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, orderEvent, sendHook } from '../helpers.ts';

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
    const ack = await call(env, 'POST', '/agent/v1/expansion-requests', { token, headers: { 'Idempotency-Key': 'k1' }, body: { kind: 'multi_store', summary: 'two' } });
    expect(ack.status).toBe(201);

    // Nothing is due yet: a sweep now deletes nothing.
    expect(await worker.sweep()).toEqual({ bodies: 0, idempotencyKeys: 0 });
    expect(await env.repo.getEventBody(eventId)).not.toBeNull();

    env.clock.advance(env.core.config.bodyRetentionMs + 1);
    expect(await worker.sweep()).toEqual({ bodies: 1, idempotencyKeys: 1 });
    expect(await env.repo.getEventBody(eventId)).toBeNull();
    expect(await count(env, 'idempotency_keys')).toBe(0);
    expect(env.log.lines.join('\n')).toContain('deleted 1 raw bodies');

    const event = (await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event;
    expect(event).toMatchObject({ id: eventId, outcome: 'delivered', bodyRetention: 'expired', replayable: false });
  });
});
