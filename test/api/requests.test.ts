import { beforeEach, describe, expect, it } from 'bun:test';
import { hmacHex } from '../../src/lib/crypto.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, BASE, call, count, createEndpoint, createTestEnv, executeIntent, orderEvent, row, sendHook, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let token: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env, 'recovery_operator');
});

const exec = (path: string, intent: { id: string; confirmation: { token: string } }, key: string) => executeIntent(env, token, path, intent, key);

describe('createEndpointTestIntent', () => {
  it('hands the sender a synthetic body to sign, never the secret; the signed event becomes a test receipt', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    const r = await call(env, 'POST', `/agent/v1/endpoints/${endpoint.id}/test-intents`, { token, body: {} });
    expect(r.status).toBe(201);
    const t = r.json.data.test;
    expect(r.text).not.toContain(secret);
    expect(t).toMatchObject({ url: `${BASE}/hooks/${endpoint.id}`, headerName: 'X-Hookrelay-Signature', authMode: 'hmac_sha256' });
    expect(Object.keys(t.body).sort()).toEqual(['event_type', 'external_event_id']);
    expect(t.howToSign).toContain('openssl dgst');

    const res = await env.app.fetch(
      new Request(t.url, { method: 'POST', headers: { 'content-type': 'application/json', [t.headerName]: hmacHex(secret, t.bodyText) }, body: t.bodyText }),
    );
    expect(res.status).toBe(202);
    expect(((await res.json()) as { status: string }).status).toBe('test');
    await new HandoffWorker(env.core).drain();
    const events = (await call(env, 'GET', '/agent/v1/events', { token })).json.data.events;
    expect(events[0]).toMatchObject({ outcome: 'test', isTest: true, attempts: 0 });
    const setup = (await call(env, 'GET', '/agent/v1/setup-state', { token })).json.data;
    expect(setup.checklist.find((c: { item: string }) => c.item === 'test_receipt_seen').done).toBe(true);
  });
});

describe('createDiagnosticsShareIntent', () => {
  it('previews and freezes a redacted package without bodies or secrets', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: 'd-1', order: { id: 9 }, email: 'buyer@example.com' });
    const sent = await sendHook(env, endpoint, secret, body);
    await sendHook(env, endpoint, secret, orderEvent('d-2'), { auth: 'a'.repeat(64) });
    const path = '/agent/v1/diagnostics-share-intents';
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { eventIds: [sent.json.eventId], note: 'please look' } } });
    expect(p.status).toBe(201);
    const x = await exec(path, p.json.data.intent, 'diag-1');
    expect(x.status).toBe(200);
    const id = x.json.data.intent.result.resourceId;
    expect(id).toStartWith('diag_');
    const stored = (await row<{ body: string }>(env, 'SELECT body FROM records WHERE id = ?', id))!;
    for (const leak of [secret, 'buyer@example.com', '"id":9', 'a'.repeat(64)]) expect(stored.body).not.toContain(leak);
    expect(JSON.parse(stored.body).endpoints[0].recentAuthFailureCodes).toEqual(['SVC_AUTH_FAILED']);
  });
});

describe('createSupportRequestIntent', () => {
  it('submits with consent and no stored preview, redacting private text', async () => {
    const r = await call(env, 'POST', '/agent/v1/support-request-intents', {
      token,
      headers: { 'Idempotency-Key': 's-1' },
      body: {
        mode: 'submit',
        consent: true,
        input: { category: 'delivery', urgency: 'high', summary: 'Events stuck; secret whsec_abc123 and buyer@example.com' },
      },
    });
    expect(r.status).toBe(200);
    expect(r.json.data.intent.state).toBe('executed');
    const stored = (await row<{ body: string }>(env, "SELECT body FROM records WHERE kind = 'support_request'"))!;
    expect(stored.body).not.toContain('whsec_abc123');
    expect(stored.body).not.toContain('buyer@example.com');
    expect(JSON.parse(stored.body).statusHistory[0].status).toBe('submitted');
  });

  it('refuses submit without consent and previews with redaction warnings', async () => {
    const no = await call(env, 'POST', '/agent/v1/support-request-intents', {
      token,
      body: { mode: 'submit', input: { category: 'other', urgency: 'low', summary: 'x' } },
    });
    expect(no.status).toBe(400);
    const p = await call(env, 'POST', '/agent/v1/support-request-intents', {
      token,
      body: { mode: 'preview', input: { category: 'other', urgency: 'low', summary: 'token hrg_abc' } },
    });
    expect(p.status).toBe(201);
    expect(p.json.data.intent.preview.warnings[0]).toContain('redacted');
    expect(p.text).not.toContain('hrg_abc');
  });
});

describe('expansion and feature requests', () => {
  it('acknowledge as non-binding and are duplicate-safe with an Idempotency-Key', async () => {
    const body = { kind: 'multi_store', summary: 'We run three stores' };
    const a = await call(env, 'POST', '/agent/v1/expansion-requests', { token, headers: { 'Idempotency-Key': 'x-1' }, body });
    const b = await call(env, 'POST', '/agent/v1/expansion-requests', { token, headers: { 'Idempotency-Key': 'x-1' }, body });
    expect(a.status).toBe(201);
    expect(a.json.data).toMatchObject({ nonBinding: true, request: { kind: 'expansion', status: 'received' } });
    expect(a.json.data.acknowledgement).toContain('no commitment, priority or timeline');
    expect(b.json.data.request.id).toBe(a.json.data.request.id);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    const f = await call(env, 'POST', '/agent/v1/feature-requests', {
      token,
      body: { capability: 'CSV export', problem: 'We need receipts in a spreadsheet' },
    });
    expect(f.status).toBe(201);
    expect(f.json.data.request.kind).toBe('feature');
    expect(await count(env, 'records', "kind LIKE '%_request'")).toBe(2);
  });
});
