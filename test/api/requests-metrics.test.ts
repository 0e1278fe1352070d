/** `hookrelay_requests{kind}` on /metrics: the grant's store's requests by kind, read from the database at scrape time. Both backends. */
import { describe, expect, it } from 'bun:test';
import parse from 'parse-prometheus-text-format';
import { addGrant, addStore, call, createEndpoint, createTestEnv, executeIntent, type TestEnv } from '../helpers.ts';

async function scrape(env: TestEnv, token: string): Promise<Record<string, number>> {
  const r = await env.app.fetch(new Request('http://local/metrics', { headers: { authorization: `Bearer ${token}` } }));
  expect(r.status).toBe(200);
  const text = await r.text();
  const fam = parse(text).find((f) => f.name === 'hookrelay_requests')!;
  expect(fam.type).toBe('GAUGE');
  expect(fam.help).toContain('from the database');
  expect(text).not.toContain(token);
  return Object.fromEntries(fam.metrics.map((m) => [m.labels!.kind, Number(m.value)]));
}

describe('hookrelay_requests', () => {
  it("counts the grant's store's requests by kind, 0 for a kind it has none of, and nothing of another store's", async () => {
    const env = await createTestEnv();
    await addStore(env);
    const token = await addGrant(env, 'recovery_operator');
    const observer = await addGrant(env, 'observer');
    expect(await scrape(env, observer)).toEqual({ support: 0, feature: 0, expansion: 0, diagnostics: 0, data_request: 0 });

    for (const key of ['s-1', 's-2']) {
      const r = await call(env, 'POST', '/agent/v1/support-request-intents', {
        token,
        headers: { 'Idempotency-Key': key },
        body: { mode: 'submit', consent: true, input: { category: 'delivery', urgency: 'high', summary: key } },
      });
      expect(r.status).toBe(200);
    }
    expect(
      (await call(env, 'POST', '/agent/v1/feature-requests', { token, headers: { 'Idempotency-Key': 'f-1' }, body: { capability: 'x', problem: 'y' } })).status,
    ).toBe(201);
    const { endpoint } = await createEndpoint(env, token);
    const path = '/agent/v1/diagnostics-share-intents';
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { endpointIds: [endpoint.id] } } });
    expect((await executeIntent(env, token, path, p.json.data.intent, 'd-1')).status).toBe(200);
    expect(await scrape(env, observer)).toEqual({ support: 2, feature: 1, expansion: 0, diagnostics: 1, data_request: 0 });

    await addStore(env, { shopDomain: 'other.myshopify.com' });
    const other = await addGrant(env, 'observer', { shop: 'other.myshopify.com' });
    expect(await scrape(env, other)).toEqual({ support: 0, feature: 0, expansion: 0, diagnostics: 0, data_request: 0 });
    expect(
      await call(env, 'POST', '/agent/v1/expansion-requests', {
        token: await addGrant(env, 'operator', { shop: 'other.myshopify.com' }),
        headers: { 'Idempotency-Key': 'x-1' },
        body: { kind: 'multi_store', summary: 'two' },
      }).then((r) => r.status),
    ).toBe(201);
    expect(await scrape(env, other)).toEqual({ support: 0, feature: 0, expansion: 1, diagnostics: 0, data_request: 0 });
    expect(await scrape(env, observer)).toEqual({ support: 2, feature: 1, expansion: 0, diagnostics: 1, data_request: 0 });
  });
});
