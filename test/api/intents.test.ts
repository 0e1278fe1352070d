import { beforeEach, describe, expect, it } from 'bun:test';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, executeIntent, orderEvent, row, rows, sendHook, type TestEnv } from '../helpers.ts';

let env: TestEnv;
let token: string;

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env, { plan: 'free' }); // a capped plan: these tests reach its meters
  token = await addGrant(env, 'recovery_operator');
});

async function deliveredEvent() {
  const { endpoint, secret } = await createEndpoint(env, token);
  const sent = await sendHook(env, endpoint, secret, orderEvent(`e-${Math.random()}`));
  await new HandoffWorker(env.core).drain();
  return { endpoint, secret, eventId: sent.json.eventId as string };
}

const replayPath = (id: string) => `/agent/v1/events/${id}/replay-intents`;

describe('createReplayIntent', () => {
  it('previews (201, nothing changes), executes with confirmation and key (200), hands off again, audits', async () => {
    const { eventId } = await deliveredEvent();
    const p = await call(env, 'POST', replayPath(eventId), { token, body: { mode: 'preview', input: { reason: 'workflow fixed' } } });
    expect(p.status).toBe(201);
    const intent = p.json.data.intent;
    expect(intent).toMatchObject({ kind: 'replay', state: 'previewed', targetId: eventId });
    expect(intent.preview.sideEffects.join(' ')).toContain('Duplicate suppression is bypassed');
    expect(intent.preview.meterCost).toContainEqual({ meter: 'replay_executions', units: 1 });
    expect(intent.confirmation.token).toStartWith('cfm_');
    expect((await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event.attempts).toBe(1);

    const x = await call(env, 'POST', replayPath(eventId), {
      token,
      headers: { 'Idempotency-Key': 'k-1' },
      body: { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token },
    });
    expect(x.status).toBe(200);
    expect(x.json.data.intent.state).toBe('executed');
    expect(x.json.data.intent.confirmation).toBeNull();
    await new HandoffWorker(env.core).drain();
    const detail = (await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event;
    expect(detail.attempts).toBe(2);
    expect(detail.outcome).toBe('delivered');

    const audit = await env.repo.listAudit({ limit: 100 });
    const executions = audit.filter((a) => a.operationId === 'createReplayIntent' && a.transition === 'executed');
    expect(executions).toHaveLength(1);
    expect(executions[0]!.grantId).toBe(x.json.scope.grantId);
    expect(executions[0]!.targetId).toBe(eventId);
    expect(audit.some((a) => a.transition === 'previewed')).toBe(true);
  });

  it('replays an idempotent execute with the stored response, and 422 for the same key with another request', async () => {
    const { eventId } = await deliveredEvent();
    const intent = (await call(env, 'POST', replayPath(eventId), { token, body: { mode: 'preview', input: {} } })).json.data.intent;
    const body = { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token };
    const first = await call(env, 'POST', replayPath(eventId), { token, headers: { 'Idempotency-Key': 'same' }, body });
    const again = await call(env, 'POST', replayPath(eventId), { token, headers: { 'Idempotency-Key': 'same' }, body });
    expect(again.status).toBe(first.status);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json.data).toEqual(first.json.data);
    const other = await call(env, 'POST', replayPath(eventId), {
      token,
      headers: { 'Idempotency-Key': 'same' },
      body: { ...body, confirmationToken: 'cfm_other' },
    });
    expect(other.status).toBe(422);
    expect(other.json.error.code).toBe('idempotency_key_reused');
    const requeued = await count(env, 'attempts');
    await new HandoffWorker(env.core).drain();
    expect(await count(env, 'attempts')).toBe(requeued + 1);
  });

  it('runs concurrent executes with the same key once', async () => {
    const { eventId } = await deliveredEvent();
    const intent = (await call(env, 'POST', replayPath(eventId), { token, body: { mode: 'preview', input: {} } })).json.data.intent;
    const body = { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token };
    const replies = await Promise.all([1, 2, 3].map(() => call(env, 'POST', replayPath(eventId), { token, headers: { 'Idempotency-Key': 'race' }, body })));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(replies.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(2);
    const usage = await env.repo.getUsage(replies[0]!.json.scope.storeId, env.core.clock.now() - 1e12);
    expect(usage).toBeDefined();
    expect((await env.repo.listAudit({ limit: 100 })).filter((a) => a.transition === 'executed')).toHaveLength(1);
  });

  it('requires an Idempotency-Key to execute, refuses a reused or expired confirmation with 409', async () => {
    const { eventId } = await deliveredEvent();
    const preview = async () => (await call(env, 'POST', replayPath(eventId), { token, body: { mode: 'preview', input: {} } })).json.data.intent;
    const a = await preview();
    const body = { mode: 'execute', intentId: a.id, confirmationToken: a.confirmation.token };
    const noKey = await call(env, 'POST', replayPath(eventId), { token, body });
    expect(noKey.status).toBe(400);
    expect(noKey.json.error.details[0].path).toBe('header.Idempotency-Key');
    expect((await call(env, 'POST', replayPath(eventId), { token, headers: { 'Idempotency-Key': 'a1' }, body })).status).toBe(200);
    const reused = await call(env, 'POST', replayPath(eventId), { token, headers: { 'Idempotency-Key': 'a2' }, body });
    expect(reused.status).toBe(409);
    expect(reused.json.error.code).toBe('conflict');
    // It says the change is made, with its result, and never advises a step that would make it twice.
    expect(reused.json.refusal.code).toBe('intent_not_previewed');
    expect(reused.json.error.details.result.summary).toContain('queued for attempt 2');
    expect(reused.json.refusal.recommendedAction).toContain('Nothing to do');

    await new HandoffWorker(env.core).drain();
    const b = await preview();
    env.clock.advance(15 * 60_000 + 1);
    const expired = await call(env, 'POST', replayPath(eventId), {
      token,
      headers: { 'Idempotency-Key': 'b1' },
      body: { mode: 'execute', intentId: b.id, confirmationToken: b.confirmation.token },
    });
    expect(expired.status).toBe(409);
    expect(expired.json.error.details.state).toBe('expired');
    expect((await env.repo.getIntent(expired.json.scope.storeId, b.id))?.state).toBe('expired');
  });

  it('refuses a wrong confirmation token, replay of rejected events and of auth failures', async () => {
    const { endpoint, secret, eventId } = await deliveredEvent();
    const a = (await call(env, 'POST', replayPath(eventId), { token, body: { mode: 'preview', input: {} } })).json.data.intent;
    const wrong = await call(env, 'POST', replayPath(eventId), {
      token,
      headers: { 'Idempotency-Key': 'w' },
      body: { mode: 'execute', intentId: a.id, confirmationToken: 'cfm_nope' },
    });
    expect(wrong.status).toBe(409);

    const rejected = await sendHook(env, endpoint, secret, '{"order":{"id":"x"}}');
    const r = await call(env, 'POST', replayPath(rejected.json.eventId), { token, body: { mode: 'preview', input: {} } });
    expect(r.status).toBe(403);
    expect(r.json.refusal).toMatchObject({ category: 'target_state', code: 'event_rejected' });

    await sendHook(env, endpoint, secret, orderEvent('bad-sig'), { auth: '0'.repeat(64) });
    const storeId = (await row<{ id: string }>(env, 'SELECT id FROM stores'))!.id;
    const failure = (await env.repo.listAuthFailures(storeId))[0]!;
    expect(failure.id).toStartWith('af_');
    const af = await call(env, 'POST', replayPath(failure.id), { token, body: { mode: 'preview', input: {} } });
    expect(af.status).toBe(403);
    expect(af.json.refusal.category).toBe('safety');
  });

  it('is refused for an observer (scope) and 402 once the plan has no replays left', async () => {
    const { eventId } = await deliveredEvent();
    const observer = await addGrant(env, 'observer');
    const o = await call(env, 'POST', replayPath(eventId), { token: observer, body: { mode: 'preview', input: {} } });
    expect(o.status).toBe(403);
    expect(o.json.error.details.missingScopes).toEqual(['replay:execute']);

    const storeId = (await row<{ id: string; created_at: number }>(env, 'SELECT id, created_at FROM stores'))!;
    await env.repo.addUsage(storeId.id, 'replay_executions', storeId.created_at, 25);
    const capped = await call(env, 'POST', replayPath(eventId), { token, body: { mode: 'preview', input: {} } });
    expect(capped.status).toBe(402);
    expect(capped.json.error.code).toBe('plan_capacity_exhausted');
    expect(capped.json.refusal.category).toBe('usage');
  });

  it('answers 404 for an event of another store', async () => {
    const { eventId } = await deliveredEvent();
    await addStore(env, { shopDomain: 'other.myshopify.com' });
    const other = await addGrant(env, 'recovery_operator', { shop: 'other.myshopify.com' });
    expect((await call(env, 'POST', replayPath(eventId), { token: other, body: { mode: 'preview', input: {} } })).status).toBe(404);
  });
});

describe('rate limits', () => {
  it('answers 429 with Retry-After per grant, without touching another grant', async () => {
    const a = await addGrant(env, 'observer');
    const b = await addGrant(env, 'observer');
    for (let i = 0; i < 30; i++) expect((await call(env, 'GET', '/agent/v1/events', { token: a })).status).toBe(200);
    const limited = await call(env, 'GET', '/agent/v1/events', { token: a });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.json).toMatchObject({ rateLimitClass: 'rich_read', scope: 'grant' });
    expect(limited.json.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(limited.json.recommendedAction).toBeString();
    expect((await call(env, 'GET', '/agent/v1/events', { token: b })).status).toBe(200);
    env.clock.advance(60_000);
    expect((await call(env, 'GET', '/agent/v1/events', { token: a })).status).toBe(200);
  });

  it('audits 429s: the first per grant and operation in a window has its own row, the rest one summary row after it', async () => {
    const a = await addGrant(env, 'observer');
    for (let i = 0; i < 30; i++) await call(env, 'GET', '/agent/v1/events', { token: a });
    for (let i = 0; i < 21; i++) expect((await call(env, 'GET', '/agent/v1/events', { token: a })).status).toBe(429);
    const limited = async () => (await env.repo.listAudit({ limit: 1000 })).filter((r) => r.status === 429);
    expect(await limited()).toMatchObject([
      { operationId: 'listEvents', outcome: 'refused', errorCode: 'rate_limited', refusalCategory: 'usage', actorKind: 'agent' },
    ]);
    expect((await limited())[0]!.grantId).toBeString();
    env.clock.advance(60_000);
    expect((await call(env, 'GET', '/agent/v1/events', { token: a })).status).toBe(200);
    const rows = await limited();
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatchObject({ operationId: 'listEvents', outcome: 'refused', grantId: rows[0]!.grantId, storeId: rows[0]!.storeId });
    expect(rows[1]!.transition).toStartWith('folded: 20 further rate-limited calls');
  });
});

describe('endpoint intents', () => {
  const exec = (path: string, intent: { id: string; confirmation: { token: string } }, key: string, tk = token) => executeIntent(env, tk, path, intent, key);

  it('edits with a diff preview and a new config version', async () => {
    const { endpoint } = await createEndpoint(env, token);
    const path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { name: 'Renamed', requiredPaths: ['order.email'] } } });
    expect(p.json.data.intent.preview.changes).toEqual([
      { field: 'name', from: 'order events', to: 'Renamed' },
      { field: 'requiredPaths', from: [], to: ['order.email'] },
    ]);
    expect((await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token })).json.data.endpoint.name).toBe('order events');
    expect((await exec(path, p.json.data.intent, 'e1')).status).toBe(200);
    const after = (await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token })).json.data.endpoint;
    expect(after).toMatchObject({ name: 'Renamed', requiredPaths: ['order.email'], configVersion: 2 });
  });

  it('rotates the secret: the new one appears once, the old one works through the overlap', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    const path = `/agent/v1/endpoints/${endpoint.id}/secret-rotation-intents`;
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { overlapSeconds: 60 } } });
    expect(p.text).not.toContain(secret);
    const x = await exec(path, p.json.data.intent, 'r1');
    const fresh = x.json.data.intent.result.secret as string;
    expect(fresh).toStartWith('whsec_');
    const replay = await exec(path, p.json.data.intent, 'r1');
    expect(replay.text).not.toContain(fresh);
    expect(JSON.stringify(await rows(env, 'SELECT * FROM idempotency_keys'))).not.toContain(fresh);
    expect(JSON.stringify(await rows(env, 'SELECT * FROM intents'))).not.toContain(fresh);
    const updated = { ...endpoint, auth: { ...endpoint.auth } };
    expect((await sendHook(env, updated, fresh, orderEvent('new'))).status).toBe(202);
    expect((await sendHook(env, updated, secret, orderEvent('old'))).status).toBe(202);
    env.clock.advance(61_000);
    expect((await sendHook(env, updated, secret, orderEvent('old-2'))).status).toBe(401);
  });

  it('deletes in two stages: archive (operator-visible 404 for senders), then permanent for admin_assistant only', async () => {
    const admin = await addGrant(env, 'admin_assistant');
    const { endpoint, secret } = await createEndpoint(env, admin);
    const path = `/agent/v1/endpoints/${endpoint.id}/delete-intents`;
    expect((await call(env, 'POST', path, { token, body: { mode: 'preview', input: {} } })).status).toBe(403);
    const early = await call(env, 'POST', path, { token: admin, body: { mode: 'preview', input: { stage: 'permanent' } } });
    expect(early.json.refusal.code).toBe('endpoint_not_archived');
    const p = await call(env, 'POST', path, { token: admin, body: { mode: 'preview', input: {} } });
    expect((await exec(path, p.json.data.intent, 'd1', admin)).status).toBe(200);
    expect((await sendHook(env, endpoint, secret, orderEvent('after'))).status).toBe(404);
    const perm = await call(env, 'POST', path, { token: admin, body: { mode: 'preview', input: { stage: 'permanent' } } });
    expect((await exec(path, perm.json.data.intent, 'd2', admin)).status).toBe(200);
    expect((await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token: admin })).status).toBe(404);
  });
});

