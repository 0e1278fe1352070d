import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEndpoint, orderEvent, sendHook } from '../helpers.ts';
import { cli, closedPort, scratchHome, startApi, type Api } from './harness.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

let api: Api;
let home: ReturnType<typeof scratchHome>;
let operator: string;
let observer: string;

beforeAll(async () => {
  api = await startApi();
  home = scratchHome();
  operator = await api.grant('operator');
  observer = await api.grant('observer');
});

afterAll(async () => {
  await api.stop();
  home.cleanup();
});

const run = (args: string[], env: Record<string, string | undefined> = {}, stdin?: string) =>
  cli(args, { home: home.dir, env: { HOOKRELAY_BASE_URL: api.url, ...env }, stdin });

function file(name: string, content: unknown): string {
  const p = join(home.dir, name);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

describe('status and docs', () => {
  it('status prints the public aggregate status without a token', async () => {
    const r = await run(['status']);
    expect(r.code).toBe(0);
    expect(r.json.status).toBe('operational');
    expect(r.json.edition.editionKey).toBe('workflow-automation');
    expect(r.json.components.map((c: { name: string }) => c.name)).toContain('agent_api');
  });

  it('docs prints the discovery pointers of the manifest', async () => {
    const r = await run(['docs']);
    expect(r.code).toBe(0);
    expect(r.json.docs).toEqual({
      human: `${api.url}/docs`,
      openapi: `${api.url}/agent/v1/openapi.json`,
      manifest: `${api.url}/agent/v1/manifest`,
      mcp: `${api.url}/agent/v1/mcp`,
      status: `${api.url}/status`,
    });
    expect(r.json.schemaVersion).toBe('2026-06-17');
    expect(r.json.operations.declared).toBe(24); // the spec's 22, createBulkReplayIntent and listAuditEntries
  });

  it('writes logs to stderr only and one compact JSON document to stdout', async () => {
    const r = await run(['status']);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.stdout.endsWith('\n')).toBe(true);
  });
});

describe('whoami', () => {
  it('introspects the grant and says where the configuration came from, token masked', async () => {
    const r = await run(['whoami'], { HOOKRELAY_TOKEN: operator });
    expect(r.code).toBe(0);
    expect(r.json.data.grant.tier).toBe('operator');
    expect(r.json.data.store.shopDomain).toBe('demo.myshopify.com');
    expect(r.json.config.baseUrl).toEqual({ value: api.url, source: 'env', from: 'HOOKRELAY_BASE_URL' });
    expect(r.json.config.token).toMatchObject({ present: true, source: 'env', from: 'HOOKRELAY_TOKEN', masked: `****${operator.slice(-4)}` });
    expect(r.stdout + r.stderr).not.toContain(operator);
  });

  it('exits 3 without a token, naming where to put one', async () => {
    const r = await run(['whoami']);
    expect(r.code).toBe(3);
    expect(r.json.error.code).toBe('unauthorized');
    expect(r.json.error.message).toContain('HOOKRELAY_TOKEN');
  });

  it('exits 3 when the server refuses the token (401)', async () => {
    const bogus = `hrg_${'x'.repeat(40)}`;
    const r = await run(['whoami'], { HOOKRELAY_TOKEN: bogus });
    expect(r.code).toBe(3);
    expect(r.json.error).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(r.json.config.token.source).toBe('env');
    expect(r.stdout + r.stderr).not.toContain(bogus);
  });

  it('exits 3 on an expected-context mismatch (flag) and sends the header from the environment too', async () => {
    const byFlag = await run(['whoami', '--expect-shop-domain', 'other.myshopify.com'], { HOOKRELAY_TOKEN: operator });
    expect(byFlag.code).toBe(3);
    expect(byFlag.json.error).toMatchObject({ code: 'agent_context_mismatch', status: 403 });
    const byEnv = await run(['whoami'], { HOOKRELAY_TOKEN: operator, HOOKRELAY_EXPECTED_INSTALLATION_ID: 'inst-other' });
    expect(byEnv.code).toBe(3);
    expect(byEnv.json.error.code).toBe('agent_context_mismatch');
    const matching = await run(['whoami', '--expect-platform-account-id', 'acct-1'], {
      HOOKRELAY_TOKEN: operator,
      HOOKRELAY_EXPECTED_SHOP_DOMAIN: 'demo.myshopify.com',
    });
    expect(matching.code).toBe(0);
    expect(Object.keys(matching.json.config.expectedContext).sort()).toEqual(['platformAccountId', 'shopDomain']);
  });

  it('--quiet leaves stderr empty', async () => {
    const r = await run(['whoami', '--quiet'], { HOOKRELAY_TOKEN: operator, HOOKRELAY_PROFILE: undefined });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
  });
});

