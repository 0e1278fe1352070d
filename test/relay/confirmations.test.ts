/**
 * Confirm the run: events handed to the fake Shopify's Flow, then the fake Flow runs the "Confirm hookrelay event"
 * action against the real server (startServer on loopback, POST /flow/actions/confirm), signed with the app secret.
 * A confirmation is recorded once per action run, shown by event detail and the event result, counted by the
 * tenant reliability read, and the events list's unconfirmedFor finds the delivered events no run confirmed.
 */
import { afterEach, describe, expect, it } from 'bun:test';
import { iso } from '../../src/lib/clock.ts';
import { hmacBase64 } from '../../src/lib/crypto.ts';
import { CONFIRM_ACTION } from '../../src/contract/triggers.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { b, fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, orderEvent, rows, sendHook, type TestEnv } from '../helpers.ts';

const APP_SECRET = 'shpss_canary_confirm_app_secret';
const ADMIN_TOKEN = 'shpat_canary_confirm_admin_token';
const SHOP = 'demo.myshopify.com';
const MIN = 60_000;

const fake = fakeShopifyForFile({ token: ADMIN_TOKEN, app: { clientId: 'client-id', clientSecret: APP_SECRET }, shop: { domain: SHOP } });

let running: RunningServer | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

/** A store handing off to the fake Shopify, a grant, an order endpoint, and the real server on a loopback port. */
async function setup(appSecret: string | null = APP_SECRET, extra: Record<string, string> = {}) {
  const vars: Record<string, string | undefined> = { HOOKRELAY_SHOPIFY_APP_SECRET: appSecret ?? undefined, SHOP_TOKEN: ADMIN_TOKEN, ...extra };
  const env = await createTestEnv({
    shopifyAdminUrl: fake.url,
    env: (n) => vars[n],
    handoff: { timeoutMs: 500, baseDelayMs: 10, maxDelayMs: 100, maxAttempts: 2 },
  });
  await addStore(env, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
  const token = await addGrant(env);
  const ep = await createEndpoint(env, token);
  running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false });
  const url = `${running.url}${CONFIRM_ACTION.path}`;
  const worker = new HandoffWorker(env.core);
  /** Sends an order event and hands it to the fake Flow; returns its id. */
  const delivered = async (ext: string, endpoint = ep) => {
    const sent = await sendHook(env, endpoint.endpoint, endpoint.secret, orderEvent(ext));
    expect(sent.status).toBe(202);
    await worker.drain();
    return sent.json.eventId as string;
  };
  return { env, token, ep, url, worker, delivered };
}

/** The fake Flow runs the confirm action once. */
function confirm(url: string, properties: Record<string, unknown>, opts: Partial<Parameters<typeof fake.runFlowAction>[1]> = {}) {
  return fake.runFlowAction(url, { handle: CONFIRM_ACTION.handle, properties, ...opts });
}

