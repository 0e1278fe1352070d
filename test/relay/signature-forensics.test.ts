/**
 * Signature forensics through the inbound path: each usual wrong form gets its own diagnosis in the 401 and its code
 * in auth_failures, a random or foreign value gets none, no diagnosis ever turns a failure into a 202, no value
 * received is stored, logged or echoed, and setup state names the diagnosis and its fix.
 */
import { describe, expect, test } from 'bun:test';
import { DIAGNOSES, DIAGNOSIS_CODES, diagnosisFor, FORENSICS_MAX_RESERIALIZE_BYTES, type DiagnosisCode } from '../../src/contract/diagnoses.ts';
import { AUTH_FAILURE_LIMITS } from '../../src/contract/limits.ts';
import { hmacBase64, hmacHex, newEndpointSecret } from '../../src/lib/crypto.ts';
import { startServer } from '../../src/server/serve.ts';
import { addGrant, addStore, BASE, call, count, createEndpoint, createTestEnv, executeIntent, orderEvent, rows, type TestEnv } from '../helpers.ts';
import { dumpDatabase } from '../security/dump.ts';
import { execute, startMcpServer, tool } from '../mcp/harness.ts';

interface Ep {
  id: string;
  auth: { headerName: string; mode: string };
}

async function setup(input: Record<string, unknown> = { triggerVariant: 'order', resourceIdPath: 'order.id' }) {
  const env = await createTestEnv();
  const store = await addStore(env);
  const token = await addGrant(env, 'admin_assistant');
  const { endpoint, secret } = await createEndpoint(env, token, input);
  return { env, token, storeId: store.storeId, endpoint: endpoint as Ep, secret };
}

/** Posts `body` to the endpoint with `value` as its auth header (none when null); the answer's status and JSON. */
async function post(env: TestEnv, ep: Ep, body: string | Uint8Array, value: string | null) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (value !== null) headers[ep.auth.headerName] = value;
  const res = await env.app.fetch(new Request(`${BASE}/hooks/${ep.id}`, { method: 'POST', headers, body }));
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) as any };
}

/** The auth_failures rows' diagnosis column, oldest first. */
async function storedDiagnoses(env: TestEnv): Promise<(string | null)[]> {
  return (await rows<{ diagnosis: string | null }>(env, 'SELECT diagnosis FROM auth_failures ORDER BY at, id')).map((r) => r.diagnosis);
}

const b64url = (s: string) => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** One wrong form: the body sent and the header value, from the body and the secret. */
interface Form {
  name: string;
  code: DiagnosisCode;
  send: (secret: string) => { body: string; value: string };
}

const BODY = orderEvent('forensics-1');
const DOC = JSON.parse(BODY);
const PRETTY = JSON.stringify(DOC, null, 2);

const HMAC_FORMS: Form[] = [
  { name: 'upper-case hex', code: 'hex_uppercase', send: (s) => ({ body: BODY, value: hmacHex(s, BODY).toUpperCase() }) },
  { name: 'base64 of the right digest', code: 'base64_not_hex', send: (s) => ({ body: BODY, value: hmacBase64(s, BODY) }) },
  { name: 'base64url without padding', code: 'base64_not_hex', send: (s) => ({ body: BODY, value: b64url(hmacBase64(s, BODY)) }) },
  { name: 'a sha256= prefix', code: 'prefix_sha256', send: (s) => ({ body: BODY, value: `sha256=${hmacHex(s, BODY)}` }) },
  { name: 'a v1= prefix', code: 'prefix_v1', send: (s) => ({ body: BODY, value: `v1=${hmacHex(s, BODY)}` }) },
  { name: 'a v1, prefix and base64 (Standard Webhooks style)', code: 'prefix_v1', send: (s) => ({ body: BODY, value: `v1,${hmacBase64(s, BODY)}` }) },
  { name: 'compact JSON signed, indented JSON sent', code: 'body_reserialized_compact', send: (s) => ({ body: PRETTY, value: hmacHex(s, BODY) }) },
  { name: '2-space JSON signed, compact sent', code: 'body_reserialized_pretty', send: (s) => ({ body: BODY, value: hmacHex(s, PRETTY) }) },
  {
    name: '4-space JSON signed, compact sent',
    code: 'body_reserialized_pretty',
    send: (s) => ({ body: BODY, value: hmacHex(s, JSON.stringify(DOC, null, 4)) }),
  },
  { name: 'signed with a trailing newline, sent without', code: 'body_trailing_newline', send: (s) => ({ body: BODY, value: hmacHex(s, `${BODY}\n`) }) },
  { name: 'signed without the trailing newline sent', code: 'body_trailing_newline', send: (s) => ({ body: `${BODY}\n`, value: hmacHex(s, BODY) }) },
  { name: 'the secret itself instead of a signature', code: 'secret_not_signature', send: (s) => ({ body: BODY, value: s }) },
];