describe('create-endpoint', () => {
  it('creates an endpoint and prints its secret once', async () => {
    const f = file('ep.json', { triggerVariant: 'order', resourceIdPath: 'order.id', name: 'cli orders' });
    const r = await run(['create-endpoint', '--json', f], { HOOKRELAY_TOKEN: operator });
    expect(r.code).toBe(0);
    expect(r.json.data.endpoint.id).toMatch(/^ep_/);
    expect(r.json.data.endpoint.name).toBe('cli orders');
    expect(r.json.data.secret).toMatch(/^whsec_/);
    expect(r.stderr).toContain('store it now');
    const again = await run(['request', 'GET', `/agent/v1/endpoints/${r.json.data.endpoint.id}`], { HOOKRELAY_TOKEN: operator });
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain(r.json.data.secret);
    expect(again.json.data.endpoint.auth.secretLast4).toBe(r.json.data.secret.slice(-4));
  });

  it('reads the body from stdin with --json -', async () => {
    const r = await run(
      ['create-endpoint', '--json', '-'],
      { HOOKRELAY_TOKEN: operator },
      JSON.stringify({ triggerVariant: 'generic', senderProfile: 'zapier' }),
    );
    expect(r.code).toBe(0);
    expect(r.json.data.endpoint.auth.mode).toBe('static_header');
  });

  it('appends each repeated --field NAME=PATH:TYPE to the body, and refuses a malformed one before sending', async () => {
    const f = file('ep-fields.json', { triggerVariant: 'generic', fields: [{ name: 'tier', path: 'customer.tier', type: 'text' }] });
    const r = await run(['create-endpoint', '--json', f, '--field', 'score=answers.score:number', '--field=email=hidden.email:email'], {
      HOOKRELAY_TOKEN: operator,
    });
    expect(r.code).toBe(0);
    expect(r.json.data.endpoint.fields).toEqual([
      { name: 'tier', path: 'customer.tier', type: 'text' },
      { name: 'score', path: 'answers.score', type: 'number' },
      { name: 'email', path: 'hidden.email', type: 'email' },
    ]);
    const closed = { HOOKRELAY_TOKEN: operator, HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}` };
    const malformed = await run(['create-endpoint', '--json', f, '--field', 'score:number'], closed);
    expect(malformed.code).toBe(2);
    expect(malformed.json.error.message).toContain('NAME=PATH:TYPE');
    const badType = await run(['create-endpoint', '--json', f, '--field', 'score=answers.score:money'], closed);
    expect(badType.code).toBe(2);
    expect(badType.json.error.details.map((d: { path: string }) => d.path)).toContain('body.fields.1.type');
    const notList = file('ep-fields-not-list.json', { triggerVariant: 'generic', fields: 'score' });
    const dropped = await run(['create-endpoint', '--json', notList, '--field', 'score=answers.score:number'], closed);
    expect(dropped.code).toBe(2);
    expect(dropped.json.error.details.map((d: { path: string }) => d.path)).toContain('body.fields');
  });

  it('exits 4 with the refusal when the grant lacks the scope (observer)', async () => {
    const f = file('ep-observer.json', { triggerVariant: 'generic' });
    const r = await run(['create-endpoint', '--json', f], { HOOKRELAY_TOKEN: observer });
    expect(r.code).toBe(4);
    expect(r.json.error).toMatchObject({ code: 'insufficient_scope', status: 403 });
    expect(r.json.refusal).toMatchObject({ category: 'scope', code: 'missing_scope' });
    expect(r.json.error.supportCode).toMatch(/^sup-/);
  });

  it('exits 2 before sending when the body fails the contract schema', async () => {
    const f = file('ep-bad.json', { triggerVariant: 'teleport', token: 'x' });
    // The base URL is a closed port: a request would exit 7, so 2 proves nothing was sent.
    const r = await run(['create-endpoint', '--json', f], { HOOKRELAY_TOKEN: operator, HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}` });
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('invalid_input');
    expect(r.json.error.details.map((d: { path: string }) => d.path)).toContain('body.triggerVariant');
  });

  it('exits 2 on a missing or malformed --json file', async () => {
    const missing = await run(['create-endpoint', '--json', join(home.dir, 'nope.json')], { HOOKRELAY_TOKEN: operator });
    expect(missing.code).toBe(2);
    expect(missing.json.error.message).toContain('Cannot read');
    const malformed = await run(['create-endpoint', '--json', file('broken.json', '{"triggerVariant":')], { HOOKRELAY_TOKEN: operator });
    expect(malformed.code).toBe(2);
    expect(malformed.json.error.message).toContain('not valid JSON');
    const none = await run(['create-endpoint'], { HOOKRELAY_TOKEN: operator });
    expect(none.code).toBe(2);
  });
});

