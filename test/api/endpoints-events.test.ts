import { beforeEach, describe, expect, it } from 'bun:test';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let token: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env, 'operator');
});

describe('createEndpoint', () => {
  it('returns 201 with the endpoint and its secret once', async () => {
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: { triggerVariant: 'order', resourceIdPath: 'order.id', name: 'Flagged orders' } });
    expect(r.status).toBe(201);
    const { endpoint, secret, signing } = r.json.data;
    expect(endpoint.id).toMatch(/^ep_/);
    expect(endpoint.url).toBe(`http://local/hooks/${endpoint.id}`);
    expect(endpoint.status).toBe('active');
    expect(endpoint.configVersion).toBe(1);
    expect(endpoint.auth).toEqual({ mode: 'hmac_sha256', headerName: 'X-Hookrelay-Signature', secretLast4: secret.slice(-4) });
    expect(secret).toMatch(/^whsec_[0-9A-Za-z]{40,}$/);
    expect(signing.instructions).toContain('exact raw request body');
    const detail = await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token });
    expect(detail.status).toBe(200);
    expect(detail.json.data.endpoint).toEqual(endpoint);
    expect(detail.text).not.toContain(secret);
  });

  const rules: [string, Record<string, unknown>, string, string][] = [
    ['nothing given: HMAC default', {}, 'hmac_sha256', 'X-Hookrelay-Signature'],
    ['custom_http profile: exact-body HMAC', { senderProfile: 'custom_http' }, 'hmac_sha256', 'X-Hookrelay-Signature'],
    ['zapier profile: static header', { senderProfile: 'zapier' }, 'static_header', 'X-Hookrelay-Token'],
    ['make profile: static header', { senderProfile: 'make' }, 'static_header', 'X-Hookrelay-Token'],
    ['n8n profile: static header', { senderProfile: 'n8n' }, 'static_header', 'X-Hookrelay-Token'],
    ['explicit auth wins over the profile', { senderProfile: 'zapier', authMode: 'hmac_sha256', headerName: 'X-Sig' }, 'hmac_sha256', 'X-Sig'],
    ['explicit static mode with a custom header', { authMode: 'static_header', headerName: 'X-Api-Key' }, 'static_header', 'X-Api-Key'],
  ];
  for (const [name, extra, mode, header] of rules) {
    it(`applies sender rules: ${name}`, async () => {
      const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: { triggerVariant: 'generic', ...extra } });
      expect(r.status).toBe(201);
      expect(r.json.data.endpoint.auth.mode).toBe(mode);
      expect(r.json.data.endpoint.auth.headerName).toBe(header);
    });
  }

  it('warns when HMAC is forced on a no-code sender', async () => {
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: { triggerVariant: 'generic', senderProfile: 'make', authMode: 'hmac_sha256' } });
    expect(r.json.data.warnings[0]).toContain('make');
  });

  it('requires the mapping each variant needs', async () => {
    for (const [variant, field] of [
      ['order', 'resourceIdPath'],
      ['customer', 'resourceIdPath'],
      ['inventory', 'relatedResourceIdPath'],
      ['company', 'relatedResourceIdPath'],
    ]) {
      const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: { triggerVariant: variant } });
      expect(r.status, variant).toBe(400);
      expect(r.json.error.details[0].path).toBe(field!);
    }
  });

  it('rejects reserved header names, bad dot paths and more than five required paths', async () => {
    for (const body of [
      { triggerVariant: 'generic', headerName: 'Authorization' },
      { triggerVariant: 'order', resourceIdPath: 'order..id' },
      { triggerVariant: 'generic', requiredPaths: ['a', 'b', 'c', 'd', 'e', 'f'] },
    ]) {
      expect((await call(env, 'POST', '/agent/v1/endpoints', { token, body })).status).toBe(400);
    }
  });
});

