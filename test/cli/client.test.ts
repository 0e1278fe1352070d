import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError, EXIT, IN_PROGRESS_CODES, RETRY_SAME_KEY } from '../../src/contract/errors.ts';
import { OPERATIONS } from '../../src/contract/operations.ts';
import { checkProfile, describeConfig, looksLikeToken, resolveConfig } from '../../src/client/config.ts';
import { ClientError, idempotencyNote } from '../../src/client/errors.ts';
import { HookrelayClient } from '../../src/client/http.ts';
import { mask, redactSecrets } from '../../src/client/redact.ts';
import { matchOperation } from '../../src/client/routes.ts';
import { scratchHome } from './harness.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const TOKEN = 'hrg_2bT9xQ7mV1kL8pR4sN6wY3zA5cE0gJ2hF9dK1uMx';

/** A fetch that records requests and answers with `answer`. */
function stubFetch(answer: (req: Request) => Response | Promise<Response>) {
  const seen: Request[] = [];
  const fn = (async (input: string | URL | Request, init?: RequestInit) => {
    const req = input instanceof Request ? new Request(input, init) : new Request(String(input), init);
    seen.push(req);
    return answer(req);
  }) as typeof fetch;
  return { fn, seen };
}

async function failure(p: Promise<unknown>): Promise<ClientError | AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ClientError || err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a failure');
}

describe('matchOperation', () => {
  it('matches every contract operation but the MCP transport by its own path', () => {
    for (const op of OPERATIONS) {
      const path = op.path.replace(/\{(\w+)\}/g, (_m, n: string) => `${n === 'eventId' ? 'evt' : 'ep'}_abc123`);
      if (op.operationId === 'connectMcpAgentOperations') {
        expect(() => matchOperation(op.method, path)).toThrow(AppError);
        continue;
      }
      const m = matchOperation(op.method, path);
      expect(m.op.operationId).toBe(op.operationId);
    }
  });

  it('decodes path ids and keeps the query', () => {
    const m = matchOperation('get', '/agent/v1/events/evt_a%2Bb?x=1');
    expect(m.op.operationId).toBe('getEventDetail');
    expect(m.params).toEqual({ eventId: 'evt_a+b' });
    expect(matchOperation('GET', '/agent/v1/events?limit=5&outcome=delivered').query).toEqual({ limit: '5', outcome: 'delivered' });
  });

  it('refuses anything that is not a contract operation under /agent/v1', () => {
    for (const [method, path] of [
      ['POST', '/hooks/ep_1'],
      ['GET', '/docs'],
      ['POST', '/agent/v1/mcp'],
      ['GET', 'https://elsewhere.example/agent/v1/grant'],
      ['GET', '//elsewhere.example/agent/v1/grant'],
      ['GET', '/agent/v1/./grant'],
      ['GET', '/agent/v1/events/..'],
      ['GET', '/agent/v1/nothing'],
      ['POST', '/agent/v1/grant'],
    ]) {
      expect(() => matchOperation(method!, path!)).toThrow(AppError);
    }
  });
});

