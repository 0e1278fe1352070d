/**
 * GET /metrics with a metrics token (src/ops/metrics-tokens.ts): what a grant of its store sees, no expiry, 401 once
 * revoked, failures limited and audited as the API's are, never the token at rest. Runs on either backend.
 */
import { beforeAll, describe, expect, it } from 'bun:test';
import parse, { type MetricFamily } from 'parse-prometheus-text-format';
import { AUTH_FAILURE_LIMITS } from '../../src/contract/limits.ts';
import { randomBase62 } from '../../src/lib/ids.ts';
import { maskSecretsIn, redactSecretsIn } from '../../src/lib/redact.ts';
import { issueMetricsToken, listMetricsTokens, revokeMetricsToken } from '../../src/ops/metrics-tokens.ts';
import { dumpDatabase } from '../security/dump.ts';
import { addGrant, addStore, BASE, createTestEnv, rows, type TestEnv } from '../helpers.ts';

const { perClient, windowMs } = AUTH_FAILURE_LIMITS;

/** GET /metrics with `token` from `peer` (the socket address serve passes). */
function scrape(env: TestEnv, token: string | null, peer: string | null = null, headers: Record<string, string> = {}) {
  const auth: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  return env.app.fetch(new Request(`${BASE}/metrics`, { headers: { ...auth, ...headers } }), peer);
}

async function families(res: Response): Promise<MetricFamily[]> {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parse(await res.text());
}

/** Name and labels of every series but the process's own figures, which move between two scrapes. */
function seriesOf(fs: MetricFamily[]): string[] {
  return fs
    .filter((f) => !f.name.startsWith('process_'))
    .flatMap((f) => f.metrics.map((m) => `${f.name}${JSON.stringify((m as { labels?: unknown }).labels ?? {})}`))
    .sort();
}

function value(fs: MetricFamily[], name: string): number {
  return Number(fs.find((f) => f.name === name)!.metrics[0]!.value);
}

function scrapeAudit(env: TestEnv) {
  return rows<{ actorKind: string; status: number; errorCode: string; transition: string | null }>(
    env,
    `SELECT actor_kind AS "actorKind", status, error_code AS "errorCode", transition FROM audit_log WHERE operation_id = 'scrapeMetrics'`,
  );
}

