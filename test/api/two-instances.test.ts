/**
 * Two app instances on one PostgreSQL database behave as one box to a client: one rate limit per grant and store,
 * one failed-authentication limit per address and endpoint, one execution per Idempotency-Key, one meter. Runs when
 * HOOKRELAY_TEST_DATABASE_URL is set (CI sets it).
 */
import { describe, expect, it } from 'bun:test';
import { RETRY_SAME_KEY } from '../../src/contract/errors.ts';
import { AUTH_FAILURE_LIMITS, DEFAULT_RATE_LIMITS } from '../../src/contract/limits.ts';
import { newGrantToken } from '../../src/lib/crypto.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { startServer } from '../../src/server/serve.ts';
import { until } from '../fixtures/handoff.ts';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';
import { addGrant, addStore, BASE, call, createEndpoint, executeIntent, orderEvent, pgInstances, row, sendHook, type TestEnv } from '../helpers.ts';
import { runnerOf } from '../../db/runner.ts';

async function twoInstances(): Promise<[TestEnv, TestEnv, () => Promise<void>]> {
  const { envs, close } = await pgInstances(2, { max: 4, config: { rateLimits: { ...DEFAULT_RATE_LIMITS, simple_read: { grant: 6, store: 100 } } } });
  return [envs[0]!, envs[1]!, close];
}

const { perClient, perEndpoint } = AUTH_FAILURE_LIMITS;