describe('events and event', () => {
  let eventId: string;
  let endpointId: string;

  beforeAll(async () => {
    const token = await api.grant('operator');
    const { endpoint, secret } = await createEndpoint(api.env, token);
    endpointId = endpoint.id;
    for (const ext of ['e-1', 'e-2', 'e-3']) {
      const r = await sendHook(api.env, endpoint, secret, orderEvent(ext));
      expect(r.status).toBe(202);
      eventId = r.json.eventId;
    }
  });

  it('lists events with --limit, --endpoint and --outcome, then pages with --cursor', async () => {
    const first = await run(['events', '--limit', '2', '--endpoint', endpointId, '--outcome', 'accepted'], { HOOKRELAY_TOKEN: observer });
    expect(first.code).toBe(0);
    expect(first.json.data.events).toHaveLength(2);
    expect(first.json.data.events[0].id).toBe(eventId);
    expect(first.json.data.nextCursor).toEqual(expect.any(String));
    const second = await run(['events', '--limit', '2', '--endpoint', endpointId, '--cursor', first.json.data.nextCursor], { HOOKRELAY_TOKEN: observer });
    expect(second.code).toBe(0);
    expect(second.json.data.events).toHaveLength(1);
    expect(second.json.data.nextCursor).toBeNull();
  });

  it('--external-id and --trigger find events by the sender id and the endpoint trigger; an unknown trigger exits 2', async () => {
    const byId = await run(['events', '--external-id', 'e-2'], { HOOKRELAY_TOKEN: observer });
    expect(byId.code).toBe(0);
    expect(byId.json.data.events.map((e: { externalEventId: string }) => e.externalEventId)).toEqual(['e-2']);
    const byTrigger = await run(['events', '--trigger', 'order', '--endpoint', endpointId], { HOOKRELAY_TOKEN: observer });
    expect(byTrigger.json.data.events).toHaveLength(3);
    expect((await run(['events', '--trigger', 'customer', '--endpoint', endpointId], { HOOKRELAY_TOKEN: observer })).json.data.events).toEqual([]);
    const bad = await run(['events', '--trigger', 'orders'], { HOOKRELAY_TOKEN: observer });
    expect(bad.code).toBe(2);
    expect(bad.json.error.details[0].path).toBe('query.triggerVariant');
  });

  it('--since and --until take the durations audit takes (1h, 24h, 7d) or an RFC 3339 time', async () => {
    const reader = await api.grant('observer');
    const duration = await run(['events', '--since', '24h'], { HOOKRELAY_TOKEN: reader });
    expect(duration.code).toBe(0);
    const window = await run(['events', '--endpoint', endpointId, '--since', '2026-06-17T11:00:00Z', '--until', '2026-06-17T13:00:00Z'], {
      HOOKRELAY_TOKEN: reader,
    });
    expect(window.json.data.events).toHaveLength(3);
    const bad = await run(['events', '--since', 'soon'], { HOOKRELAY_TOKEN: reader });
    expect(bad.code).toBe(2);
    expect(bad.json.error.message).toContain('24h');
  });

  it('--unconfirmed-for lists the delivered events no workflow run confirmed (none of these accepted ones); 0 exits 2', async () => {
    const none = await run(['events', '--unconfirmed-for', '60'], { HOOKRELAY_TOKEN: observer });
    expect(none.code).toBe(0);
    expect(none.json.data.events).toEqual([]);
    const zero = await run(['events', '--unconfirmed-for', '0'], { HOOKRELAY_TOKEN: observer });
    expect(zero.code).toBe(2);
    expect(zero.json.error.details[0].path).toBe('query.unconfirmedFor');
  });

  it('exits 2 on an out-of-range --limit or unknown --outcome without calling the server', async () => {
    const limit = await run(['events', '--limit', '0'], { HOOKRELAY_TOKEN: observer });
    expect(limit.code).toBe(2);
    expect(limit.json.error.details[0].path).toBe('query.limit');
    const outcome = await run(['events', '--outcome', 'vanished'], { HOOKRELAY_TOKEN: observer });
    expect(outcome.code).toBe(2);
  });

  it('event prints one event without its body', async () => {
    const r = await run(['event', eventId], { HOOKRELAY_TOKEN: observer });
    expect(r.code).toBe(0);
    expect(r.json.data.event.id).toBe(eventId);
    expect(r.json.data.event.recoveryOptions).toEqual(expect.any(Array));
    expect(r.stdout).not.toContain('"order":{"id":4501}');
  });

  it('exits 6 for an unknown event', async () => {
    const r = await run(['event', 'evt_0000000000'], { HOOKRELAY_TOKEN: observer });
    expect(r.code).toBe(6);
    expect(r.json.error).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('exits 2 when the event id is missing', async () => {
    const r = await run(['event'], { HOOKRELAY_TOKEN: observer });
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('usage');
  });
});

describe('plan-usage', () => {
  it('prints the plan and its meters', async () => {
    const r = await run(['plan-usage'], { HOOKRELAY_TOKEN: observer });
    expect(r.code).toBe(0);
    expect(r.json.data.plan).toBe('unlimited');
    expect(r.json.data.canApproveCharges).toBe(false);
    expect(r.json.data.meters.map((m: { meter: string }) => m.meter)).toContain('replay_executions');
  });
});

describe('failures without an answer', () => {
  it('exits 7 with code unreachable when nothing listens on the base URL', async () => {
    const dead = `http://127.0.0.1:${closedPort()}`;
    const r = await run(['whoami'], { HOOKRELAY_TOKEN: operator, HOOKRELAY_BASE_URL: dead });
    expect(r.code).toBe(7);
    expect(r.json.error).toMatchObject({ code: 'unreachable', status: null });
    expect(r.json.error.message).toContain(dead);
    expect(r.stdout + r.stderr).not.toContain(operator);
    const status = await run(['status'], { HOOKRELAY_BASE_URL: dead });
    expect(status.code).toBe(7);
  });

  it('exits 7 with code timeout when the server does not answer in --timeout', async () => {
    const slow = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => Bun.sleep(5000).then(() => new Response('{}')) });
    try {
      const r = await run(['status', '--timeout', '0.3'], { HOOKRELAY_BASE_URL: `http://127.0.0.1:${slow.port}` });
      expect(r.code).toBe(7);
      expect(r.json.error.code).toBe('timeout');
    } finally {
      slow.stop(true);
    }
  });

  it('exits 2 for a base URL that embeds credentials', async () => {
    const r = await run(['status', '--base-url', 'http://user:pw@127.0.0.1:1']);
    expect(r.code).toBe(2);
    expect(r.json.error.message).toContain('credentials');
  });
});

