/**
 * Flow's trigger lifecycle callback (POST /flow/lifecycle) and what it changes: trigger readiness in setup
 * state, and `no_workflow` instead of a handoff while Flow reports no enabled workflow for the trigger.
 */
import { describe, expect, it } from 'bun:test';
import { TRIGGERS } from '../../src/contract/triggers.ts';
import { hmacBase64 } from '../../src/lib/crypto.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, BASE, call, createEndpoint, createTestEnv, executeIntent, orderEvent, rows, sendHook, type TestEnv } from '../helpers.ts';

const APP_SECRET = 'shpss_canary_app_secret';
const ADMIN_TOKEN = 'shpat_canary_admin_token';
const ORDER = TRIGGERS.order.handle;

const fake = fakeShopifyForFile({ token: ADMIN_TOKEN });

async function setup(appSecret: string | null = APP_SECRET) {
  const vars: Record<string, string | undefined> = { HOOKRELAY_SHOPIFY_APP_SECRET: appSecret ?? undefined, SHOP_TOKEN: ADMIN_TOKEN };
  const env = await createTestEnv({
    shopifyAdminUrl: fake.url,
    env: (n) => vars[n],
    handoff: { timeoutMs: 500, baseDelayMs: 10, maxDelayMs: 100, maxAttempts: 3, concurrency: 2, batchSize: 16 },
  });
  await addStore(env, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
  const token = await addGrant(env);
  return { env, token, worker: new HandoffWorker(env.core) };
}

function callback(fields: Partial<{ flow_trigger_definition_id: string; has_enabled_flow: boolean; shopify_domain: string; timestamp: string }> = {}) {
  return JSON.stringify({
    flow_trigger_definition_id: ORDER,
    has_enabled_flow: false,
    shop_id: 690933842,
    shopify_domain: 'demo.myshopify.com',
    timestamp: '2026-11-20T10:00:00.000Z',
    ...fields,
  });
}

async function post(env: TestEnv, body: string, signature: string | null = hmacBase64(APP_SECRET, body), method = 'POST') {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== null) headers['x-shopify-hmac-sha256'] = signature;
  const res = await env.app.fetch(new Request(`${BASE}/flow/lifecycle`, { method, headers, body: method === 'POST' ? body : undefined }));
  return { status: res.status, json: (await res.json()) as any };
}

async function readiness(env: TestEnv, token: string) {
  const state = (await call(env, 'GET', '/agent/v1/setup-state', { token })).json.data;
  return {
    order: state.triggerReadiness.find((r: any) => r.triggerVariant === 'order'),
    workflowEnabled: state.checklist.find((c: any) => c.item === 'workflow_enabled').done as boolean,
  };
}

describe('POST /flow/lifecycle', () => {
  it('accepts a signature made by openssl (base64 HMAC-SHA256 of the raw body with the app secret)', async () => {
    const { env, token } = await setup();
    const body = callback({ has_enabled_flow: true });
    const openssl = Bun.spawnSync(['sh', '-c', `printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$KEY" -binary | base64`], {
      env: { ...process.env, BODY: body, KEY: APP_SECRET },
    });
    const signature = openssl.stdout.toString().trim();
    expect(signature).toBe(hmacBase64(APP_SECRET, body));

    const r = await post(env, body, signature);
    expect(r).toEqual({ status: 200, json: { status: 'recorded' } });
    const { order, workflowEnabled } = await readiness(env, token);
    expect(order).toMatchObject({ handle: ORDER, hasEnabledFlow: true, updatedAt: '2026-11-20T10:00:00.000Z' });
    expect(workflowEnabled).toBe(false); // no active endpoint uses the trigger yet
    await createEndpoint(env, token);
    expect((await readiness(env, token)).workflowEnabled).toBe(true);
  });

  it('refuses a missing or wrong signature and records nothing', async () => {
    const { env, token } = await setup();
    const body = callback({ has_enabled_flow: true });
    expect(await post(env, body, null)).toMatchObject({ status: 401, json: { code: 'SVC_AUTH_HEADER_MISSING' } });
    expect(await post(env, body, hmacBase64('another-secret', body))).toMatchObject({ status: 401, json: { code: 'SVC_AUTH_FAILED' } });
    // Signed over different bytes than sent.
    expect(await post(env, body, hmacBase64(APP_SECRET, `${body} `))).toMatchObject({ status: 401, json: { code: 'SVC_AUTH_FAILED' } });
    expect((await readiness(env, token)).order.hasEnabledFlow).toBeNull();
    expect(env.log.lines.join('\n')).not.toContain(APP_SECRET);
    expect(JSON.stringify(await rows(env, 'SELECT * FROM audit_log'))).not.toContain(APP_SECRET);
  });

  it('answers 503 lifecycle_not_configured without an app secret, and says which variable to set', async () => {
    const { env } = await setup(null);
    const r = await post(env, callback());
    expect(r).toMatchObject({ status: 503, json: { code: 'lifecycle_not_configured' } });
    expect(env.log.lines.join('\n')).toContain('HOOKRELAY_SHOPIFY_APP_SECRET');
  });

  it('keeps the newest report: an older timestamp is ignored', async () => {
    const { env, token } = await setup();
    await post(env, callback({ has_enabled_flow: true, timestamp: '2026-11-20T10:00:00Z' }));
    const stale = await post(env, callback({ has_enabled_flow: false, timestamp: '2026-11-20T09:59:59Z' }));
    expect(stale).toEqual({ status: 200, json: { status: 'ignored', reason: 'stale' } });
    expect((await readiness(env, token)).order.hasEnabledFlow).toBe(true);
    await post(env, callback({ has_enabled_flow: false, timestamp: '2026-11-20T10:00:01Z' }));
    expect((await readiness(env, token)).order.hasEnabledFlow).toBe(false);
  });

  it('answers bad callbacks with stable codes, never a 500', async () => {
    const { env } = await setup();
    expect(await post(env, '{"has_enabled_flow":', undefined)).toMatchObject({ status: 400, json: { code: 'invalid_input' } });
    const missing = await post(env, JSON.stringify({ has_enabled_flow: 'yes', shopify_domain: 'demo.myshopify.com' }));
    expect(missing.status).toBe(400);
    expect(missing.json.message).toContain('flow_trigger_definition_id');
    expect(await post(env, callback({ shopify_domain: 'other.myshopify.com' }))).toMatchObject({ status: 404, json: { code: 'not_found' } });
    expect(await post(env, callback({ flow_trigger_definition_id: 'someone-elses-trigger' }))).toMatchObject({ status: 404, json: { code: 'not_found' } });
    expect(await post(env, callback(), undefined, 'GET')).toMatchObject({ status: 405, json: { code: 'method_not_allowed' } });
    const big = JSON.stringify({ pad: 'x'.repeat(70 * 1024) });
    expect(await post(env, big)).toMatchObject({ status: 413, json: { code: 'payload_too_large' } });
  });
});

