import { beforeEach, describe, expect, it } from 'bun:test';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, executeIntent, rows, sendHook, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let token: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env, { plan: 'growth' });
  token = await addGrant(env, 'operator');
});

/** A value planted in every event: no read, log line or audit row may ever show it. */
const CANARY = 'canary-7f3a9c1e-do-not-show';
const FIELDS = [
  { name: 'score', path: 'answers.score', type: 'number' },
  { name: 'comment', path: 'answers.comment', type: 'text' },
  { name: 'email', path: 'hidden.email', type: 'email' },
];

describe("the edit preview's dry run of fields", () => {
  it("counts found, missing and wrong type over the store's last 50 retained bodies, and never shows a value", async () => {
    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'generic' });
    const send = async (i: number, answers: Record<string, unknown>) => {
      const body = JSON.stringify({
        external_event_id: `e-${i}`,
        answers: { comment: `${CANARY} ${i}`, ...answers },
        hidden: { email: `${CANARY}@example.com` },
      });
      expect((await sendHook(env, endpoint, secret, body)).status).toBe(202);
    };
    // Five older events (wrong type) fall outside the newest 50; a rejected one keeps no body and is skipped.
    for (let i = 0; i < 5; i++) await send(i, { score: 'high' });
    for (let i = 5; i < 35; i++) await send(i, { score: i % 5 });
    expect((await sendHook(env, endpoint, secret, '{"not json')).status).toBe(422);
    for (let i = 35; i < 45; i++) await send(i, { score: String(i) });
    for (let i = 45; i < 55; i++) await send(i, {});
    await new HandoffWorker(env.core).drain();

    const path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { fields: FIELDS } } });
    expect(p.status).toBe(201);
    expect(p.json.data.intent.preview.fieldDryRun).toEqual({
      events: 50,
      fields: [
        { name: 'score', found: 30, missing: 10, wrongType: 10 },
        { name: 'comment', found: 50, missing: 0, wrongType: 0 },
        { name: 'email', found: 50, missing: 0, wrongType: 0 },
      ],
    });
    // An edit without fields reads no body.
    const plain = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { name: 'Survey' } } });
    expect(plain.json.data.intent.preview.fieldDryRun).toBeUndefined();

    const x = await executeIntent(env, token, path, p.json.data.intent, 'dry-1');
    expect(x.status).toBe(200);
    // A later event hands the fields off: its detail shows counts and names, never the values.
    await send(99, { score: 4 });
    await new HandoffWorker(env.core).drain();
    const list = await call(env, 'GET', '/agent/v1/events?limit=100', { token });
    const newest = list.json.data.events[0];
    const detail = await call(env, 'GET', `/agent/v1/events/${newest.id}`, { token });
    expect(detail.json.data.event.attemptsDetail[0].fields).toEqual({ found: 3, missing: [], wrongType: [], bodyCut: null });

    const reads = [p.text, plain.text, x.text, list.text, detail.text];
    for (const read of [`/agent/v1/endpoints/${endpoint.id}`, '/agent/v1/audit?limit=100', '/agent/v1/setup-state']) {
      const r = await call(env, 'GET', read, { token });
      expect(r.status, read).toBe(200);
      reads.push(r.text);
    }
    for (const text of reads) expect(text).not.toContain(CANARY);
    expect(env.log.lines.join('\n')).not.toContain(CANARY);
    for (const table of ['audit_log', 'intents', 'attempts', 'idempotency_keys', 'endpoint_versions']) {
      expect(JSON.stringify(await rows(env, `SELECT * FROM ${table}`)), table).not.toContain(CANARY);
    }
  });
});
