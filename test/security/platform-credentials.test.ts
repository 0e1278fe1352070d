/**
 * Canaries for the platform's credentials: the app's client secret, every Admin API token Shopify issued and a
 * static token are planted through the real paths (tokens obtained, renewed on a 401, refused, probed, a bad
 * client), then looked for in every read, the store listing, /metrics, every log line, and every column of every
 * table. Tokens may exist only sealed, and the seal opens to the current token.
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { showStores } from '../../src/ops/stores.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, orderEvent, rows, sendHook, type TestEnv } from '../helpers.ts';
import { dumpDatabase } from './dump.ts';

const CLIENT_SECRET = 'shpss_client_secret_canary_5c1e';
const STATIC_TOKEN = 'shpat_static_token_canary_91d0';
let env: TestEnv;
const fake = fakeShopifyForFile({
  token: STATIC_TOKEN,
  app: { clientId: 'canary-client-0001', clientSecret: CLIENT_SECRET, tokenTtlSeconds: 60 },
  now: () => (env ? env.clock.now() : Date.now()),
});

const texts: { label: string; text: string }[] = [];
let token: string;

beforeAll(async () => {
  env = await createTestEnv({
    shopifyAdminUrl: fake.url,
    env: (n) => (n === 'CANARY_CLIENT_SECRET' ? CLIENT_SECRET : n === 'CANARY_STATIC' ? STATIC_TOKEN : undefined),
  });
  await addStore(env, { destination: 'shopify', auth: 'client-credentials', clientId: 'canary-client-0001', clientSecretEnv: 'CANARY_CLIENT_SECRET' });
  await addStore(env, { shopDomain: 'static.myshopify.com', destination: 'shopify', adminTokenEnv: 'CANARY_STATIC' });
  token = await addGrant(env, 'admin_assistant');
  const staticGrant = await addGrant(env, 'admin_assistant', { shop: 'static.myshopify.com' });
  const { endpoint, secret } = await createEndpoint(env, token);
  const staticEp = await createEndpoint(env, staticGrant);
  const worker = new HandoffWorker(env.core);
  const read = async (path: string, grant = token) => {
    const r = await call(env, 'GET', path, { token: grant });
    texts.push({ label: `GET ${path}`, text: `${r.status} ${JSON.stringify([...r.headers.entries()])} ${r.text}` });
  };
  const reads = async () => {
    for (const path of [
      '/agent/v1/setup-state',
      '/agent/v1/reliability/tenant',
      '/agent/v1/reliability/destination',
      '/agent/v1/events?limit=100',
      '/agent/v1/manifest',
    ])
      await read(path);
    await read('/agent/v1/setup-state', staticGrant);
    const metrics = await env.app.fetch(new Request('http://local/metrics', { headers: { authorization: `Bearer ${token}` } }));
    texts.push({ label: 'GET /metrics', text: await metrics.text() });
    texts.push({ label: 'store show', text: JSON.stringify(await showStores(env.core)) });
  };

  // Tokens obtained, used, renewed after an early death (a 401), the platform refusing (pause, probes), then a
  // client the platform will not take, then all well again; a read of everything at each stage.
  for (let i = 0; i < 3; i++) await sendHook(env, endpoint, secret, orderEvent(`c-${i}`));
  await sendHook(env, staticEp.endpoint, staticEp.secret, orderEvent('s-0'));
  await worker.drain();
  await reads();
  fake.expireIssuedTokens();
  await sendHook(env, endpoint, secret, orderEvent('c-after-expiry'));
  await worker.drain();
  fake.refuseAllTokens(true);
  await sendHook(env, endpoint, secret, orderEvent('c-refused'));
  await sendHook(env, staticEp.endpoint, staticEp.secret, orderEvent('s-refused'));
  await worker.drain();
  env.clock.advance(20_000);
  await worker.drain();
  await reads();
  fake.refuseAllTokens(false);
  fake.failTokenRequests('invalid_client');
  env.clock.advance(120_000);
  await worker.drain();
  await reads();
  fake.failTokenRequests(null);
  env.clock.advance(120_000);
  await worker.drain();
  await reads();
  const events = (await rows<{ id: string }>(env, 'SELECT id FROM events')).map((r) => r.id);
  for (const id of events) await read(`/agent/v1/events/${id}`);
});

describe('platform credentials canary', () => {
  test('the run really obtained, renewed and used tokens, and paused and resumed', async () => {
    expect(fake.issuedTokenValues().length).toBeGreaterThanOrEqual(3);
    expect(fake.requests.filter((r) => r.behaviour === 'ok').length).toBeGreaterThanOrEqual(5);
    expect(fake.tokenRequests.some((t) => t.outcome === 'invalid_client')).toBe(true);
    expect(env.log.lines.some((l) => l.includes('handoff paused'))).toBe(true);
    expect(env.log.lines.some((l) => l.includes('handoff resumed'))).toBe(true);
    expect((await rows(env, "SELECT id FROM events WHERE outcome <> 'delivered'")).length).toBe(0);
  });

  test('no client secret, issued token or static token in any read, /metrics, store show or log line', () => {
    const planted = [CLIENT_SECRET, STATIC_TOKEN, ...fake.issuedTokenValues()];
    expect(texts.length).toBeGreaterThan(20);
    for (const value of planted) {
      for (const t of texts) if (t.text.includes(value)) throw new Error(`credential leaked in ${t.label}`);
      for (const line of env.log.lines) if (line.includes(value)) throw new Error(`credential leaked in a log line: ${line.slice(0, 80)}`);
    }
    for (const t of texts) expect(t.text).not.toMatch(/shp(at|ss)_[0-9A-Za-z]{6,}/);
    // The reads did describe the credentials (by name) and the pause.
    const show = texts.find((t) => t.label === 'store show')!.text;
    expect(show).toContain('CANARY_CLIENT_SECRET');
    expect(texts.some((t) => t.text.includes('SVC_CREDENTIALS_REFUSED'))).toBe(true);
  });

  test('in the database: no secret or token in clear in any column of any table; the current token only sealed', async () => {
    const dump = await dumpDatabase(env);
    expect(Object.keys(dump)).toContain('platform_links');
    for (const value of [CLIENT_SECRET, STATIC_TOKEN, ...fake.issuedTokenValues()]) {
      for (const [table, text] of Object.entries(dump)) if (text.includes(value)) throw new Error(`credential stored in clear in ${table}`);
    }
    for (const text of Object.values(dump)) expect(text).not.toMatch(/shp(at|ss)_/);
    const sealed = await rows<{ token_sealed: string | null; token_client_id: string | null }>(
      env,
      'SELECT token_sealed, token_client_id FROM platform_links WHERE token_sealed IS NOT NULL',
    );
    expect(sealed).toHaveLength(1); // the static store's token is never stored
    expect(sealed[0]!.token_sealed).toMatch(/^v1\./);
    expect(fake.issuedTokenValues()).toContain(env.core.box.open(sealed[0]!.token_sealed!));
  });
});