describe('no_workflow', () => {
  it('ends an event no_workflow without calling Flow while no workflow is enabled; replayable once one is', async () => {
    const { env, token, worker } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id' });
    await post(env, callback({ has_enabled_flow: false, timestamp: '2026-11-20T10:00:00Z' }));

    const sent = await sendHook(env, endpoint, secret, orderEvent('ext-nowf'));
    expect(sent.status).toBe(202);
    const eventId = sent.json.eventId as string;
    await worker.drain();
    expect(fake.requests).toHaveLength(0);

    const before = (await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event;
    expect(before).toMatchObject({ outcome: 'no_workflow', code: 'SVC_NO_WORKFLOW', replayable: true, attempts: 1 });
    const health = (await call(env, 'GET', '/agent/v1/reliability/tenant?window=1h', { token })).json.data;
    expect(health.counts.noWorkflow).toBe(1);
    expect(health.reasons.join(' ')).toContain('no enabled workflow');

    // The merchant enables a workflow: Flow calls back, and a replay now reaches Flow.
    await post(env, callback({ has_enabled_flow: true, timestamp: '2026-11-20T10:05:00Z' }));
    const preview = await call(env, 'POST', `/agent/v1/events/${eventId}/replay-intents`, { token, body: { mode: 'preview', input: {} } });
    expect(preview.status).toBe(201);
    expect(preview.json.data.intent.preview.warnings.join(' ')).not.toContain('no enabled workflow');
    const exec = await executeIntent(env, token, `/agent/v1/events/${eventId}/replay-intents`, preview.json.data.intent, 'replay-after-enable');
    expect(exec.status).toBe(200);
    await worker.drain();
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.handle).toBe(ORDER);
    const after = (await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event;
    expect(after).toMatchObject({ outcome: 'delivered', code: null, attempts: 2 });
  });

  it('warns in the replay preview while Flow still reports no workflow', async () => {
    const { env, token, worker } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    await post(env, callback({ has_enabled_flow: false }));
    const eventId = (await sendHook(env, endpoint, secret, orderEvent('ext-warn'))).json.eventId;
    await worker.drain();
    const preview = await call(env, 'POST', `/agent/v1/events/${eventId}/replay-intents`, { token, body: { mode: 'preview', input: {} } });
    expect(preview.json.data.intent.preview.warnings.join(' ')).toContain('no enabled workflow');
  });

  it('hands off a trigger Flow never reported on (unknown is not "disabled")', async () => {
    const { env, token, worker } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    await post(env, callback({ flow_trigger_definition_id: TRIGGERS.customer.handle, has_enabled_flow: false }));
    const eventId = (await sendHook(env, endpoint, secret, orderEvent('ext-unknown'))).json.eventId;
    await worker.drain();
    expect(fake.requests).toHaveLength(1);
    expect((await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event.outcome).toBe('delivered');
  });
});