describe('resolveConfig', () => {
  let home: ReturnType<typeof scratchHome>;
  let env: Record<string, string | undefined>;

  beforeAll(() => {
    home = scratchHome();
    mkdirSync(join(home.dir, 'cfg/hookrelay'), { recursive: true });
    writeFileSync(
      join(home.dir, 'cfg/hookrelay/profiles.json'),
      JSON.stringify({ profiles: { p: { baseUrl: 'http://profile.test:1/', tokenEnv: 'P_TOKEN', expectedShopDomain: 'p.myshopify.com' } } }),
    );
    env = { HOME: home.dir, XDG_CONFIG_HOME: join(home.dir, 'cfg'), P_TOKEN: 'from-profile-var', F_TOKEN: 'from-flag-var' };
  });
  afterAll(() => home.cleanup());

  it('takes each field from flag, then environment, then profile, then default', () => {
    const profileOnly = resolveConfig({ profile: 'p' }, env);
    expect(profileOnly.baseUrl).toEqual({ value: 'http://profile.test:1', source: 'profile', from: 'profile p baseUrl' });
    expect(profileOnly.token).toMatchObject({ value: 'from-profile-var', source: 'profile', variable: 'P_TOKEN' });
    expect(profileOnly.expected.shopDomain).toMatchObject({ value: 'p.myshopify.com', source: 'profile' });

    const withEnv = resolveConfig(
      { profile: 'p' },
      { ...env, HOOKRELAY_BASE_URL: 'http://env.test:2', HOOKRELAY_TOKEN: 'from-env', HOOKRELAY_EXPECTED_SHOP_DOMAIN: 'e.myshopify.com' },
    );
    expect(withEnv.baseUrl.source).toBe('env');
    expect(withEnv.token).toMatchObject({ value: 'from-env', source: 'env' });
    expect(withEnv.expected.shopDomain).toMatchObject({ value: 'e.myshopify.com', source: 'env' });
    expect(withEnv.notes).toHaveLength(2);

    const withFlags = resolveConfig(
      { profile: 'p', baseUrl: 'http://flag.test:3', tokenEnv: 'F_TOKEN', expected: { shopDomain: 'f.myshopify.com' } },
      { ...env, HOOKRELAY_BASE_URL: 'http://env.test:2', HOOKRELAY_TOKEN: 'from-env' },
    );
    expect(withFlags.baseUrl).toMatchObject({ value: 'http://flag.test:3', source: 'flag' });
    expect(withFlags.token).toMatchObject({ value: 'from-flag-var', source: 'flag' });
    expect(withFlags.expected.shopDomain).toMatchObject({ value: 'f.myshopify.com', source: 'flag' });

    const nothing = resolveConfig({}, { HOME: home.dir, XDG_CONFIG_HOME: join(home.dir, 'none') });
    expect(nothing.baseUrl).toMatchObject({ value: 'http://127.0.0.1:8787', source: 'default' });
    expect(nothing.token).toMatchObject({ value: null, source: 'none' });
    expect(nothing.profilesFile).toBe(join(home.dir, 'none/hookrelay/profiles.json'));
  });

  it('uses ~/.config when XDG_CONFIG_HOME is unset', () => {
    expect(resolveConfig({}, { HOME: home.dir }).profilesFile).toBe(join(home.dir, '.config/hookrelay/profiles.json'));
  });

  it('describes the configuration with the token masked', () => {
    const d = describeConfig(resolveConfig({}, { ...env, HOOKRELAY_TOKEN: TOKEN }));
    expect(d.token).toMatchObject({ present: true, masked: `****${TOKEN.slice(-4)}`, source: 'env' });
    expect(JSON.stringify(d)).not.toContain(TOKEN);
  });

  it('rejects a bad --timeout and a base URL with a query', () => {
    expect(() => resolveConfig({ timeout: '0' }, env)).toThrow(AppError);
    expect(() => resolveConfig({ baseUrl: 'http://x.test/?token=1' }, env)).toThrow(AppError);
    expect(resolveConfig({ timeout: '2.5' }, env).timeoutMs).toBe(2500);
  });
});

describe('profiles never hold a token', () => {
  it('looksLikeToken catches grant tokens, secrets, bearer values and high-entropy strings, not variable names', () => {
    expect(looksLikeToken(TOKEN)).toBe(true);
    expect(looksLikeToken('whsec_abc12345')).toBe(true);
    expect(looksLikeToken('Bearer abc')).toBe(true);
    expect(looksLikeToken('k3Jd9FqL2xPz8WvR5tYb7NcM')).toBe(true);
    expect(looksLikeToken('same-as-env', { HOOKRELAY_TOKEN: 'same-as-env' })).toBe(true);
    expect(looksLikeToken('HOOKRELAY_TOKEN_PROD')).toBe(false);
    expect(looksLikeToken('MyToken2')).toBe(false);
  });

  it('checkProfile refuses a token field or a token value', () => {
    expect(() => checkProfile('a', { baseUrl: 'http://x.test', tokenEnv: 'T', token: 'abc' })).toThrow(/never the token/);
    expect(() => checkProfile('a', { baseUrl: 'http://x.test', tokenEnv: TOKEN })).toThrow(/NAME of the environment variable/);
    expect(() => checkProfile('a', { baseUrl: 'http://x.test', tokenEnv: 'T', expectedShopDomain: TOKEN })).toThrow(AppError);
    expect(checkProfile('a', { baseUrl: 'http://x.test/', tokenEnv: 'T' })).toEqual({ baseUrl: 'http://x.test', tokenEnv: 'T' });
  });
});

describe('redaction', () => {
  it('masks all but the last four characters', () => {
    expect(mask(TOKEN)).toBe(`****${TOKEN.slice(-4)}`);
    expect(mask('short')).toBe('****');
  });

  it('masks secret fields and token-looking strings anywhere in a document', () => {
    const doc = { data: { intent: { result: { secret: 'whsec_abcdefghijklmnop1234' } }, list: [`${TOKEN}`] }, keep: 'cfm_token_stays' };
    const out = JSON.stringify(redactSecrets(doc));
    expect(out).not.toContain('whsec_abcdefghijklmnop1234');
    expect(out).not.toContain(TOKEN);
    expect(out).toContain('****1234');
    expect(out).toContain('cfm_token_stays');
  });
});

