import { describe, expect, it } from 'bun:test';
import { FLOW_PAYLOAD_MAX_BYTES } from '../../src/contract/triggers.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, sendHook } from '../helpers.ts';

const TOKEN = 'shpat_canary_token';
const fake = fakeShopifyForFile({ token: TOKEN });

/** A Typeform-like sender's answers: five typed values, one per field below. */
const FIELDS = [
  { name: 'score', path: 'form_response.answers.score', type: 'number' },
  { name: 'comment', path: 'form_response.answers.comment', type: 'text' },
  { name: 'email', path: 'form_response.hidden.email', type: 'email' },
  { name: 'vip', path: 'form_response.hidden.vip', type: 'boolean' },
  { name: 'submitted_at', path: 'form_response.submitted_at', type: 'datetime' },
] as const;
const VALUES: Record<string, string | number | boolean> = {
  score: 2,
  comment: 'Box arrived crushed',
  email: 'buyer@example.com',
  vip: true,
  submitted_at: '2026-06-17T11:58:00Z',
};

async function setup(endpoint: Record<string, unknown>) {
  const env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => (n === 'SHOP_TOKEN' ? TOKEN : undefined) });
  await addStore(env, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
  const grant = await addGrant(env);
  const created = await createEndpoint(env, grant, { triggerVariant: 'order', resourceIdPath: 'order.id', ...endpoint });
  return { env, grant, ...created, worker: new HandoffWorker(env.core) };
}

/** The event a form sends, with `values` (a value of `undefined` leaves its key out). */
function formEvent(ext: string, values: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const answers = { score: values.score, comment: values.comment };
  const hidden = { email: values.email, vip: values.vip };
  return JSON.stringify({ external_event_id: ext, order: { id: 4501 }, form_response: { answers, hidden, submitted_at: values.submitted_at }, ...extra });
}

describe('typed fields on the fake Shopify', () => {
  it('hands off exactly the typed values found, absent ones absent, and counts them in event detail', async () => {
    const s = await setup({ fields: FIELDS });
    const cases: { ext: string; values: Record<string, unknown>; missing: string[]; wrongType: string[] }[] = [
      { ext: 'all', values: VALUES, missing: [], wrongType: [] },
      ...FIELDS.map((f) => ({ ext: `no-${f.name}`, values: { ...VALUES, [f.name]: undefined }, missing: [f.name], wrongType: [] })),
      // Wrong types are never coerced: "2" is not a number, "yes" not a boolean, a date without a time not a datetime.
      {
        ext: 'wrong',
        values: { ...VALUES, score: '2', vip: 'yes', email: 'not-an-email', submitted_at: '2026-06-17', comment: null },
        missing: ['comment'],
        wrongType: ['score', 'email', 'vip', 'submitted_at'],
      },
    ];
    const ids: string[] = [];
    for (const c of cases) {
      const r = await sendHook(s.env, s.endpoint, s.secret, formEvent(c.ext, c.values));
      expect(r.status).toBe(202);
      ids.push(r.json.eventId);
    }
    await s.worker.drain();
    expect(fake.requests).toHaveLength(cases.length);

    for (const [i, c] of cases.entries()) {
      const sent = fake.requests.find((r) => r.payload['external event id'] === c.ext)!;
      const expected = FIELDS.filter((f) => !c.missing.includes(f.name) && !c.wrongType.includes(f.name)).map((f) => ({
        name: f.name,
        [f.type]: VALUES[f.name],
      }));
      expect(sent.payload.sender).toEqual({ fields: expected });
      expect(sent.payload['body json']).toBe('');

      const detail = await call(s.env, 'GET', `/agent/v1/events/${ids[i]}`, { token: s.grant });
      expect(detail.json.data.event.outcome).toBe('delivered');
      expect(detail.json.data.event.attemptsDetail[0].fields).toEqual({ found: expected.length, missing: c.missing, wrongType: c.wrongType, bodyCut: null });
      // Counts and names, never a value.
      for (const v of ['Box arrived crushed', 'buyer@example.com', 'not-an-email']) expect(detail.text).not.toContain(v);
    }
  });

  it('fails an event whose required path holds a value of another type, and only that event', async () => {
    const s = await setup({ fields: FIELDS, requiredPaths: ['form_response.answers.score'] });
    const bad = await sendHook(s.env, s.endpoint, s.secret, formEvent('bad', { ...VALUES, score: 'two' }));
    const good = await sendHook(s.env, s.endpoint, s.secret, formEvent('good', { ...VALUES, email: 'nope' }));
    await s.worker.drain();
    const of = async (id: string) => (await call(s.env, 'GET', `/agent/v1/events/${id}`, { token: s.grant })).json.data.event;
    expect(await of(bad.json.eventId)).toMatchObject({ outcome: 'failed', code: 'SVC_REQUIRED_PATH_MISSING' });
    expect((await of(good.json.eventId)).outcome).toBe('delivered');
    expect(fake.requests.map((r) => r.payload['external event id'])).toEqual(['good']);
  });

  it('with includeBody, trims a 1 MiB body to fit Flow, says what was cut, and hands it off', async () => {
    const s = await setup({ fields: FIELDS, includeBody: true });
    const small = formEvent('small', VALUES);
    const bulky = { transcript: 'x'.repeat(600_000), attachments: Array.from({ length: 4000 }, (_, i) => ({ id: i, note: 'é'.repeat(30) })) };
    let big = formEvent('big', VALUES, bulky);
    big = big.replace('"transcript":"', `"transcript":"${'y'.repeat(1024 * 1024 - Buffer.byteLength(big) - 1)}`);
    expect(Buffer.byteLength(big)).toBe(1024 * 1024 - 1);
    for (const body of [small, big]) expect((await sendHook(s.env, s.endpoint, s.secret, body)).status).toBe(202);
    await s.worker.drain();

    const whole = fake.requests.find((r) => r.payload['external event id'] === 'small')!;
    expect(whole.payload['body json']).toBe(JSON.stringify(JSON.parse(small)));
    expect(whole.payload['body cut']).toBe('');

    const trimmed = fake.requests.find((r) => r.payload['external event id'] === 'big')!;
    expect(Buffer.byteLength(JSON.stringify(trimmed.payload))).toBeLessThan(FLOW_PAYLOAD_MAX_BYTES);
    const kept = JSON.parse(trimmed.payload['body json'] as string);
    expect(Object.keys(kept).sort()).toEqual(['external_event_id', 'form_response', 'order']);
    expect(trimmed.payload['body cut']).toContain('Removed 2 top-level member(s), largest first');
    expect(trimmed.payload['body cut']).toContain('transcript, attachments');
    expect((trimmed.payload.sender as { fields: unknown[] }).fields).toHaveLength(FIELDS.length);

    const events = (await call(s.env, 'GET', '/agent/v1/events?limit=10', { token: s.grant })).json.data.events;
    const bigId = events.find((e: { externalEventId: string }) => e.externalEventId === 'big').id;
    const detail = (await call(s.env, 'GET', `/agent/v1/events/${bigId}`, { token: s.grant })).json.data.event;
    expect(detail.outcome).toBe('delivered');
    expect(detail.attemptsDetail[0].fields.bodyCut).toBe(trimmed.payload['body cut']);
  });
});
