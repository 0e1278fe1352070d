/**
 * Failed bearer authentication under a flood (REST and the MCP endpoint): 429 `auth_failure` per client address,
 * a valid token never refused, audit rows bounded and folded into counted summaries; the limiter's memory bound.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test';
import { AUTH_FAILURE_LIMITS } from '../../src/contract/limits.ts';
import { RateLimitedResponseSchema } from '../../src/contract/schemas.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { newGrantToken } from '../../src/lib/crypto.ts';
import { AuthFailureLimiter, clientKey, type SharedCounts } from '../../src/lib/auth-failures.ts';
import { openPgRepo } from '../../db/pg/repo.ts';
import { openSqliteRepo } from '../../db/sqlite/repo.ts';
import { TEST_DATABASE_URL, testSchema } from '../fixtures/storage.ts';
import { addGrant, addStore, BASE, createTestEnv, rows, type TestEnv } from '../helpers.ts';

// Floods of a few thousand requests and real sockets, on a machine the suite shares: no timing is asserted.
setDefaultTimeout(60_000);

const { perClient, windowMs, auditedPerClient, auditedPerWindow } = AUTH_FAILURE_LIMITS;

async function setup() {
  const env = await createTestEnv();
  await addStore(env);
  const token = await addGrant(env, 'observer');
  return { env, token };
}

/** GET an agent operation with `token` from `peer` (the socket address serve passes). */
async function get(env: TestEnv, token: string, peer: string | null, path = '/agent/v1/plan-usage') {
  const res = await env.app.fetch(new Request(`${BASE}${path}`, { headers: { authorization: `Bearer ${token}` } }), peer);
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

/** An MCP initialize with `token` from `peer`. */
async function mcpInitialize(env: TestEnv, token: string, peer: string) {
  const body = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  };
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const res = await env.app.fetch(new Request(`${BASE}/agent/v1/mcp`, { method: 'POST', headers, body: JSON.stringify(body) }), peer);
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

function anonymousAudit(env: TestEnv) {
  return rows<{ operationId: string; status: number; errorCode: string; transition: string | null }>(
    env,
    `SELECT operation_id AS "operationId", status, error_code AS "errorCode", transition FROM audit_log WHERE actor_kind = 'anonymous'`,
  );
}

/** Failures an anonymous audit row stands for: 1, or the count a folded summary names. */
function failuresOf(row: { transition: string | null }): number {
  const m = /^folded: (\d+) further failed authentications/.exec(row.transition ?? '');
  return m ? Number(m[1]) : 1;
}

describe('failed bearer authentication', () => {
  test('401 up to the per-client limit, then 429 RateLimitedResponse (auth_failure, client); a valid token still passes', async () => {
    const { env, token } = await setup();
    const bad = newGrantToken(); // well formed, but no grant
    for (let i = 0; i < perClient; i++) {
      const r = await get(env, bad, '203.0.113.7');
      expect(r.status).toBe(401);
      expect(r.json.error.code).toBe('unauthorized');
    }
    const limited = await get(env, bad, '203.0.113.7');
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
    const body = RateLimitedResponseSchema.parse(limited.json);
    expect(body).toMatchObject({
      actor: null,
      rateLimitClass: 'auth_failure',
      scope: 'client',
      retryAfterSeconds: retryAfter,
      error: { code: 'rate_limited' },
    });
    expect(JSON.stringify(limited.json)).not.toContain(bad);

    // A malformed header and a garbage token count the same.
    expect((await env.app.fetch(new Request(`${BASE}/agent/v1/plan-usage`), '203.0.113.7')).status).toBe(429);
    // The limited address with a valid token, and another address with a bad one, are not refused.
    expect((await get(env, token, '203.0.113.7')).status).toBe(200);
    expect((await get(env, 'hrg_nonsense', '198.51.100.2')).status).toBe(401);
    // IPv6 addresses are limited by their /64.
    for (let i = 0; i < perClient; i++) await get(env, bad, `2001:db8:1:2::${i.toString(16)}`);
    expect((await get(env, bad, '2001:db8:1:2:ffff::1')).status).toBe(429);
    expect((await get(env, bad, '2001:db8:1:3::1')).status).toBe(401);

    env.clock.advance(windowMs);
    expect((await get(env, bad, '203.0.113.7')).status).toBe(401);
  });

  test("the MCP endpoint's 401 counts against the same client and answers 429 past it", async () => {
    const { env, token } = await setup();
    const bad = newGrantToken();
    for (let i = 0; i < perClient - 1; i++) expect((await get(env, bad, '192.0.2.5')).status).toBe(401);
    const last = await mcpInitialize(env, bad, '192.0.2.5');
    expect(last.status).toBe(401);
    expect(last.json.error.code).toBe('unauthorized');
    const limited = await mcpInitialize(env, bad, '192.0.2.5');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(RateLimitedResponseSchema.parse(limited.json)).toMatchObject({ rateLimitClass: 'auth_failure', scope: 'client' });
    // A valid token is never refused by the failure limit.
    expect((await mcpInitialize(env, token, '192.0.2.5')).status).not.toBe(429);
  });

  test('2,000 bad tokens write a bounded number of audit rows; a summary row per window carries the rest', async () => {
    const { env } = await setup();
    const bad = newGrantToken();
    const statuses = new Map<number, number>();
    for (let round = 0; round < 20; round++) {
      const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => get(env, bad, round % 2 ? `10.0.${round}.${i}` : '10.9.9.9')));
      for (const r of replies) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
    expect(statuses.get(429)).toBeGreaterThan(0);
    // The window's allowance for all addresses together, then nothing per request.
    expect((await anonymousAudit(env)).length).toBe(auditedPerWindow);

    // The window ends; the next failure (any client) writes the summary of the folded ones.
    env.clock.advance(windowMs);
    await get(env, bad, '10.200.0.1');
    const after = await anonymousAudit(env);
    const summaries = after.filter((r) => r.transition?.startsWith('folded:'));
    expect(summaries).toEqual([
      { operationId: 'getPlanUsage', status: 401, errorCode: 'unauthorized', transition: expect.stringMatching(/^folded: \d+ further failed/) },
    ]);
    expect(after.length).toBe(auditedPerWindow + 2);
    expect(after.reduce((n, r) => n + failuresOf(r), 0)).toBe(2_001);
    expect(after.some((r) => JSON.stringify(r).includes(bad))).toBe(false);
  });

  test('one address gets at most its own allowance of audit rows per window', async () => {
    const { env } = await setup();
    for (let i = 0; i < perClient * 3; i++) await get(env, 'hrg_nope', '203.0.113.50');
    expect((await anonymousAudit(env)).length).toBe(auditedPerClient);
  });
});