describe('HookrelayClient', () => {
  const envelope = (data: unknown) => Response.json({ edition: {}, scope: null, actor: null, refusal: null, data });

  it('sends the bearer token, expected-context headers and idempotency key to the base URL only', async () => {
    const stub = stubFetch(() => envelope({ ok: true }));
    const client = new HookrelayClient({
      baseUrl: 'http://api.test/prefix/',
      token: TOKEN,
      expected: { shopDomain: 's.myshopify.com', platformKey: 'shopify' },
      fetch: stub.fn,
    });
    await client.call('createReplayIntent', { params: { eventId: 'evt_a/b' }, body: { mode: 'preview', input: {} }, idempotencyKey: 'k-1' });
    const req = stub.seen[0]!;
    expect(req.url).toBe('http://api.test/prefix/agent/v1/events/evt_a%2Fb/replay-intents');
    expect(req.method).toBe('POST');
    expect(req.headers.get('authorization')).toBe(`Bearer ${TOKEN}`);
    expect(req.headers.get('x-service-expected-shop-domain')).toBe('s.myshopify.com');
    expect(req.headers.get('x-service-expected-platform-key')).toBe('shopify');
    expect(req.headers.get('idempotency-key')).toBe('k-1');
    expect(req.headers.get('content-type')).toBe('application/json');
    expect(await req.text()).toBe('{"mode":"preview","input":{}}');
  });

  it('never sends a token or expected headers on the public manifest', async () => {
    const stub = stubFetch(() => Response.json({ edition: {} }));
    await new HookrelayClient({ baseUrl: 'http://api.test', token: TOKEN, expected: { shopDomain: 's' }, fetch: stub.fn }).call('getAgentOperationsManifest');
    expect(stub.seen[0]!.headers.get('authorization')).toBeNull();
    expect(stub.seen[0]!.headers.get('x-service-expected-shop-domain')).toBeNull();
  });

  it('validates body, query and params before sending anything', async () => {
    const stub = stubFetch(() => envelope({}));
    const client = new HookrelayClient({ baseUrl: 'http://api.test', token: TOKEN, fetch: stub.fn });
    const body = await failure(client.call('createEndpoint', { body: { triggerVariant: 'nope' } }));
    expect(body).toBeInstanceOf(AppError);
    expect((body as AppError).code).toBe('invalid_input');
    expect(JSON.stringify((body as AppError).details)).not.toContain('nope');
    expect(await failure(client.call('listEvents', { query: { limit: 1000 } }))).toBeInstanceOf(AppError);
    expect(await failure(client.call('getEventDetail', { params: { eventId: '' } }))).toBeInstanceOf(AppError);
    expect(await failure(client.call('getPlanUsage', { body: {} }))).toBeInstanceOf(AppError);
    expect(
      await failure(client.call('createReplayIntent', { params: { eventId: 'evt_1' }, body: { mode: 'preview', input: {} }, idempotencyKey: 'has space' })),
    ).toBeInstanceOf(AppError);
    expect(stub.seen).toHaveLength(0);
  });

  it('maps error answers to exit codes through the error table, keeping refusal and support code', async () => {
    const cases: [number, Record<string, unknown>, number][] = [
      [401, { error: { code: 'unauthorized', message: 'no' } }, EXIT.auth],
      [403, { error: { code: 'agent_context_mismatch', message: 'other store' } }, EXIT.auth],
      [
        403,
        { error: { code: 'action_refused', message: 'unsafe' }, refusal: { category: 'safety', code: 'x', reason: 'r', recommendedAction: 'a' } },
        EXIT.refused,
      ],
      [402, { error: { code: 'plan_capacity_exhausted', message: 'full' } }, EXIT.refused],
      [404, { error: { code: 'not_found', message: 'gone', supportCode: 'sup-1' } }, EXIT.notFound],
      [409, { error: { code: 'conflict', message: 'used' } }, EXIT.refused],
      [422, { error: { code: 'idempotency_key_reused', message: 'reused' } }, EXIT.usage],
      [501, { error: { code: 'not_implemented', message: 'later' } }, EXIT.error],
      [503, { code: 'mcp_code_mode_unavailable', message: 'no sandbox' }, EXIT.error],
    ];
    for (const [status, body, exit] of cases) {
      const client = new HookrelayClient({ baseUrl: 'http://api.test', token: TOKEN, fetch: stubFetch(() => Response.json(body, { status })).fn });
      const err = (await failure(client.call('getSetupState'))) as ClientError;
      expect(err).toBeInstanceOf(ClientError);
      expect(err.exitCode).toBe(exit);
      expect(err.status).toBe(status);
      const doc = err.toJSON() as { error: { code: string }; refusal?: unknown };
      expect(doc.error.code).toBe(((body.error as { code?: string }) ?? body).code as string);
      if (body.refusal) expect(doc.refusal).toEqual(body.refusal);
      expect(JSON.stringify(doc)).not.toContain(TOKEN);
    }
  });

  it('maps a status without a contract body by status, and a non-JSON success to invalid_response', async () => {
    const html = new HookrelayClient({
      baseUrl: 'http://api.test',
      token: TOKEN,
      fetch: stubFetch(() => new Response('<h1>Bad gateway</h1>', { status: 502 })).fn,
    });
    const e1 = (await failure(html.call('getSetupState'))) as ClientError;
    expect(e1.code).toBe('http_502');
    expect(e1.exitCode).toBe(EXIT.error);
    const notFound = new HookrelayClient({ baseUrl: 'http://api.test', token: TOKEN, fetch: stubFetch(() => new Response('nope', { status: 404 })).fn });
    expect(((await failure(notFound.call('getSetupState'))) as ClientError).exitCode).toBe(EXIT.notFound);
    const ok = new HookrelayClient({ baseUrl: 'http://api.test', token: TOKEN, fetch: stubFetch(() => new Response('plain', { status: 200 })).fn });
    expect(((await failure(ok.call('getSetupState'))) as ClientError).code).toBe('invalid_response');
  });

  it('does not follow redirects (the token would go with them)', async () => {
    const stub = stubFetch(() => new Response(null, { status: 302, headers: { location: 'http://evil.test/steal' } }));
    const client = new HookrelayClient({ baseUrl: 'http://api.test', token: TOKEN, fetch: stub.fn });
    const err = (await failure(client.call('getCurrentAgentGrant'))) as ClientError;
    expect(err.status).toBe(302);
    expect(stub.seen[0]!.redirect).toBe('manual');
  });

  it('turns Retry-After into retryAfterSeconds when the 429 body lacks it', async () => {
    const client = new HookrelayClient({
      baseUrl: 'http://api.test',
      token: TOKEN,
      fetch: stubFetch(() => new Response('slow down', { status: 429, headers: { 'Retry-After': '9' } })).fn,
    });
    const err = (await failure(client.call('getPlanUsage'))) as ClientError;
    expect(err.exitCode).toBe(EXIT.rateLimited);
    expect(err.toJSON()).toMatchObject({ retryAfterSeconds: 9 });
  });

  it('maps connection failures to exit 7 without the token in the error', async () => {
    const client = new HookrelayClient({
      baseUrl: 'http://api.test',
      token: TOKEN,
      fetch: (async () => {
        throw Object.assign(new Error(`connect ECONNREFUSED (Authorization: Bearer ${TOKEN})`), { code: 'ECONNREFUSED' });
      }) as unknown as typeof fetch,
    });
    const err = (await failure(client.call('getCurrentAgentGrant'))) as ClientError;
    expect(err.exitCode).toBe(EXIT.unreachable);
    expect(err.message).toBe('Could not reach http://api.test (ECONNREFUSED).');
    expect(JSON.stringify(err.toJSON())).not.toContain(TOKEN);
  });

  it('keeps the token out of inspection and JSON of the client itself', () => {
    const client = new HookrelayClient({ baseUrl: 'http://api.test', token: TOKEN });
    expect(JSON.stringify(client)).not.toContain(TOKEN);
    expect(Bun.inspect(client)).not.toContain(TOKEN);
  });
});

describe('the idempotency note of a failed execute', () => {
  const refused = (code: string) =>
    new ClientError('conflict', 'x', EXIT.refused, {
      status: 409,
      refusal: { category: 'target_state', code, reason: 'x', recommendedAction: code === 'target_state_conflict' ? 'Preview again.' : RETRY_SAME_KEY },
    });

  it('keeps the retry hint for a 409 saying the same request is running now, and only for it', () => {
    for (const code of IN_PROGRESS_CODES)
      expect(idempotencyNote(refused(code), 'k-1', false, 'retry with k-1')).toEqual({ key: 'k-1', generated: false, hint: 'retry with k-1' });
    for (const code of ['target_state_conflict', 'stale_preview', 'intent_not_previewed'])
      expect(idempotencyNote(refused(code), 'k-1', false, 'retry with k-1')).toEqual({ key: 'k-1', generated: false });
  });
});