describe('HMAC endpoint: each wrong form gets its own diagnosis, and still a 401', () => {
  for (const form of HMAC_FORMS) {
    test(`${form.name}: 401 SVC_AUTH_FAILED with diagnosis ${form.code}; the record keeps the code only`, async () => {
      const { env, endpoint, secret } = await setup();
      const { body, value } = form.send(secret);
      const r = await post(env, endpoint, body, value);
      expect(r.status).toBe(401);
      expect(r.json).toEqual({ code: 'SVC_AUTH_FAILED', message: expect.any(String), diagnosis: { code: form.code, fix: DIAGNOSES[form.code].fix } });
      expect(r.text).not.toContain(value);
      expect(await count(env, 'events')).toBe(0);
      expect(await storedDiagnoses(env)).toEqual([form.code]);
    });
  }

  test('every code of the table is reachable by some form, each with a fix line', () => {
    const reached = new Set<DiagnosisCode>([...HMAC_FORMS.map((f) => f.code), 'previous_secret', 'signature_not_token', 'bearer_prefix']);
    expect([...reached].sort()).toEqual([...DIAGNOSIS_CODES].sort());
    for (const code of DIAGNOSIS_CODES) expect(DIAGNOSES[code].fix).toMatch(/^\S.{20,}\.$/);
  });
});

describe('no diagnosis for a value not made with the secret', () => {
  test('random, foreign and malformed values answer a plain 401, recorded with no diagnosis', async () => {
    const { env, endpoint, secret } = await setup();
    const other = newEndpointSecret();
    const values = [
      Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join(''),
      Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
      hmacHex(other, BODY),
      hmacHex(other, BODY).toUpperCase(),
      `sha256=${hmacHex(other, BODY)}`,
      hmacHex(other, PRETTY),
      hmacHex(secret, orderEvent('another-event')),
      'not a signature at all',
      secret.slice(0, -1),
    ];
    for (const value of values) {
      const r = await post(env, endpoint, BODY, value);
      expect(r.status).toBe(401);
      expect(r.json).toEqual({ code: 'SVC_AUTH_FAILED', message: expect.any(String) });
    }
    expect(await storedDiagnoses(env)).toEqual(values.map(() => null));
    // A missing header has nothing to examine.
    const missing = await post(env, endpoint, BODY, null);
    expect(missing.json).toEqual({ code: 'SVC_AUTH_HEADER_MISSING', message: expect.any(String) });
  });

  test('the right signature still answers 202, and only it', async () => {
    const { env, endpoint, secret } = await setup();
    const r = await post(env, endpoint, BODY, hmacHex(secret, BODY));
    expect(r.status).toBe(202);
    expect(r.json.diagnosis).toBeUndefined();
    expect(await count(env, 'auth_failures')).toBe(0);
  });
});

describe('secrets across a rotation', () => {
  async function rotate(env: TestEnv, token: string, endpointId: string, overlapSeconds: number) {
    const path = `/agent/v1/endpoints/${endpointId}/secret-rotation-intents`;
    const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: { overlapSeconds } } });
    const x = await executeIntent(env, token, path, p.json.data.intent, `rot-${endpointId}`);
    expect(x.status).toBe(200);
    return x.json.data.intent.result.secret as string;
  }

  test('HMAC: during the overlap the previous secret passes and its wrong forms are diagnosed; after it, previous_secret', async () => {
    const { env, token, endpoint, secret: old } = await setup();
    const fresh = await rotate(env, token, endpoint.id, 60);
    expect((await post(env, endpoint, BODY, hmacHex(old, BODY))).status).toBe(202);
    const upper = await post(env, endpoint, BODY, hmacHex(old, BODY).toUpperCase());
    expect([upper.status, upper.json.diagnosis?.code]).toEqual([401, 'hex_uppercase']);

    env.clock.advance(60_000); // the overlap is over; the row still holds the sealed previous secret
    for (const value of [hmacHex(old, BODY), hmacBase64(old, BODY), hmacHex(old, PRETTY)]) {
      const late = await post(env, endpoint, BODY, value);
      expect(late.status).toBe(401);
      expect(late.json.diagnosis).toEqual({ code: 'previous_secret', fix: DIAGNOSES.previous_secret.fix });
    }
    expect((await post(env, endpoint, BODY, old)).json.diagnosis?.code).toBe('previous_secret');
    expect((await post(env, endpoint, BODY, hmacHex(fresh, BODY))).status).toBe(202);
    expect(await storedDiagnoses(env)).toEqual(['hex_uppercase', 'previous_secret', 'previous_secret', 'previous_secret', 'previous_secret']);
  });

  test('HMAC with no overlap: the previous secret never passes again, and is named previous_secret at once', async () => {
    const { env, token, endpoint, secret: old } = await setup();
    const fresh = await rotate(env, token, endpoint.id, 0);
    const late = await post(env, endpoint, BODY, hmacHex(old, BODY));
    expect([late.status, late.json.diagnosis?.code]).toEqual([401, 'previous_secret']);
    expect((await post(env, endpoint, BODY, hmacHex(fresh, BODY))).status).toBe(202);
  });

  test('static token: the expired previous token is previous_secret; within the overlap it passes', async () => {
    const { env, token, endpoint, secret: old } = await setup({ triggerVariant: 'order', resourceIdPath: 'order.id', authMode: 'static_header' });
    const fresh = await rotate(env, token, endpoint.id, 60);
    expect((await post(env, endpoint, BODY, old)).status).toBe(202);
    env.clock.advance(60_000);
    const late = await post(env, endpoint, BODY, old);
    expect([late.status, late.json.diagnosis?.code]).toEqual([401, 'previous_secret']);
    expect((await post(env, endpoint, BODY, fresh)).status).toBe(202);
  });
});