describe('AuthFailureLimiter', () => {
  test('memory stays bounded while an attacker rotates addresses: the oldest entries are dropped, each window starts empty', async () => {
    const clock = new ManualClock();
    const limiter = new AuthFailureLimiter(clock, { ...AUTH_FAILURE_LIMITS, maxTracked: 100 });
    for (let i = 0; i < 5_000; i++) await limiter.fail(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, `ep_${i % 7}`);
    expect(limiter.tracked).toBe(100);
    clock.advance(AUTH_FAILURE_LIMITS.windowMs);
    await limiter.fail('10.0.0.1');
    expect(limiter.tracked).toBe(1);
  });

  test('Retry-After is the rest of the window, at least 1 s', async () => {
    const clock = new ManualClock(Date.parse('2026-06-17T12:00:59.900Z'));
    const limiter = new AuthFailureLimiter(clock, { ...AUTH_FAILURE_LIMITS, perClient: 1 });
    await limiter.fail('a');
    expect(await limiter.fail('a')).toMatchObject({ limited: true, scope: 'client', retryAfterSeconds: 1, resetAt: Date.parse('2026-06-17T12:01:00Z') });
    clock.set(Date.parse('2026-06-17T12:01:00Z'));
    await limiter.fail('a');
    expect((await limiter.fail('a')).retryAfterSeconds).toBe(60);
  });

  /** A storage's addRate, with the keys of every statement sent to it kept in `sent`. */
  async function sharedStorage(): Promise<{ shared: SharedCounts; sent: string[][]; close: () => Promise<void> }> {
    const repo = await openSqliteRepo({ path: ':memory:' });
    const sent: string[][] = [];
    const shared: SharedCounts = {
      addRate: (counts, windowStart) => {
        sent.push(counts.map((c) => c.key));
        return repo.addRate(counts, windowStart);
      },
    };
    return { shared, sent, close: () => repo.close() };
  }

  test('shared: two limiters on one storage allow one limit; past it each asks the storage once, then refuses alone', async () => {
    const { shared, sent, close } = await sharedStorage();
    try {
      const clock = new ManualClock();
      const limiters = [new AuthFailureLimiter(clock, AUTH_FAILURE_LIMITS, shared), new AuthFailureLimiter(clock, AUTH_FAILURE_LIMITS, shared)];
      const limited: boolean[] = [];
      for (let i = 0; i < 200; i++) limited.push((await limiters[i % 2]!.fail('203.0.113.1', 'ep_1')).limited);
      expect(limited.indexOf(true)).toBe(perClient);
      expect(limited.slice(perClient).every(Boolean)).toBe(true);
      expect(sent.filter((keys) => keys.includes('auth|c|203.0.113.1')).length).toBe(perClient + 2);
      // Failures refused locally count against no key: the endpoint still has room for another address.
      expect((await limiters[0]!.fail('203.0.113.2', 'ep_1')).limited).toBe(false);
      // A new window starts empty on both.
      clock.advance(windowMs);
      expect((await limiters[1]!.fail('203.0.113.1', 'ep_1')).limited).toBe(false);
    } finally {
      await close();
    }
  });

  test('shared: a flood from rotating addresses is one statement in flight per instance, not one per failure', async () => {
    const { shared, sent, close } = await sharedStorage();
    try {
      const limiter = new AuthFailureLimiter(new ManualClock(), AUTH_FAILURE_LIMITS, shared);
      const decisions = await Promise.all(Array.from({ length: 2_000 }, (_, i) => limiter.fail(`10.1.${i >> 8}.${i & 255}`)));
      expect(decisions.some((d) => d.limited)).toBe(false);
      expect(sent.length).toBeLessThanOrEqual(2);
      expect(sent.flat().length).toBe(2_000);
      // At an inbound endpoint the endpoint's limit holds exactly, and once it is found full nothing more is sent.
      const atEndpoint = await Promise.all(Array.from({ length: 500 }, (_, i) => limiter.fail(`10.2.${i >> 8}.${i & 255}`, 'ep_9')));
      expect(atEndpoint.filter((d) => !d.limited).length).toBe(AUTH_FAILURE_LIMITS.perEndpoint);
      expect(atEndpoint.filter((d) => d.limited).every((d) => d.scope === 'endpoint')).toBe(true);
      const before = sent.length;
      await Promise.all(Array.from({ length: 100 }, (_, i) => limiter.fail(`10.3.0.${i}`, 'ep_9')));
      expect(sent.length).toBe(before);
    } finally {
      await close();
    }
  });

  test.if(!!TEST_DATABASE_URL)('shared: while the storage does not answer, the instance counts alone', async () => {
    const repo = await openPgRepo({ url: TEST_DATABASE_URL!, schema: testSchema(), max: 2 });
    await repo.close();
    const limiter = new AuthFailureLimiter(new ManualClock(), AUTH_FAILURE_LIMITS, repo);
    const limited: boolean[] = [];
    for (let i = 0; i <= perClient; i++) limited.push((await limiter.fail('198.51.100.3')).limited);
    expect(limited).toEqual([...Array(perClient).fill(false), true]);
  });

  test('clientKey: IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64, unknown as null', () => {
    expect(clientKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64');
    expect(clientKey('2001:0db8:0000:0001:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:0:1::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey(null)).toBeNull();
    expect(clientKey('')).toBeNull();
  });
});