describe('GET /metrics with a metrics token', () => {
  let env: TestEnv;
  let grant: string;
  let issued: Awaited<ReturnType<typeof issueMetricsToken>>;

  beforeAll(async () => {
    env = await createTestEnv();
    await addStore(env);
    grant = await addGrant(env, 'observer');
    issued = await issueMetricsToken(env.core, { label: 'prometheus' });
  });

  it('is hrm_ and 43 base62 characters, bound to the only store, shown once; the redactor knows its shape', () => {
    expect(issued.token).toMatch(/^hrm_[0-9A-Za-z]{43}$/);
    expect(issued).toMatchObject({ shopDomain: 'demo.myshopify.com', label: 'prometheus', state: 'active', revokedAt: null });
    expect(issued.tokenId).toMatch(/^mtk_[0-9a-f]{16}$/);
    expect(redactSecretsIn(`t ${issued.token}`)).toBe('t [redacted metrics token]');
    expect(maskSecretsIn(issued.token)).toBe(`****${issued.token.slice(-4)}`);
  });

  it('scrapes exactly the series a grant of its store sees, and never expires with grants', async () => {
    const withToken = await families(await scrape(env, issued.token));
    const withGrant = await families(await scrape(env, grant));
    expect(seriesOf(withToken)).toEqual(seriesOf(withGrant));
    expect(withToken.find((f) => f.name === 'hookrelay_handoff_backlog')?.type).toBe('GAUGE');
    env.clock.advance(400 * 86400_000); // past any grant's 90 days
    expect((await scrape(env, grant)).status).toBe(401);
    expect(value(await families(await scrape(env, issued.token)), 'hookrelay_handoff_backlog')).toBe(0);
  });

  it('answers 403 for another store in the expected-context headers, not counted as a failed authentication', async () => {
    const res = await scrape(env, issued.token, '203.0.113.8', { 'X-Service-Expected-Shop-Domain': 'other.myshopify.com' });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe('agent_context_mismatch');
    expect(await scrapeAudit(env)).toEqual([]);
  });

  it('a wrong or malformed token answers 401 through the failed-authentication limiter: audited, then 429, while a valid token passes', async () => {
    const wrong = `hrm_${randomBase62(32)}`;
    const first = await scrape(env, wrong, '203.0.113.7');
    expect(first.status).toBe(401);
    expect(first.headers.get('www-authenticate')).toContain('Bearer');
    const body = (await first.json()) as any;
    expect(body.error.code).toBe('unauthorized');
    expect(body.error.message).toBe('The bearer token is not a valid metrics token.');
    expect((await scrape(env, 'hrm_short', '203.0.113.7')).status).toBe(401);
    for (let i = 2; i < perClient; i++) expect((await scrape(env, wrong, '203.0.113.7')).status).toBe(401);
    const limited = await scrape(env, wrong, '203.0.113.7');
    expect(limited.status).toBe(429);
    expect(((await limited.json()) as any).rateLimitClass).toBe('auth_failure');
    expect((await scrape(env, issued.token, '203.0.113.7')).status).toBe(200);
    expect((await scrape(env, wrong, '198.51.100.1')).status).toBe(401); // another client has its own window

    const audited = await scrapeAudit(env);
    expect(audited.length).toBeGreaterThanOrEqual(AUTH_FAILURE_LIMITS.auditedPerClient);
    expect(audited.every((r) => r.actorKind === 'anonymous' && r.errorCode === 'unauthorized' && r.status === 401)).toBe(true);
    env.clock.advance(windowMs);
  });

  it('answers 401 on the next scrape after a revoke (no cache), while a grant still works; revoking twice changes nothing', async () => {
    const fresh = await addGrant(env, 'observer');
    expect((await scrape(env, issued.token)).status).toBe(200);
    const revoked = await revokeMetricsToken(env.core, issued.tokenId);
    expect(revoked).toMatchObject({ tokenId: issued.tokenId, state: 'revoked', alreadyRevoked: false });
    const res = await scrape(env, issued.token, '203.0.113.9');
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.message).toContain('revoked');
    expect((await scrape(env, fresh)).status).toBe(200);
    expect(await revokeMetricsToken(env.core, issued.tokenId)).toMatchObject({ revokedAt: revoked.revokedAt, alreadyRevoked: true });
    await expect(revokeMetricsToken(env.core, 'mtk_0000000000000000')).rejects.toMatchObject({ code: 'not_found' });
    await expect(revokeMetricsToken(env.core, issued.token)).rejects.toMatchObject({ code: 'invalid_input' });
  });

  it('the token is nowhere at rest or in the list: only its SHA-256, as a setting key', async () => {
    const listed = await listMetricsTokens(env.core);
    expect(listed.map((t) => [t.tokenId, t.state, t.label])).toEqual([[issued.tokenId, 'revoked', 'prometheus']]);
    expect(JSON.stringify(listed)).not.toContain(issued.token);
    const dump = await dumpDatabase(env);
    const all = JSON.stringify(dump);
    expect(all).not.toContain(issued.token);
    expect(all).not.toContain(issued.token.slice(4));
    expect(dump.settings).toContain(new Bun.CryptoHasher('sha256').update(issued.token).digest('hex'));
  });
});

describe('metrics tokens on a box with several stores', () => {
  it("need --shop, and see their own store's figures only", async () => {
    const env = await createTestEnv();
    await addStore(env);
    await addStore(env, { shopDomain: 'other.myshopify.com' });
    await expect(issueMetricsToken(env.core, {})).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(issueMetricsToken(env.core, { shopDomain: 'nope.myshopify.com' })).rejects.toMatchObject({ code: 'not_found' });
    const other = await issueMetricsToken(env.core, { shopDomain: 'Other.myshopify.com' });
    expect(other.shopDomain).toBe('other.myshopify.com');
    const grantOfOther = await addGrant(env, 'observer', { shop: 'other.myshopify.com' });
    expect(seriesOf(await families(await scrape(env, other.token)))).toEqual(seriesOf(await families(await scrape(env, grantOfOther))));
    expect((await listMetricsTokens(env.core, 'demo.myshopify.com')).length).toBe(0);
    expect((await listMetricsTokens(env.core, 'other.myshopify.com')).map((t) => t.tokenId)).toEqual([other.tokenId]);
  });

  it('refuses a label shaped like a token, unechoed', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const label = `hrm_${randomBase62(32)}`;
    const err = await issueMetricsToken(env.core, { label }).catch((e) => e);
    expect(err.code).toBe('invalid_input');
    expect(err.message).not.toContain(label);
    expect(await listMetricsTokens(env.core)).toEqual([]);
  });
});