const detailOf = async (env: TestEnv, token: string, eventId: string) => (await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event;
const resultOf = async (env: TestEnv, token: string, eventId: string) =>
  (await call(env, 'GET', `/agent/v1/event-result?eventId=${eventId}`, { token })).json.data.result;
const answer = (r: { status: number; body: string }) => ({ status: r.status, json: JSON.parse(r.body) });

describe('POST /flow/actions/confirm', () => {
  it('records a signed confirmation, shown by event detail and the event result; delivered keeps its meaning', async () => {
    const { env, token, url, delivered } = await setup();
    const eventId = await delivered('ext-confirm');
    expect(fake.requests).toHaveLength(1);
    const before = await detailOf(env, token, eventId);
    expect(before).toMatchObject({ outcome: 'delivered', confirmation: null });
    expect(await resultOf(env, token, eventId)).toMatchObject({ downstreamConfirmed: false, confirmation: null });

    env.clock.advance(5 * MIN);
    const r = await confirm(url, { event_id: eventId, outcome: '', note: 'Tagged order 4501 and emailed the warehouse' });
    expect(answer(r)).toEqual({ status: 200, json: { status: 'recorded' } });
    const confirmation = { outcome: 'ok', note: 'Tagged order 4501 and emailed the warehouse', confirmedAt: iso(env.clock.now()), runs: 1 };
    const after = await detailOf(env, token, eventId);
    expect(after.confirmation).toEqual(confirmation);
    // The receipt and its handoff are as they were: a confirmation is beside `delivered`, not a new outcome.
    const { confirmation: _c, ...rest } = after;
    const { confirmation: _b, ...restBefore } = before;
    expect(rest).toEqual(restBefore);
    expect(await resultOf(env, token, eventId)).toMatchObject({ event: { id: eventId, outcome: 'delivered' }, downstreamConfirmed: true, confirmation });
    expect(await rows(env, 'SELECT action_run_id, event_id, outcome FROM confirmations')).toEqual([
      { action_run_id: r.actionRunId, event_id: eventId, outcome: 'ok' },
    ]);
    expect(env.log.lines.join('\n')).toContain(`flow confirmation: ${SHOP} ${eventId} outcome=ok`);
  });

  it('dedupes a resend of the same action_run_id: 200 and nothing more recorded', async () => {
    const { env, token, url, delivered } = await setup();
    const eventId = await delivered('ext-resend');
    const first = await confirm(url, { event_id: eventId, outcome: 'error', note: 'payment capture step failed' });
    expect(answer(first)).toEqual({ status: 200, json: { status: 'recorded' } });
    const recorded = (await detailOf(env, token, eventId)).confirmation;
    env.clock.advance(MIN);
    // Flow resends the same run (its answer was lost, say): same action_run_id, here with other values.
    const resend = await confirm(url, { event_id: eventId, outcome: 'ok', note: 'a resend never changes the record' }, { actionRunId: first.actionRunId });
    expect(answer(resend)).toEqual({ status: 200, json: { status: 'duplicate' } });
    expect(await count(env, 'confirmations')).toBe(1);
    expect((await detailOf(env, token, eventId)).confirmation).toEqual(recorded);
    expect(await resultOf(env, token, eventId)).toMatchObject({ downstreamConfirmed: false, confirmation: { outcome: 'error', runs: 1 } });

    // Two copies of one run arriving at once (Flow resending while the first is in flight): one row, both 200.
    const racing = await Promise.all([1, 2].map(() => confirm(url, { event_id: eventId, outcome: 'ok' }, { actionRunId: 'run-racing' })));
    expect(racing.map((r) => r.status)).toEqual([200, 200]);
    expect(racing.map((r) => JSON.parse(r.body).status).sort()).toEqual(['duplicate', 'recorded']);
    expect(await count(env, 'confirmations', 'action_run_id = ?', 'run-racing')).toBe(1);

    // Another workflow's run of the same event is one more confirmation; the newest is shown.
    env.clock.advance(MIN);
    expect(answer(await confirm(url, { event_id: eventId, outcome: 'OK ' }))).toEqual({ status: 200, json: { status: 'recorded' } });
    expect((await detailOf(env, token, eventId)).confirmation).toEqual({ outcome: 'ok', confirmedAt: iso(env.clock.now()), runs: 3 });
    expect((await resultOf(env, token, eventId)).downstreamConfirmed).toBe(true);
  });

  it('refuses a forged run (wrong HMAC, missing header, body altered) with 401 and records nothing; no secret or signature leaks', async () => {
    const { env, token, url, delivered } = await setup();
    const eventId = await delivered('ext-forged');
    const props = { event_id: eventId, outcome: 'ok' };
    const wrong = await confirm(url, props, { signWith: 'shpss_not_the_app_secret' });
    expect(answer(wrong)).toMatchObject({ status: 401, json: { code: 'SVC_AUTH_FAILED' } });
    expect(answer(await confirm(url, props, { unsigned: true }))).toMatchObject({ status: 401, json: { code: 'SVC_AUTH_HEADER_MISSING' } });
    const altered = await confirm(url, { ...props, outcome: 'error' }, { alter: (body) => body.replace('"error"', '"ok"') });
    expect(answer(altered)).toMatchObject({ status: 401, json: { code: 'SVC_AUTH_FAILED' } });
    expect(fake.actionRuns.map((a) => [a.forged, a.status])).toEqual([
      [true, 401],
      [true, 401],
      [true, 401],
    ]);
    expect(await count(env, 'confirmations')).toBe(0);
    expect((await detailOf(env, token, eventId)).confirmation).toBeNull();

    // The signatures that were sent (the body as the fake Flow signed it), and both secrets, are in no log line,
    // stored row or answer.
    const signedBody = (actionRunId: string, properties: Record<string, unknown>) =>
      JSON.stringify({
        shop_id: fake.shop.id,
        shopify_domain: SHOP,
        action_run_id: actionRunId,
        handle: CONFIRM_ACTION.handle,
        action_definition_id: CONFIRM_ACTION.handle,
        properties,
      });
    const signatures = [
      hmacBase64('shpss_not_the_app_secret', signedBody(wrong.actionRunId, props)),
      hmacBase64(APP_SECRET, signedBody(altered.actionRunId, { ...props, outcome: 'error' })),
    ];
    const everything = [
      env.log.lines.join('\n'),
      JSON.stringify(await rows(env, 'SELECT * FROM audit_log')),
      JSON.stringify(await rows(env, 'SELECT * FROM confirmations')),
      wrong.body,
      altered.body,
    ].join('\n');
    for (const canary of [APP_SECRET, 'shpss_not_the_app_secret', ...signatures]) expect(everything).not.toContain(canary);
  });

  it('keeps a secret serve holds out of the note even typed bare (the database password)', async () => {
    const password = 'Tr0ub4dor-note-9';
    const { env, token, url, delivered } = await setup(APP_SECRET, { HOOKRELAY_DATABASE_URL: `postgres://relay:${password}@db.internal/relay` });
    const eventId = await delivered('ext-held');
    expect((await confirm(url, { event_id: eventId, note: `the db password is ${password}, fyi` })).status).toBe(200);
    expect((await detailOf(env, token, eventId)).confirmation.note).toBe('the db password is [redacted secret], fyi');
    expect(JSON.stringify(await rows(env, 'SELECT * FROM confirmations'))).not.toContain(password);
    expect(env.log.lines.join('\n')).not.toContain(password);
  });

  it("keeps the note's secrets and email addresses out of what it stores and shows, and at most 500 characters", async () => {
    const { env, token, url, delivered } = await setup();
    const eventId = await delivered('ext-note');
    const note = `Done. Key whsec_${'A1b2'.repeat(10)} for ops@example.com; ${'x'.repeat(600)}`;
    expect((await confirm(url, { event_id: eventId, note })).status).toBe(200);
    const shown = (await detailOf(env, token, eventId)).confirmation.note as string;
    expect(shown.startsWith('Done. Key [redacted secret] for [redacted email];')).toBe(true);
    expect([...shown]).toHaveLength(500);
    const stored = JSON.stringify(await rows(env, 'SELECT * FROM confirmations'));
    for (const leaked of ['whsec_A1b2', 'ops@example.com']) {
      expect(stored).not.toContain(leaked);
      expect(env.log.lines.join('\n')).not.toContain(leaked);
    }
  });

  it('answers what a resend cannot cure with a 4xx and a message Flow shows the merchant, records nothing, and never a 500', async () => {
    const { env, token, url, delivered } = await setup();
    const eventId = await delivered('ext-bad');
    // The other store's event: not this shop's.
    await addStore(env, { shopDomain: 'other.myshopify.com', platformAccountId: 'acct-2', installationId: 'inst-2' });
    const otherToken = await addGrant(env, 'admin_assistant', { shop: 'other.myshopify.com' });
    const other = await createEndpoint(env, otherToken, { triggerVariant: 'generic' });
    const otherEvent = (await sendHook(env, other.endpoint, other.secret, '{"event_type":"x"}')).json.eventId as string;
    // Never handed to Flow: rejected at receipt (no order.id to map).
    const { endpoint, secret } = await createEndpoint(env, token);
    const unmappable = (await sendHook(env, endpoint, secret, JSON.stringify({ order: {} }))).json.eventId as string;
    expect((await detailOf(env, token, unmappable)).outcome).toBe('rejected');

    const cases: [Record<string, unknown>, Partial<Parameters<typeof fake.runFlowAction>[1]>, number, string, string?][] = [
      [{ event_id: 'evt_0123456789abcdefghjkmnpqrs' }, {}, 404, 'not_found', 'No hookrelay event evt_0123456789abcdefghjkmnpqrs for this store.'],
      [{ event_id: otherEvent }, {}, 404, 'not_found', `No hookrelay event ${otherEvent} for this store.`],
      [{ event_id: eventId }, { shop: 'nobody.myshopify.com' }, 404, 'not_found', 'No store for this shop on this server.'],
      [{ event_id: eventId }, { handle: 'someone-elses-action' }, 404, 'not_found', 'No such action in this app.'],
      [{ event_id: unmappable }, {}, 409, 'event_not_handed_off'],
      [{ event_id: eventId, outcome: 'maybe' }, {}, 400, 'invalid_input', 'Outcome must be ok or error (empty means ok).'],
      [{ event_id: 'someone@example.com' }, {}, 400, 'invalid_input'],
      [{ event_id: '' }, {}, 400, 'invalid_input'],
      [{}, {}, 400, 'invalid_input'],
      [{ event_id: 42 }, {}, 400, 'invalid_input'],
      [{ event_id: eventId, note: 'x'.repeat(20_000) }, {}, 400, 'invalid_input'],
    ];
    for (const [properties, opts, status, code, message] of cases) {
      const r = answer(await confirm(url, properties, opts));
      expect({ properties, status: r.status, code: r.json.code }).toEqual({ properties, status, code });
      if (message) expect(r.json.message).toBe(message);
    }
    // The merchant's value is not echoed unless it has the shape of an event id.
    expect(fake.actionRuns).toHaveLength(cases.length);
    const malformed = answer(await confirm(url, { event_id: 'someone@example.com' }));
    expect(malformed.json.message).not.toContain('someone@example.com');
    expect(malformed.json.message).toContain('evt_');

    // Not JSON, not an object, too large, not a POST: each its own code.
    const signed = async (body: string, method = 'POST') =>
      fetch(url, {
        method,
        headers: { 'content-type': 'application/json', 'x-shopify-hmac-sha256': hmacBase64(APP_SECRET, body) },
        body: method === 'POST' ? body : undefined,
      });
    expect((await signed('{"action_run_id":')).status).toBe(400);
    expect((await signed('[1,2]')).status).toBe(400);
    expect((await signed(JSON.stringify({ pad: 'x'.repeat(70 * 1024) }))).status).toBe(413);
    const get = await signed('', 'GET');
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    expect(await count(env, 'confirmations')).toBe(0);
  });

  it('answers 503 without an app secret (Flow resends the run for up to 36 hours), and says which variable to set', async () => {
    const { env, url, delivered } = await setup(null);
    const eventId = await delivered('ext-unconfigured');
    const r = answer(await confirm(url, { event_id: eventId }));
    expect(r).toMatchObject({ status: 503, json: { code: 'confirmations_not_configured' } });
    expect(env.log.lines.join('\n')).toContain('HOOKRELAY_SHOPIFY_APP_SECRET');
    expect(await count(env, 'confirmations')).toBe(0);
  });
});

describe('reading confirmations', () => {
  it('the tenant reliability read gives the confirmed share per endpoint and per trigger over its window', async () => {
    const { env, token, ep, url, worker, delivered } = await setup();
    const generic = await createEndpoint(env, token, { triggerVariant: 'generic' });
    const orders = [await delivered('o-1'), await delivered('o-2'), await delivered('o-3'), await delivered('o-4')];
    const sent = await sendHook(env, generic.endpoint, generic.secret, '{"event_type":"note"}');
    await worker.drain();
    const genericEvent = sent.json.eventId as string;
    expect((await detailOf(env, token, genericEvent)).outcome).toBe('delivered');
    // A failed handoff is not a delivery: it never counts.
    fake.script(b.userErrors({ field: null, message: 'Invalid trigger payload' }));
    await delivered('o-failed');

    for (const [eventId, outcome] of [
      [orders[0], 'ok'],
      [orders[1], 'ok'],
      [orders[1], 'ok'],
      [orders[2], 'error'],
    ] as const) {
      expect((await confirm(url, { event_id: eventId, outcome })).status).toBe(200);
    }
    const health = (await call(env, 'GET', '/agent/v1/reliability/tenant?window=1h', { token })).json.data;
    expect(health.counts.delivered).toBe(5);
    expect(health.confirmations).toEqual({
      delivered: 5,
      confirmed: 3,
      errored: 1,
      share: 0.6,
      byEndpoint: [
        { endpointId: ep.endpoint.id, triggerVariant: 'order', delivered: 4, confirmed: 3, errored: 1, share: 0.75 },
        { endpointId: generic.endpoint.id, triggerVariant: 'generic', delivered: 1, confirmed: 0, errored: 0, share: 0 },
      ],
      byTrigger: [
        { triggerVariant: 'generic', delivered: 1, confirmed: 0, errored: 0, share: 0 },
        { triggerVariant: 'order', delivered: 4, confirmed: 3, errored: 1, share: 0.75 },
      ],
    });
    // Events received before the window are outside it.
    env.clock.advance(2 * 3600_000);
    const later = await addGrant(env); // the first one has expired
    expect((await call(env, 'GET', '/agent/v1/reliability/tenant?window=1h', { token: later })).json.data.confirmations).toEqual({
      delivered: 0,
      confirmed: 0,
      errored: 0,
      share: null,
      byEndpoint: [],
      byTrigger: [],
    });
    expect((await call(env, 'GET', '/agent/v1/reliability/destination?window=1h', { token: later })).json.data.confirmations).toBeNull();
  });

  it('listEvents unconfirmedFor finds exactly the delivered events no run confirmed, delivered more than N minutes ago', async () => {
    const { env, token, url, delivered } = await setup();
    const e1 = await delivered('u-1'); // delivered at t
    const confirmedEarly = await delivered('u-2'); // delivered at t, then confirmed
    env.clock.advance(10 * MIN);
    const e3 = await delivered('u-3'); // t + 10 min
    env.clock.advance(10 * MIN);
    const e4 = await delivered('u-4'); // t + 20 min
    fake.script(b.userErrors({ field: null, message: 'Invalid trigger payload' }));
    const failed = await delivered('u-failed'); // failed at t + 20 min: never delivered
    expect((await detailOf(env, token, failed)).outcome).toBe('failed');
    expect((await confirm(url, { event_id: confirmedEarly, outcome: 'error' })).status).toBe(200);
    env.clock.advance(10 * MIN); // now t + 30 min

    const list = async (query: string) => {
      const r = await call(env, 'GET', `/agent/v1/events?${query}`, { token });
      expect(r.status).toBe(200);
      return (r.json.data.events as { id: string; outcome: string }[]).map((e) => e.id);
    };
    expect(await list('unconfirmedFor=15')).toEqual([e3, e1]);
    expect(await list('unconfirmedFor=25')).toEqual([e1]);
    expect(await list('unconfirmedFor=5')).toEqual([e4, e3, e1]);
    expect(await list('unconfirmedFor=31')).toEqual([]);
    expect(await list('unconfirmedFor=15&outcome=delivered&limit=1')).toEqual([e3]);
    const firstPage = (await call(env, 'GET', '/agent/v1/events?unconfirmedFor=5&limit=2', { token })).json.data;
    expect(await list(`unconfirmedFor=5&cursor=${firstPage.nextCursor}`)).toEqual([e1]);
    // A workflow confirms e3 late: it leaves the list.
    expect((await confirm(url, { event_id: e3 })).status).toBe(200);
    expect(await list('unconfirmedFor=5')).toEqual([e4, e1]);

    for (const [query, path] of [
      ['unconfirmedFor=15&outcome=failed', 'query.outcome'],
      ['unconfirmedFor=0', 'query.unconfirmedFor'],
      ['unconfirmedFor=43201', 'query.unconfirmedFor'],
      ['unconfirmedFor=soon', 'query.unconfirmedFor'],
      ['unconfirmedFor=1.5', 'query.unconfirmedFor'],
    ] as const) {
      const r = await call(env, 'GET', `/agent/v1/events?${query}`, { token });
      expect({ query, status: r.status, code: r.json.error.code, paths: r.json.error.details.map((d: { path: string }) => d.path) }).toEqual({
        query,
        status: 400,
        code: 'invalid_input',
        paths: [path],
      });
    }
  });
});
