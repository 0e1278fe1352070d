/**
 * Support, feature and expansion requests reach the operator: a signed Standard Webhooks POST to a receiver on
 * loopback (checked with an independent HMAC, node:crypto and openssl), sent after the agent's call has answered,
 * retried after a 5xx; previews say who sees a request. Both backends.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'bun:test';
import { createHmac, randomBytes } from 'node:crypto';
import { useOperatorNotifier, operatorWebhookFromEnv, signOperatorMessage, type OperatorNotifier } from '../../src/ops/operator-notify.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, executeIntent, type TestEnv } from '../helpers.ts';

const SECRET_BYTES = randomBytes(32);
const SECRET = `whsec_${SECRET_BYTES.toString('base64')}`;
/** A canary in the URL's path, as a chat webhook holds its token: never in a log line. */
const URL_TOKEN = 'T0k3nInThePathOfTheUrl';

interface Received {
  headers: Record<string, string>;
  body: string;
}

/** A receiver on loopback: answers each POST with the next status of `statuses` (then 200), after `gate` resolves. */
function receiver() {
  const got: Received[] = [];
  const statuses: number[] = [];
  let gate: Promise<unknown> = Promise.resolve();
  const arrived: (() => void)[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      got.push({ headers: Object.fromEntries(req.headers), body: await req.text() });
      for (const fn of arrived.splice(0)) fn();
      await gate;
      return new Response('ok', { status: statuses.shift() ?? 200 });
    },
  });
  return {
    got,
    statuses,
    url: `http://127.0.0.1:${server.port}/hooks/${URL_TOKEN}`,
    hold(p: Promise<unknown>) {
      gate = p;
    },
    /** Resolves at the next POST that arrives. */
    next: () => new Promise<void>((r) => arrived.push(r)),
    stop: () => server.stop(true),
  };
}

let rx: ReturnType<typeof receiver>;
let env: TestEnv;
let token: string;
let notifier: OperatorNotifier;

function envOf(vars: Record<string, string>) {
  return (name: string) => vars[name];
}

async function deploy(vars: Record<string, string>, delaysMs: number[] = [30, 60]) {
  env = await createTestEnv({ env: envOf(vars) });
  await addStore(env);
  token = await addGrant(env, 'recovery_operator');
  notifier = useOperatorNotifier(env.core, { delaysMs, timeoutMs: 2000 });
}

const configured = () => ({ HOOKRELAY_OPERATOR_WEBHOOK_URL: rx.url, HOOKRELAY_OPERATOR_WEBHOOK_SECRET: SECRET });

const SUPPORT = '/agent/v1/support-request-intents';
const submitSupport = (summary: string, key = 's-1') =>
  call(env, 'POST', SUPPORT, {
    token,
    headers: { 'Idempotency-Key': key },
    body: { mode: 'submit', consent: true, input: { category: 'delivery', urgency: 'high', summary } },
  });

/** Recomputes the Standard Webhooks signature from the raw secret bytes with node:crypto. */
function expectedSignature(r: Received): string {
  const signed = `${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`;
  return `v1,${createHmac('sha256', SECRET_BYTES).update(signed).digest('base64')}`;
}

beforeEach(() => {
  rx = receiver();
});
afterEach(async () => {
  await notifier?.idle();
  rx.stop();
});