/** GET an agent operation with `token` from the socket address `peer`. */
async function getFrom(env: TestEnv, token: string, peer: string) {
  const res = await env.app.fetch(new Request(`${BASE}/agent/v1/plan-usage`, { headers: { authorization: `Bearer ${token}` } }), peer);
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

/** The shared count of a failed-authentication window key, straight from rate_counters. */
async function sharedCount(env: TestEnv, key: string): Promise<number> {
  return Number((await row<{ n: number }>(env, 'SELECT coalesce(sum(n), 0) AS n FROM rate_counters WHERE key = ?', key))?.n ?? 0);
}

describe.if(!!TEST_DATABASE_URL)('two instances on one PostgreSQL, seen from a client', () => {
  it('share one rate-limit window: the grant limit counts calls on both', async () => {
    const [a, b, close] = await twoInstances();
    try {
      await addStore(a);
      const token = await addGrant(a);
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await call(i % 2 ? a : b, 'GET', '/agent/v1/grant', { token })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    } finally {
      await close();
    }
  });

  it('share one failed-authentication limit per address: bad bearer tokens alternating between them', async () => {
    const [a, b, close] = await twoInstances();
    try {
      await addStore(a);
      const token = await addGrant(a, 'observer');
      const bad = newGrantToken();
      const statuses: number[] = [];
      for (let i = 0; i < perClient + 10; i++) statuses.push((await getFrom(i % 2 ? a : b, bad, '203.0.113.9')).status);
      expect(statuses).toEqual([...Array(perClient).fill(401), ...Array(10).fill(429)]);
      const limited = await getFrom(a, bad, '203.0.113.9');
      expect(limited.json).toMatchObject({ rateLimitClass: 'auth_failure', scope: 'client' });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // A valid token from the limited address passes on both; only failures are counted and refused.
      for (const env of [a, b]) expect((await getFrom(env, token, '203.0.113.9')).status).toBe(200);
      // Each instance asked the storage once past the limit, then refused on its own: no write per failed request.
      expect(await sharedCount(a, 'auth|c|203.0.113.9')).toBe(perClient + 2);
      // The window ends for both.
      a.clock.advance(AUTH_FAILURE_LIMITS.windowMs);
      expect((await getFrom(b, bad, '203.0.113.9')).status).toBe(401);
    } finally {
      await close();
    }
  });

  it('share one failed-authentication limit per inbound endpoint: an attacker rotating addresses across both', async () => {
    const [a, b, close] = await twoInstances();
    try {
      await addStore(a);
      const token = await addGrant(a, 'admin_assistant');
      const { endpoint, secret } = await createEndpoint(a, token);
      const body = orderEvent('rotating');
      const post = async (env: TestEnv, sig: string, peer: string) => {
        const headers = { 'content-type': 'application/json', [endpoint.auth.headerName]: sig };
        const res = await env.app.fetch(new Request(`${BASE}/hooks/${endpoint.id}`, { method: 'POST', headers, body }), peer);
        return { status: res.status, json: (await res.json()) as any };
      };
      const statuses: number[] = [];
      for (let i = 0; i < perEndpoint + 4; i++) statuses.push((await post(i % 2 ? a : b, '0'.repeat(64), `192.0.2.${i}`)).status);
      expect(statuses).toEqual([...Array(perEndpoint).fill(401), ...Array(4).fill(429)]);
      const limited = await post(a, '0'.repeat(64), '192.0.2.250');
      expect(limited.json.message).toContain('for this endpoint');
      // A correctly signed event still passes on both.
      expect((await sendHook(a, endpoint, secret, orderEvent('ok-a'))).status).toBe(202);
      expect((await sendHook(b, endpoint, secret, orderEvent('ok-b'))).status).toBe(202);
    } finally {
      await close();
    }
  });

  it('hold the limit exactly under a concurrent flood on both at once', async () => {
    const [a, b, close] = await twoInstances();
    try {
      await addStore(a);
      const bad = newGrantToken();
      const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => getFrom(i % 2 ? a : b, bad, '198.51.100.77')));
      expect(replies.filter((r) => r.status === 401).length).toBe(perClient);
      expect(replies.filter((r) => r.status === 429).length).toBe(200 - perClient);
      // What reached the storage is bounded by what was in flight, not by the flood: later failures stay local.
      for (let i = 0; i < 200; i++) await getFrom(i % 2 ? a : b, bad, '198.51.100.77');
      const n = await sharedCount(a, 'auth|c|198.51.100.77');
      expect((await Promise.all(Array.from({ length: 50 }, (_, i) => getFrom(i % 2 ? a : b, bad, '198.51.100.77')))).every((r) => r.status === 429)).toBe(true);
      expect(await sharedCount(a, 'auth|c|198.51.100.77')).toBe(n);
    } finally {
      await close();
    }
  });

  it('run one execute per Idempotency-Key: the same key sent to both at once executes once', async () => {
    const [a, b, close] = await twoInstances();
    try {
      await addStore(a);
      const token = await addGrant(a);
      const { endpoint, secret } = await createEndpoint(a, token);
      const sent = await sendHook(a, endpoint, secret, orderEvent('ext-1'));
      await new HandoffWorker(a.core).drain();
      const path = `/agent/v1/events/${sent.json.eventId}/replay-intents`;
      const preview = await call(b, 'POST', path, { token, body: { mode: 'preview', input: { reason: 'Flow was off' } } });
      expect(preview.status).toBe(201);
      const intent = preview.json.data.intent;
      const answers = await Promise.all([a, b, a, b].map((env) => executeIntent(env, token, path, intent, 'replay-once')));
      const executed = answers.filter((r) => r.status === 200);
      // Each answer is the one execution, replayed, or 409 while it was in flight on the other instance.
      expect(executed.length).toBeGreaterThanOrEqual(1);
      for (const r of answers) expect([200, 409]).toContain(r.status);
      for (const r of executed) expect(r.json.data).toEqual(executed[0]!.json.data);
      // A 409 is the key's claim held by the other instance, never a second try at the intent itself.
      for (const r of answers.filter((x) => x.status === 409)) expect(r.json.error.message).toContain('still in progress on another instance');
      expect(executed[0]!.json.data.intent.state).toBe('executed');
      const audit = await a.core.repo.listAudit({ limit: 100 });
      expect(audit.filter((row) => row.intentId === intent.id && row.transition === 'executed')).toHaveLength(1);
      // Once it has finished, the key replays the stored answer on either instance.
      for (const env of [a, b]) {
        const again = await executeIntent(env, token, path, intent, 'replay-once');
        expect(again.status).toBe(200);
      }
    } finally {
      await close();
    }
  });

  it('advise a retry with the same key, never a fresh preview, on every 409 for an execute running on the other instance', async () => {
    const [a, b, close] = await twoInstances();
    try {
      await addStore(a);
      const token = await addGrant(a);
      const { endpoint, secret } = await createEndpoint(a, token);
      const sent = await sendHook(a, endpoint, secret, orderEvent('ext-409'));
      await new HandoffWorker(a.core).drain();
      const path = `/agent/v1/events/${sent.json.eventId}/replay-intents`;
      const intent = (await call(b, 'POST', path, { token, body: { mode: 'preview', input: { reason: 'Flow was off' } } })).json.data.intent;
      // A holds its execute at a gate: first after claiming the key (before reading the intent), then after claiming the intent.
      const reached: string[] = [];
      /** Holds the first call of `target[name]` (for which `when` holds) until the function returned is called. */
      const hold = <T extends object, K extends keyof T>(target: T, name: K, label: string, when: (args: unknown[]) => boolean = () => true) => {
        let open!: () => void;
        const gate = new Promise<void>((r) => (open = r));
        const original = (target[name] as (...args: unknown[]) => Promise<unknown>).bind(target);
        (target as Record<K, unknown>)[name] = async (...args: unknown[]) => {
          if (!reached.includes(label) && when(args)) {
            reached.push(label);
            await gate;
          }
          return original(...args);
        };
        return open;
      };
      const afterKey = hold(a.core.repo, 'getIntent', 'key claimed');
      const first = executeIntent(a, token, path, intent, 'exec-409');
      await until(async () => reached.includes('key claimed'), 5_000);
      // The same key on B while A holds it: the key's claim is the other instance's.
      const sameKey = await executeIntent(b, token, path, intent, 'exec-409');
      // Another key on B while A executes the intent (A now waits just before its commit).
      const beforeCommit = hold(runnerOf(a.core.repo), 'batch', 'intent claimed', (args) => JSON.stringify(args).includes("SET state = 'executed'"));
      afterKey();
      await until(async () => reached.includes('intent claimed'), 5_000);
      const otherKey = await executeIntent(b, token, path, intent, 'exec-409-b');
      expect(sameKey.status).toBe(409);
      expect(sameKey.json.refusal.code).toBe('request_in_progress');
      expect(sameKey.json.refusal.reason).toContain('retry with the same key');
      expect(otherKey.status).toBe(409);
      expect(otherKey.json.refusal.code).toBe('intent_executing');
      for (const r of [sameKey, otherKey]) {
        expect(r.json.refusal.category).toBe('target_state');
        expect(r.json.refusal.recommendedAction).toBe(RETRY_SAME_KEY);
        expect(r.json.refusal.recommendedAction).toContain('same Idempotency-Key');
        expect(r.json.refusal.recommendedAction).not.toMatch(/then preview|preview a fresh|preview again and/i);
        expect(r.headers.get('retry-after')).toBe('1');
      }
      beforeCommit();
      const done = await first;
      expect(done.status).toBe(200);
      // Following the advice gets the one execution's answer; it never makes the change twice.
      const retried = await executeIntent(b, token, path, intent, 'exec-409');
      expect(retried.status).toBe(200);
      expect(retried.json.data).toEqual(done.json.data);
      const audit = await a.core.repo.listAudit({ limit: 100 });
      expect(audit.filter((r) => r.intentId === intent.id && r.transition === 'executed')).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it('an endpoint archived on one instance stops intake on the other at once (a signal, not the cache TTL)', async () => {
    const [a, b, close] = await twoInstances();
    // Serving (not only in process): serve wires the signals. The manual clock never ages B's endpoint cache.
    const servers = await Promise.all([a, b].map((env) => startServer(env.core, { port: 0, host: '127.0.0.1', worker: false, logRequests: false })));
    try {
      await addStore(a);
      const admin = await addGrant(a, 'admin_assistant');
      const { endpoint, secret } = await createEndpoint(a, admin);
      const hook = (env: TestEnv, ext: string) => sendHook({ ...env, app: servers[env === a ? 0 : 1]!.app }, endpoint, secret, orderEvent(ext));
      expect((await hook(b, 'before')).status).toBe(202); // B has the endpoint cached
      const path = `/agent/v1/endpoints/${endpoint.id}/delete-intents`;
      const p = await call({ ...a, app: servers[0]!.app }, 'POST', path, { token: admin, body: { mode: 'preview', input: {} } });
      expect((await executeIntent({ ...a, app: servers[0]!.app }, admin, path, p.json.data.intent, 'archive-1')).status).toBe(200);
      await until(async () => (await hook(b, `after-${Math.random()}`)).status === 404, 5_000);
    } finally {
      for (const s of servers) await s.stop().catch(() => {});
      await close().catch(() => {});
    }
  });
});