describe('a preview binds what it showed, and the grant it was shown to', () => {
  const exec = (path: string, intent: { id: string; confirmation: { token: string } }, key: string, tk = token) => executeIntent(env, tk, path, intent, key);
  const previewOf = async (path: string, input: unknown, tk = token) =>
    (await call(env, 'POST', path, { token: tk, body: { mode: 'preview', input } })).json.data.intent;

  /** The refusal of a stale preview: 409, target_state stale_preview, preview again. */
  const expectStale = (res: { status: number; json: any }) => {
    expect(res.status).toBe(409);
    expect(res.json.refusal).toMatchObject({ category: 'target_state', code: 'stale_preview' });
    expect(res.json.refusal.recommendedAction).toContain('preview again');
  };

  it('two edit previews: the second executed is refused stale_preview, and the version it did not show is not made', async () => {
    const { endpoint } = await createEndpoint(env, token);
    const path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
    const a = await previewOf(path, { name: 'name-A' });
    const b = await previewOf(path, { name: 'name-B' });
    expect(a.preview.sideEffects[0]).toContain('config version 2');
    expect((await exec(path, b, 'b')).status).toBe(200);
    const stale = await exec(path, a, 'a');
    expectStale(stale);
    expect(stale.json.refusal.reason).toContain('config version 2');
    const after = (await call(env, 'GET', `/agent/v1/endpoints/${endpoint.id}`, { token })).json.data.endpoint;
    expect(after).toMatchObject({ name: 'name-B', configVersion: 2 });
    expect((await row<{ state: string }>(env, 'SELECT state FROM intents WHERE id = ?', a.id))?.state).toBe('refused');
  });

  it('two rotation previews: the second is refused stale_preview and the original secret keeps its promised overlap', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    const path = `/agent/v1/endpoints/${endpoint.id}/secret-rotation-intents`;
    const first = await previewOf(path, { overlapSeconds: 3600 });
    const second = await previewOf(path, { overlapSeconds: 3600 });
    const rotated = await exec(path, first, 'r1');
    expect(rotated.status).toBe(200);
    const fresh = rotated.json.data.intent.result.secret as string;
    expectStale(await exec(path, second, 'r2'));
    env.clock.advance(1_800_000);
    expect((await sendHook(env, endpoint, secret, orderEvent('original-within-overlap'))).status).toBe(202);
    expect((await sendHook(env, endpoint, fresh, orderEvent('fresh'))).status).toBe(202);
  });

  it('a replay previewed before the event was replayed again is refused stale_preview: Flow gets it once more, not twice', async () => {
    const { eventId } = await deliveredEvent();
    const a = await previewOf(replayPath(eventId), { reason: 'first' });
    const b = await previewOf(replayPath(eventId), { reason: 'second' });
    expect((await exec(replayPath(eventId), a, 'ra')).status).toBe(200);
    await new HandoffWorker(env.core).drain();
    expectStale(await exec(replayPath(eventId), b, 'rb'));
    expect((await call(env, 'GET', `/agent/v1/events/${eventId}`, { token })).json.data.event.attempts).toBe(2);
  });

  it('a diagnostics share holds what its preview showed: an event received after the preview is not in it', async () => {
    const { endpoint, secret } = await createEndpoint(env, token);
    await sendHook(env, endpoint, secret, orderEvent('before'));
    const p = await previewOf('/agent/v1/diagnostics-share-intents', { window: '24h' });
    const shown = p.preview.changes[0].to.events as string[];
    const late = await sendHook(env, endpoint, secret, orderEvent('after-preview'));
    const x = await exec('/agent/v1/diagnostics-share-intents', p, 'diag');
    expect(x.status).toBe(200);
    const stored = JSON.parse((await row<any>(env, 'SELECT body FROM records WHERE id = ?', x.json.data.intent.result.resourceId)).body);
    expect(stored.events.map((e: { id: string }) => e.id)).toEqual(shown);
    expect(shown).not.toContain(late.json.eventId);
  });

  it('only the grant that previewed may execute: another grant of the store is refused, and the intent stays executable by its own', async () => {
    const { endpoint } = await createEndpoint(env, token);
    const path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
    const p = await previewOf(path, { name: 'mine' });
    const other = await addGrant(env, 'admin_assistant');
    const refused = await exec(path, p, 'o1', other);
    expect(refused.status).toBe(403);
    expect(refused.json.refusal).toMatchObject({ category: 'scope', code: 'intent_of_another_grant' });
    expect((await exec(path, p, 'o2')).status).toBe(200);
  });
});