describe('operator notification', () => {
  it('POSTs each new support request, signed per Standard Webhooks, after the agent has its answer', async () => {
    await deploy(configured());
    let release!: () => void;
    rx.hold(new Promise<void>((r) => (release = r)));
    const arrived = rx.next();
    // The receiver holds its answer until the agent's call has returned: a call that waited for it would never return.
    const r = await submitSupport('Events stuck; our key whsec_abc123DEF456 and buyer@example.com');
    expect(r.status).toBe(200);
    expect(r.json.data.intent.state).toBe('executed');
    const id = r.json.data.intent.result.resourceId as string;
    await arrived;
    release();
    await notifier.idle();

    expect(rx.got).toHaveLength(1);
    const msg = rx.got[0]!;
    expect(msg.headers['content-type']).toBe('application/json');
    expect(msg.headers['webhook-id']).toBe(id);
    expect(msg.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(Number(msg.headers['webhook-timestamp'])).toBe(Math.floor(env.clock.now() / 1000));
    expect(msg.headers['webhook-signature']).toBe(expectedSignature(msg));
    const doc = JSON.parse(msg.body);
    expect(doc).toMatchObject({
      type: 'request.created',
      data: {
        id,
        kind: 'support',
        shop: 'demo.myshopify.com',
        urgency: 'high',
        show: `hookrelay requests show ${id}`,
        body: { category: 'delivery', urgency: 'high' },
      },
    });
    expect(doc.data.createdAt).toBe(new Date(env.clock.now()).toISOString());
    expect(doc.data.body.summary).toContain('[redacted');
    for (const leak of ['whsec_abc123DEF456', 'buyer@example.com', token, SECRET]) expect(msg.body).not.toContain(leak);
  });

  it('signs what openssl computes from the same secret', async () => {
    await deploy(configured());
    await submitSupport('openssl check');
    await notifier.idle();
    const msg = rx.got[0]!;
    const signed = `${msg.headers['webhook-id']}.${msg.headers['webhook-timestamp']}.${msg.body}`;
    const p = Bun.spawnSync(['openssl', 'dgst', '-sha256', '-mac', 'HMAC', '-macopt', `hexkey:${SECRET_BYTES.toString('hex')}`, '-binary'], {
      stdin: Buffer.from(signed),
    });
    expect(p.exitCode).toBe(0);
    expect(msg.headers['webhook-signature']).toBe(`v1,${Buffer.from(p.stdout).toString('base64')}`);
  });

  it('tries again after a 500 with the same webhook-id, a new timestamp and a valid signature', async () => {
    await deploy(configured(), [40, 80]);
    rx.statuses.push(500);
    const arrived = rx.next();
    const r = await submitSupport('retry me');
    expect(r.status).toBe(200);
    await arrived;
    env.clock.advance(5_000);
    await notifier.idle();
    expect(rx.got).toHaveLength(2);
    const [first, second] = rx.got as [Received, Received];
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(Number(second.headers['webhook-timestamp'])).toBeGreaterThan(Number(first.headers['webhook-timestamp']));
    for (const m of rx.got) expect(m.headers['webhook-signature']).toBe(expectedSignature(m));
    expect(second.body).toBe(first.body);
    expect(env.log.lines.join('\n')).toContain(`operator notification for ${first.headers['webhook-id']}: attempt 1 answered 500`);
  });

  it('gives up after the last attempt, logs it without the URL, and the request stays readable', async () => {
    await deploy(configured(), [20, 20]);
    rx.statuses.push(503, 500, 502);
    const r = await submitSupport('never answered');
    expect(r.status).toBe(200);
    await notifier.idle();
    expect(rx.got).toHaveLength(3);
    const log = env.log.lines.join('\n');
    expect(log).toContain('given up after 3 attempts (answered 502)');
    expect(log).toContain(`hookrelay requests show ${r.json.data.intent.result.resourceId}`);
    expect(log).not.toContain(URL_TOKEN);
    expect(log).not.toContain('127.0.0.1');
    expect(await count(env, 'records', "kind = 'support_request'")).toBe(1);
  });

  it('notifies feature and expansion requests; not diagnostics shares, nor a replayed idempotent call', async () => {
    await deploy(configured());
    const feat = await call(env, 'POST', '/agent/v1/feature-requests', {
      token,
      headers: { 'Idempotency-Key': 'f-1' },
      body: { capability: 'CSV export', problem: 'monthly audit; mail ops@example.com' },
    });
    expect(feat.status).toBe(201);
    const again = await call(env, 'POST', '/agent/v1/feature-requests', {
      token,
      headers: { 'Idempotency-Key': 'f-1' },
      body: { capability: 'CSV export', problem: 'monthly audit; mail ops@example.com' },
    });
    expect(again.json.data.request.id).toBe(feat.json.data.request.id);
    const exp = await call(env, 'POST', '/agent/v1/expansion-requests', {
      token,
      headers: { 'Idempotency-Key': 'x-1' },
      body: { kind: 'multi_store', summary: 'three stores' },
    });
    expect(exp.status).toBe(201);
    const { endpoint } = await createEndpoint(env, token);
    const path = '/agent/v1/diagnostics-share-intents';
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { endpointIds: [endpoint.id] } } });
    expect((await executeIntent(env, token, path, p.json.data.intent, 'd-1')).status).toBe(200);
    await notifier.idle();

    const docs = rx.got.map((m) => JSON.parse(m.body).data);
    expect(docs.map((d) => [d.id, d.kind])).toEqual([
      [feat.json.data.request.id, 'feature'],
      [exp.json.data.request.id, 'expansion'],
    ]);
    expect(docs[0].body).toEqual({ capability: 'CSV export', problem: 'monthly audit; mail [redacted email]' });
    expect(docs[0].summary).toBe('CSV export: monthly audit; mail [redacted email]');
    expect(docs[1].summary).toBe('multi_store: three stores');
    for (const m of rx.got) expect(m.headers['webhook-signature']).toBe(expectedSignature(m));
  });

  it('sends nothing without a URL, and a URL without a valid secret turns notifications off with one log line', async () => {
    await deploy({});
    expect((await submitSupport('no url')).status).toBe(200);
    await notifier.idle();
    expect(rx.got).toHaveLength(0);

    await deploy({ HOOKRELAY_OPERATOR_WEBHOOK_URL: rx.url });
    expect((await submitSupport('no secret', 's-2')).status).toBe(200);
    expect((await submitSupport('still no secret', 's-3')).status).toBe(200);
    await notifier.idle();
    expect(rx.got).toHaveLength(0);
    const off = env.log.lines.filter((l) => l.includes('operator notifications are off'));
    expect(off).toHaveLength(1);
    expect(off[0]).toContain('HOOKRELAY_OPERATOR_WEBHOOK_SECRET');
    expect(off[0]).not.toContain(URL_TOKEN);
  });

  it('answers the agent even when the receiver is unreachable', async () => {
    const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() });
    const url = `http://127.0.0.1:${closed.port}/x`;
    closed.stop(true);
    await deploy({ HOOKRELAY_OPERATOR_WEBHOOK_URL: url, HOOKRELAY_OPERATOR_WEBHOOK_SECRET: SECRET }, [10]);
    expect((await submitSupport('nobody listens')).status).toBe(200);
    await notifier.idle();
    expect(env.log.lines.join('\n')).toContain('given up after 2 attempts (unreachable)');
  });
});