describe('rate limits', () => {
  it('exits 5 on 429 with retryAfterSeconds and the RateLimitedResponse guidance (stub server)', async () => {
    const stub = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () =>
        Response.json(
          {
            edition: { platformKey: 'shopify', editionKey: 'workflow-automation', name: 'hookrelay for Shopify Flow' },
            actor: null,
            refusal: null,
            error: { code: 'rate_limited', message: 'Too many simple_read calls for this grant; wait 17 s.', supportCode: 'sup-stub000001' },
            retryAfterSeconds: 17,
            resetAt: '2026-06-17T00:01:00.000Z',
            rateLimitClass: 'simple_read',
            scope: 'grant',
            recommendedAction: 'Wait Retry-After seconds, then read plan-usage before polling again.',
          },
          { status: 429, headers: { 'Retry-After': '17' } },
        ),
    });
    try {
      const r = await run(['plan-usage'], { HOOKRELAY_TOKEN: operator, HOOKRELAY_BASE_URL: `http://127.0.0.1:${stub.port}` });
      expect(r.code).toBe(5);
      expect(r.json).toMatchObject({
        error: { code: 'rate_limited', status: 429 },
        retryAfterSeconds: 17,
        resetAt: '2026-06-17T00:01:00.000Z',
        rateLimitClass: 'simple_read',
        rateLimitScope: 'grant',
      });
      expect(r.json.recommendedAction).toContain('Wait');
    } finally {
      stub.stop(true);
    }
  });

  it('exits 5 when the real server limits a grant (rich reads)', async () => {
    const token = await api.grant('observer');
    let limited = false;
    for (let i = 0; i < 200 && !limited; i++) {
      const res = await api.env.app.fetch(new Request(`${api.url}/agent/v1/events?limit=1`, { headers: { authorization: `Bearer ${token}` } }));
      limited = res.status === 429;
    }
    expect(limited).toBe(true);
    const r = await run(['events', '--limit', '1'], { HOOKRELAY_TOKEN: token });
    expect(r.code).toBe(5);
    expect(r.json.error.code).toBe('rate_limited');
    expect(r.json.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });
});