describe('static-token endpoint', () => {
  test('a Bearer prefix and an HMAC in place of the token are diagnosed; a wrong token is not', async () => {
    const { env, endpoint, secret } = await setup({ triggerVariant: 'order', resourceIdPath: 'order.id', senderProfile: 'zapier' });
    expect(endpoint.auth.mode).toBe('static_header');
    const bearer = await post(env, endpoint, BODY, `Bearer ${secret}`);
    expect([bearer.status, bearer.json.diagnosis]).toEqual([401, diagnosisFor('bearer_prefix', 'zapier')]);
    const signed = await post(env, endpoint, BODY, hmacHex(secret, BODY));
    expect([signed.status, signed.json.diagnosis?.code]).toEqual([401, 'signature_not_token']);
    const wrong = await post(env, endpoint, BODY, `Bearer ${newEndpointSecret()}`);
    expect(wrong.json).toEqual({ code: 'SVC_AUTH_FAILED', message: expect.any(String) });
    expect(await storedDiagnoses(env)).toEqual(['bearer_prefix', 'signature_not_token', null]);
  });
});

describe('sender-specific fixes', () => {
  for (const profile of ['zapier', 'make', 'n8n'] as const) {
    test(`${profile} (HMAC chosen explicitly): the fix names the ${profile} step`, async () => {
      const { env, endpoint, secret } = await setup({ triggerVariant: 'order', resourceIdPath: 'order.id', senderProfile: profile, authMode: 'hmac_sha256' });
      const r = await post(env, endpoint, BODY, hmacBase64(secret, BODY));
      expect(r.status).toBe(401);
      expect(r.json.diagnosis.code).toBe('base64_not_hex');
      expect(r.json.diagnosis.fix).toBe(DIAGNOSES.base64_not_hex.senders![profile]!);
      expect(r.json.diagnosis.fix).not.toBe(DIAGNOSES.base64_not_hex.fix);
      const pretty = await post(env, endpoint, PRETTY, hmacHex(secret, BODY));
      expect(pretty.json.diagnosis).toEqual({ code: 'body_reserialized_compact', fix: DIAGNOSES.body_reserialized_compact.senders![profile]! });
    });
  }

  test('custom_http and a code without a preset line get the generic fix (it names Pipedream where it fits)', () => {
    expect(diagnosisFor('base64_not_hex', 'custom_http').fix).toContain('Pipedream');
    expect(diagnosisFor('prefix_sha256', 'zapier')).toEqual({ code: 'prefix_sha256', fix: DIAGNOSES.prefix_sha256.fix });
    expect(diagnosisFor('hex_uppercase', null).fix).toBe(DIAGNOSES.hex_uppercase.fix);
  });
});