describe('events reads', () => {
  it('lists nothing and answers a null latest result before any event', async () => {
    const list = await call(env, 'GET', '/agent/v1/events', { token });
    expect(list.json.data).toEqual({ events: [], nextCursor: null });
    const latest = await call(env, 'GET', '/agent/v1/event-result', { token });
    expect(latest.status).toBe(200);
    expect(latest.json.data.result).toBeNull();
  });

  it('pages newest first with an opaque cursor and filters', async () => {
    const a = await createEndpoint(env, token);
    const b = await createEndpoint(env, token, { triggerVariant: 'generic' });
    for (let i = 0; i < 30; i++) {
      env.clock.advance(1000);
      expect((await sendHook(env, a.endpoint, a.secret, orderEvent(`a-${i}`))).status).toBe(202);
    }
    await sendHook(env, b.endpoint, b.secret, '{"event_type":"ping"}');
    await sendHook(env, a.endpoint, a.secret, '{"order":{"id":"nope"}}');

    const first = await call(env, 'GET', '/agent/v1/events?limit=25', { token });
    expect(first.json.data.events).toHaveLength(25);
    expect(first.json.data.events[0].outcome).toBe('rejected');
    const ids = first.json.data.events.map((e: { id: string }) => e.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    const second = await call(env, 'GET', `/agent/v1/events?limit=25&cursor=${first.json.data.nextCursor}`, { token });
    expect(second.json.data.events).toHaveLength(7);
    expect(second.json.data.nextCursor).toBeNull();
    expect(new Set([...ids, ...second.json.data.events.map((e: { id: string }) => e.id)]).size).toBe(32);

    const onlyB = await call(env, 'GET', `/agent/v1/events?endpointId=${b.endpoint.id}`, { token });
    expect(onlyB.json.data.events.map((e: { eventType: string }) => e.eventType)).toEqual(['ping']);
    const rejected = await call(env, 'GET', '/agent/v1/events?outcome=rejected', { token });
    expect(rejected.json.data.events).toHaveLength(1);
    expect(rejected.json.data.events[0].code).toBe('SVC_RESOURCE_ID_UNMAPPABLE');
    const since = new Date(env.clock.now() - 4500).toISOString();
    const recent = await call(env, 'GET', `/agent/v1/events?since=${since}&endpointId=${a.endpoint.id}&outcome=accepted`, { token });
    expect(recent.json.data.events).toHaveLength(5);
  });

  it("filters by the sender's external event id and by the endpoint's trigger variant", async () => {
    const a = await createEndpoint(env, token);
    const b = await createEndpoint(env, token, { triggerVariant: 'customer', resourceIdPath: 'order.id' });
    const sent = async (ep: typeof a, ext: string) => (await sendHook(env, ep.endpoint, ep.secret, orderEvent(ext))).json.eventId as string;
    const a1 = await sent(a, 'ext-shared');
    const a2 = await sent(a, 'ext-a');
    const b1 = await sent(b, 'ext-shared');
    const ids = async (query: string) => {
      const r = await call(env, 'GET', `/agent/v1/events?${query}`, { token });
      expect(r.status).toBe(200);
      return r.json.data.events.map((e: { id: string }) => e.id);
    };
    expect(await ids('externalEventId=ext-shared')).toEqual([b1, a1]);
    expect(await ids(`externalEventId=ext-shared&endpointId=${a.endpoint.id}`)).toEqual([a1]);
    expect(await ids('triggerVariant=order')).toEqual([a2, a1]);
    expect(await ids('triggerVariant=customer&externalEventId=ext-a')).toEqual([]);
    const bad = await call(env, 'GET', '/agent/v1/events?triggerVariant=orders', { token });
    expect([bad.status, bad.json.error.details[0].path]).toEqual([400, 'query.triggerVariant']);
  });

  it('shows detail with attempts, where handoff stopped and recovery options, never the body', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: 'detail-1', order: { id: 77 }, note: 'BODY_MARKER_91c' });
    const sent = await sendHook(env, endpoint, secret, body);
    const before = await call(env, 'GET', `/agent/v1/events/${sent.json.eventId}`, { token });
    expect(before.json.data.event.outcome).toBe('accepted');
    expect(before.json.data.event.handoffStoppedAt).toBe('queue');

    await new HandoffWorker(env.core).drain();
    const r = await call(env, 'GET', `/agent/v1/events/${sent.json.eventId}`, { token });
    const e = r.json.data.event;
    expect(e.outcome).toBe('delivered');
    expect(e.handoffStoppedAt).toBe('none');
    expect(e.meaning).toContain('does not mean');
    expect(e.attempts).toBe(1);
    expect(e.attemptsDetail[0]).toMatchObject({ number: 1, destination: 'log', outcome: 'delivered' });
    expect(e.replayable).toBe(true);
    expect(e.recoveryOptions.find((o: { action: string }) => o.action === 'replay').available).toBe(true);
    expect(e.bodyBytes).toBe(body.length);
    expect(r.text).not.toContain('BODY_MARKER_91c');
    expect(r.text).not.toContain('"id":77');
  });

  it('answers the latest result per store, per endpoint and per event id', async () => {
    const a = await createEndpoint(env, token);
    const b = await createEndpoint(env, token, { triggerVariant: 'generic' });
    const first = await sendHook(env, a.endpoint, a.secret, orderEvent('x-1'));
    env.clock.advance(10);
    const second = await sendHook(env, b.endpoint, b.secret, '{}');

    const latest = await call(env, 'GET', '/agent/v1/event-result', { token });
    expect(latest.json.data.result.event.id).toBe(second.json.eventId);
    expect(latest.json.data.result.downstreamConfirmed).toBe(false);
    const byEndpoint = await call(env, 'GET', `/agent/v1/event-result?endpointId=${a.endpoint.id}`, { token });
    expect(byEndpoint.json.data.result.event.id).toBe(first.json.eventId);
    const byId = await call(env, 'GET', `/agent/v1/event-result?eventId=${first.json.eventId}`, { token });
    expect(byId.json.data.result.event.externalEventId).toBe('x-1');

    await addStore(env, { shopDomain: 'other.myshopify.com' });
    const other = await addGrant(env, 'observer', { shop: 'other.myshopify.com' });
    const foreign = await call(env, 'GET', `/agent/v1/event-result?eventId=${first.json.eventId}`, { token: other });
    expect(foreign.json.data.result).toBeNull();
    expect((await call(env, 'GET', `/agent/v1/events/${first.json.eventId}`, { token: other })).status).toBe(404);
    expect((await call(env, 'GET', '/agent/v1/events', { token: other })).json.data.events).toEqual([]);
  });

  it('marks a body past retention as expired and not replayable', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    await sendHook(env, endpoint, secret, orderEvent('old'));
    await new HandoffWorker(env.core).drain();
    env.clock.advance(31 * 86400_000);
    const fresh = await addGrant(env, 'observer');
    const e = (await call(env, 'GET', '/agent/v1/events', { token: fresh })).json.data.events[0];
    expect(e.bodyRetention).toBe('expired');
    expect(e.replayable).toBe(false);
  });
});