describe('previews say who sees a request', () => {
  const preview = () =>
    call(env, 'POST', SUPPORT, { token, body: { mode: 'preview', input: { category: 'setup', urgency: 'low', summary: 'how do I start' } } }).then(
      (r) => r.json.data.intent.preview.sideEffects as string[],
    );

  it('names the operator of this server and whether a notification URL is set', async () => {
    await deploy({});
    const without = await preview();
    expect(without).toEqual([
      'The operator of this hookrelay server sees the redacted summary, the linked ids and the shop domain when they read it with hookrelay requests (no notification URL is set on this server).',
    ]);
    await deploy(configured());
    const withUrl = await preview();
    expect(withUrl[0]).toBe(
      'The operator of this hookrelay server sees the redacted summary, the linked ids and the shop domain: it is sent to their notification URL at once, and hookrelay requests lists it.',
    );
    expect(rx.got).toHaveLength(0);
    for (const s of [...without, ...withUrl]) expect(s).not.toMatch(/\bSupport sees\b/);

    const { endpoint } = await createEndpoint(env, token);
    const d = await call(env, 'POST', '/agent/v1/diagnostics-share-intents', { token, body: { mode: 'preview', input: { endpointIds: [endpoint.id] } } });
    expect(d.json.data.intent.preview.sideEffects[0]).toContain('readable by the operator of this hookrelay server (hookrelay requests show) until it expires');
  });
});

describe('operatorWebhookFromEnv', () => {
  const read = (vars: Record<string, string>) => () => operatorWebhookFromEnv(envOf(vars));
  it('reads the URL and the whsec_ secret, refusing what it cannot use without echoing it', () => {
    expect(read({})()).toBeNull();
    const ok = read({ HOOKRELAY_OPERATOR_WEBHOOK_URL: 'https://ops.example.com/h', HOOKRELAY_OPERATOR_WEBHOOK_SECRET: SECRET })()!;
    expect(ok.url).toBe('https://ops.example.com/h');
    expect(Buffer.from(ok.key).equals(SECRET_BYTES)).toBe(true);
    const bad: Record<string, string>[] = [
      { HOOKRELAY_OPERATOR_WEBHOOK_URL: 'ftp://ops.example.com/h', HOOKRELAY_OPERATOR_WEBHOOK_SECRET: SECRET },
      { HOOKRELAY_OPERATOR_WEBHOOK_URL: 'not a url', HOOKRELAY_OPERATOR_WEBHOOK_SECRET: SECRET },
      { HOOKRELAY_OPERATOR_WEBHOOK_URL: 'https://ops.example.com/h' },
      { HOOKRELAY_OPERATOR_WEBHOOK_URL: 'https://ops.example.com/h', HOOKRELAY_OPERATOR_WEBHOOK_SECRET: 'whsec_c2hvcnQ=' },
      { HOOKRELAY_OPERATOR_WEBHOOK_URL: 'https://ops.example.com/h', HOOKRELAY_OPERATOR_WEBHOOK_SECRET: 'my password is hunter2 hunter2 hunter2' },
    ];
    for (const vars of bad) {
      expect(read(vars)).toThrow(/HOOKRELAY_OPERATOR_WEBHOOK_(URL|SECRET)/);
      try {
        read(vars)();
      } catch (err) {
        expect((err as Error).message).not.toContain('hunter2');
        expect((err as Error).message).not.toContain('c2hvcnQ');
      }
    }
  });

  it('signs as the Standard Webhooks reference vector', () => {
    // The test vector of the Standard Webhooks libraries (standard-webhooks/standard-webhooks, libraries/javascript).
    const key = new Uint8Array(Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64'));
    const body = '{"test": 2432232314}';
    expect(signOperatorMessage(key, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, body)).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});

afterAll(async () => {
  await notifier?.idle();
});