describe('bounded work', () => {
  test('a body over the re-serialisation bound is examined only as sent: encodings yes, layouts no', async () => {
    const { env, endpoint, secret } = await setup();
    const big = JSON.stringify({ ...DOC, pad: 'x'.repeat(FORENSICS_MAX_RESERIALIZE_BYTES) });
    const reformatted = await post(env, endpoint, big, hmacHex(secret, JSON.stringify(JSON.parse(big), null, 2)));
    expect(reformatted.json).toEqual({ code: 'SVC_AUTH_FAILED', message: expect.any(String) });
    const base64 = await post(env, endpoint, big, hmacBase64(secret, big));
    expect([base64.status, base64.json.diagnosis?.code]).toEqual([401, 'base64_not_hex']);
  });

  test('past the failure limit the answer stays 429 and nothing is examined; the record keeps the last examined code', async () => {
    const { env, token, storeId, endpoint, secret } = await setup();
    const value = hmacHex(secret, BODY).toUpperCase();
    for (let i = 0; i < AUTH_FAILURE_LIMITS.perEndpoint; i++) {
      const r = await post(env, endpoint, BODY, value);
      expect([r.status, r.json.diagnosis?.code]).toEqual([401, 'hex_uppercase']);
    }
    // Another mistake past the limit: not examined (it would read base64_not_hex), answered 429 without a diagnosis.
    for (const late of [value, hmacBase64(secret, BODY)]) {
      const limited = await post(env, endpoint, BODY, late);
      expect(limited.status).toBe(429);
      expect(limited.json.code).toBe('rate_limited');
      expect(limited.json.diagnosis).toBeUndefined();
    }
    // The window's newest row holds every failure past the first rowsPerEndpoint - 1, the limited two included.
    const [newest] = await env.repo.listAuthFailures(storeId, endpoint.id, 1);
    expect([newest!.count, newest!.diagnosis]).toEqual([AUTH_FAILURE_LIMITS.perEndpoint + 2 - (AUTH_FAILURE_LIMITS.rowsPerEndpoint - 1), 'hex_uppercase']);
    const state = (await call(env, 'GET', '/agent/v1/setup-state', { token })).json.data;
    expect(state.endpoints[0].authFailureDiagnosis?.code).toBe('hex_uppercase');
    // A correct signature still passes.
    expect((await post(env, endpoint, BODY, hmacHex(secret, BODY))).status).toBe(202);
  });
});

describe('over a real socket', () => {
  test('a v1, prefix (a comma in the header) answers 401 with prefix_v1, and the signed event 202', async () => {
    const { env, endpoint, secret } = await setup();
    const running = await startServer(env.core, { port: 0, host: '127.0.0.1', worker: false, logRequests: false });
    try {
      const url = `http://127.0.0.1:${running.server.port}/hooks/${endpoint.id}`;
      const send = (value: string) =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', [endpoint.auth.headerName]: value }, body: BODY });
      const r = await send(`v1,${hmacHex(secret, BODY)}`);
      expect(r.status).toBe(401);
      expect(await r.json()).toEqual({
        code: 'SVC_AUTH_FAILED',
        message: expect.stringContaining('several values'),
        diagnosis: { code: 'prefix_v1', fix: DIAGNOSES.prefix_v1.fix },
      });
      expect((await send(hmacHex(secret, BODY))).status).toBe(202);
    } finally {
      await running.stop();
    }
  });
});

describe('canary: no value received is stored, logged or answered', () => {
  test('after every wrong form, no table and no log line holds a signature value, a secret or the body', async () => {
    const { env, endpoint, secret } = await setup();
    const marker = `canary-${crypto.randomUUID()}`;
    const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: 'canary', note: marker, order: { id: 4501 } });
    const pretty = JSON.stringify(JSON.parse(body), null, 2);
    const sent: string[] = [
      hmacHex(secret, body).toUpperCase(),
      hmacBase64(secret, body),
      `sha256=${hmacHex(secret, body)}`,
      `v1=${hmacHex(secret, body)}`,
      hmacHex(secret, pretty),
      hmacHex(secret, `${body}\n`),
      secret,
    ];
    const answers: string[] = [];
    for (const value of sent) {
      const r = await post(env, endpoint, body, value);
      expect(r.status).toBe(401);
      expect(r.json.diagnosis).toBeDefined();
      answers.push(r.text);
    }
    expect((await storedDiagnoses(env)).every((d) => d !== null)).toBe(true);
    // Each value as sent, and its digest in every encoding a table could hold it in.
    const needles = [...new Set(sent.flatMap((v) => [v, v.toLowerCase(), v.replace(/^(sha256=|v1=)/, '')]))];
    needles.push(hmacHex(secret, body), hmacBase64(secret, body), marker);
    const dump = await dumpDatabase(env);
    expect(Object.keys(dump)).toContain('auth_failures');
    const logs = env.log.lines.join('\n');
    for (const needle of needles) {
      for (const [table, text] of Object.entries(dump)) expect({ table, found: text.includes(needle) }).toEqual({ table, found: false });
      expect(logs).not.toContain(needle);
      for (const a of answers) expect(a).not.toContain(needle);
    }
  });
});

describe('setup state names the diagnosis', () => {
  test('the endpoint summary carries the newest diagnosis and the replacement guidance names it and its fix', async () => {
    const { env, token, endpoint, secret } = await setup({
      triggerVariant: 'order',
      resourceIdPath: 'order.id',
      senderProfile: 'n8n',
      authMode: 'hmac_sha256',
    });
    expect((await post(env, endpoint, BODY, hmacBase64(secret, BODY))).status).toBe(401);
    env.clock.advance(60_000);
    expect((await post(env, endpoint, BODY, hmacBase64(secret, BODY))).status).toBe(401);

    const state = (await call(env, 'GET', '/agent/v1/setup-state', { token })).json.data;
    const summary = state.endpoints.find((e: { id: string }) => e.id === endpoint.id);
    const expected = diagnosisFor('base64_not_hex', 'n8n');
    expect(summary.authFailureDiagnosis).toEqual(expected);
    const action = state.nextRecommendedActions.find(
      (a: { action: string; endpointId: string }) => a.action === 'create_replacement_endpoint' && a.endpointId === endpoint.id,
    );
    expect(action.text).toContain('base64_not_hex');
    expect(action.text).toContain(expected.fix);

    // An authenticated receipt after it: the sender is fixed, the diagnosis is no longer shown.
    env.clock.advance(1000);
    expect((await post(env, endpoint, BODY, hmacHex(secret, BODY))).status).toBe(202);
    const after = (await call(env, 'GET', '/agent/v1/setup-state', { token })).json.data;
    expect(after.endpoints.find((e: { id: string }) => e.id === endpoint.id).authFailureDiagnosis).toBeNull();
  });

  test('an undiagnosed failure pair keeps the plain guidance and a null diagnosis', async () => {
    const { env, token, endpoint } = await setup();
    for (let i = 0; i < 2; i++) {
      expect((await post(env, endpoint, BODY, 'f'.repeat(64))).status).toBe(401);
      env.clock.advance(1000);
    }
    const state = (await call(env, 'GET', '/agent/v1/setup-state', { token })).json.data;
    expect(state.endpoints[0].authFailureDiagnosis).toBeNull();
    const action = state.nextRecommendedActions.find((a: { action: string }) => a.action === 'create_replacement_endpoint');
    expect(action.text).not.toContain('looks like');
  });
});

describe('the contract shows it: OpenAPI and the MCP catalogue', () => {
  test('docs/openapi.json: SetupState endpoints carry authFailureDiagnosis, a SignatureDiagnosis whose code enum is the table', async () => {
    const doc = JSON.parse(await Bun.file(new URL('../../docs/openapi.json', import.meta.url)).text());
    const schemas = doc.components.schemas;
    const field = schemas.SetupState.properties.endpoints.items.properties.authFailureDiagnosis;
    expect(field.anyOf).toEqual([{ $ref: '#/components/schemas/SignatureDiagnosis' }, { type: 'null' }]);
    expect(field.description).toContain('never the value received');
    expect(schemas.SignatureDiagnosis.properties.code.enum).toEqual([...DIAGNOSIS_CODES]);
    expect(schemas.SignatureDiagnosis.required).toEqual(['code', 'fix']);
  });

  test("over MCP (SDK client): search shows the field in getSetupState's output; execute reads the diagnosis after a failure", async () => {
    const mcp = await startMcpServer();
    try {
      const { token } = await mcp.grant('admin_assistant');
      const { endpoint, secret } = await createEndpoint(mcp.env, token);
      const client = await mcp.connect(token);
      const found = (await tool(client, 'search', { query: 'setup' })).doc.operations.find((o: { operationId: string }) => o.operationId === 'getSetupState');
      const output = JSON.stringify(found.output);
      expect(output).toContain('authFailureDiagnosis');
      for (const code of DIAGNOSIS_CODES) expect(output).toContain(`"${code}"`);

      const sent = await fetch(`${mcp.url}/hooks/${endpoint.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [endpoint.auth.headerName]: `sha256=${hmacHex(secret, BODY)}` },
        body: BODY,
      });
      expect(sent.status).toBe(401);
      const run = await execute(client, "const s = await api.call('getSetupState', {}); return s.data.endpoints.map((e) => e.authFailureDiagnosis);");
      expect(run.isError).toBe(false);
      expect(run.text).toContain('prefix_sha256');
      expect(run.text).toContain(DIAGNOSES.prefix_sha256.fix.slice(0, 30));
    } finally {
      await mcp.stop();
    }
  });
});
