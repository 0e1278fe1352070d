/**
 * POST /hooks/{endpointId} end to end through env.app.fetch: every status and stable code, and what each one
 * leaves in the database (events, event_bodies, auth_failures).
 */
import { describe, expect, test } from 'bun:test';
import { hmacHex, newEndpointSecret } from '../../src/lib/crypto.ts';
import {
  addGrant,
  addStore,
  BASE,
  call,
  columnsOf,
  count,
  createEndpoint,
  createTestEnv,
  execSql,
  gatherReceipts,
  holdCommits,
  orderEvent,
  row,
  rows,
  sendHook,
  sqliteOnly,
  type TestEnv,
} from '../helpers.ts';
import { bigOrderEvent, fillDisk } from '../fixtures/disk-full.ts';

const MiB = 1024 * 1024;
const MARKER = 'INBOUND_BODY_MARKER_51c9';

async function setup() {
  const env = await createTestEnv();
  const store = await addStore(env);
  const token = await addGrant(env, 'admin_assistant');
  return { env, token, store };
}

function eventRow(env: TestEnv, id: string) {
  return row(env, 'SELECT * FROM events WHERE id = ?', id);
}

/** Posts raw bytes (or a stream) with full control of the headers. Signs `signBytes` when given. */
async function rawPost(env: TestEnv, endpointId: string, init: { body?: RequestInit['body']; headers?: Record<string, string>; method?: string }) {
  const res = await env.app.fetch(new Request(`${BASE}/hooks/${endpointId}`, { method: init.method ?? 'POST', headers: init.headers, body: init.body }));
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) as any };
}

/** A JSON body of exactly `size` bytes: an order event padded with a string field. */
function paddedBody(size: number, ext = 'ext-big'): string {
  const head = `{"event_type":"order.flagged","external_event_id":"${ext}","order":{"id":4501},"pad":"`;
  const tail = '"}';
  const body = head + 'x'.repeat(size - head.length - tail.length) + tail;
  if (Buffer.byteLength(body) !== size) throw new Error('padding arithmetic');
  return body;
}

function streamOf(bytes: Uint8Array, chunk = 64 * 1024): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.byteLength) return c.close();
      c.enqueue(bytes.subarray(off, off + chunk));
      off += chunk;
    },
  });
}

describe('sender profiles choose the auth mode on POST /agent/v1/endpoints', () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['nothing given', {}, 'hmac_sha256', 'X-Hookrelay-Signature'],
    ['custom_http', { senderProfile: 'custom_http' }, 'hmac_sha256', 'X-Hookrelay-Signature'],
    ['zapier', { senderProfile: 'zapier' }, 'static_header', 'X-Hookrelay-Token'],
    ['make', { senderProfile: 'make' }, 'static_header', 'X-Hookrelay-Token'],
    ['n8n', { senderProfile: 'n8n' }, 'static_header', 'X-Hookrelay-Token'],
    ['zapier with explicit hmac', { senderProfile: 'zapier', authMode: 'hmac_sha256' }, 'hmac_sha256', 'X-Hookrelay-Signature'],
    [
      'custom_http with explicit static + header',
      { senderProfile: 'custom_http', authMode: 'static_header', headerName: 'X-Shared-Key' },
      'static_header',
      'X-Shared-Key',
    ],
    ['make with explicit header only', { senderProfile: 'make', headerName: 'X-Make-Key' }, 'static_header', 'X-Make-Key'],
    ['explicit static only', { authMode: 'static_header' }, 'static_header', 'X-Hookrelay-Token'],
  ];
  test.each(cases)('%s', async (_name, extra, mode, headerName) => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id', ...extra });
    expect(endpoint.auth.mode).toBe(mode);
    expect(endpoint.auth.headerName).toBe(headerName);
    const stored = await row(env, 'SELECT auth_mode, header_name FROM endpoints WHERE id = ?', endpoint.id);
    expect(stored).toEqual({ auth_mode: mode, header_name: headerName });
    // And the inbound path enforces it: the matching credential works under the configured header.
    const ok = await sendHook(env, endpoint, secret, orderEvent('ext-profile'));
    expect(ok.status).toBe(202);
    expect(ok.json.status).toBe('accepted');
  });
});

describe('accepted events', () => {
  test('202 {receiptId, eventId, status: accepted}; event row, retained body, no auth failure', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: 'ext-1', order: { id: 4501 }, note: MARKER });
    const r = await sendHook(env, endpoint, secret, body);
    expect(r.status).toBe(202);
    expect(Object.keys(r.json).sort()).toEqual(['eventId', 'receiptId', 'status']);
    expect(r.json.status).toBe('accepted');
    expect(r.json.eventId).toMatch(/^evt_/);
    expect(r.json.receiptId).toMatch(/^rcpt_/);

    const row = (await eventRow(env, r.json.eventId))!;
    expect(row.receipt_id).toBe(r.json.receiptId);
    expect(row.endpoint_id).toBe(endpoint.id);
    expect(row.outcome).toBe('accepted');
    expect(row.code).toBeNull();
    expect(row.external_event_id).toBe('ext-1');
    expect(row.event_type).toBe('order.flagged');
    expect(row.resource_id).toBe('4501');
    expect(row.body_bytes).toBe(Buffer.byteLength(body));
    expect(row.body_retention).toBe('retained');
    expect(row.config_version).toBe(1);
    expect(row.next_attempt_at).not.toBeNull();
    const [stored] = await rows(env, 'SELECT body FROM event_bodies WHERE event_id = ?', r.json.eventId);
    expect(Buffer.from(stored!.body).toString('utf8')).toBe(body);
    expect(await count(env, 'auth_failures')).toBe(0);
  });

  test('the event appears in the reads with the right outcome and without the raw body', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id', requiredPaths: ['customer.email'] });
    const good = await sendHook(env, endpoint, secret, JSON.stringify({ external_event_id: 'ext-r1', order: { id: 7 }, customer: { email: MARKER } }));
    const rejected = await sendHook(env, endpoint, secret, JSON.stringify({ external_event_id: 'ext-r2', order: { id: 7 }, note: MARKER }));
    const dup = await sendHook(env, endpoint, secret, JSON.stringify({ external_event_id: 'ext-r1', order: { id: 7 }, customer: { email: MARKER } }));
    expect([good.status, rejected.status, dup.status]).toEqual([202, 422, 202]);

    const list = await call(env, 'GET', '/agent/v1/events?limit=10', { token });
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(MARKER);
    const byId = Object.fromEntries(list.json.data.events.map((e: any) => [e.id, e]));
    expect(byId[good.json.eventId]).toMatchObject({
      outcome: 'accepted',
      code: null,
      receiptId: good.json.receiptId,
      externalEventId: 'ext-r1',
      bodyRetention: 'retained',
    });
    expect(byId[rejected.json.eventId]).toMatchObject({ outcome: 'rejected', code: 'SVC_REQUIRED_PATH_MISSING', replayable: false, bodyRetention: 'none' });
    expect(byId[dup.json.eventId]).toMatchObject({ outcome: 'duplicate_suppressed', replayable: false });

    for (const id of [good.json.eventId, rejected.json.eventId, dup.json.eventId]) {
      const detail = await call(env, 'GET', `/agent/v1/events/${id}`, { token });
      expect(detail.status).toBe(200);
      expect(detail.text).not.toContain(MARKER);
      expect(detail.json.data.event.id).toBe(id);
    }
    const dupDetail = await call(env, 'GET', `/agent/v1/events/${dup.json.eventId}`, { token });
    expect(dupDetail.json.data.event.duplicateOf).toBe(good.json.eventId);

    const filtered = await call(env, 'GET', '/agent/v1/events?outcome=rejected', { token });
    expect(filtered.json.data.events.map((e: any) => e.id)).toEqual([rejected.json.eventId]);
  });

  test('the 202 is sent only after the receipt commits', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const release = holdCommits(env);
    let settled = false;
    const pending = sendHook(env, endpoint, secret, orderEvent('ext-commit')).then((r) => {
      settled = true;
      return r;
    });
    await Bun.sleep(30);
    expect(settled).toBe(false);
    expect(await count(env, 'events')).toBe(0);
    release();
    const r = await pending;
    expect(r.status).toBe(202);
    expect((await eventRow(env, r.json.eventId))!.outcome).toBe('accepted');
  });

  // SQLite-only: the full disk is SQLite's own page limit (test/fixtures/disk-full.ts).
  test.if(sqliteOnly)('a failed commit answers 503 with Retry-After, never 202', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    fillDisk(env.repo);
    const res = await env.app.fetch(
      new Request(`${BASE}/hooks/${endpoint.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [endpoint.auth.headerName]: hmacHex(secret, bigOrderEvent('ext-503')) },
        body: bigOrderEvent('ext-503'),
      }),
    );
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('30');
    const json = (await res.json()) as any;
    expect(json.code).toBe('storage_unavailable');
    expect(json.eventId).toBeUndefined();
    expect(await count(env, 'events')).toBe(0);
  });
});

describe('routing, method and media type', () => {
  test('unknown and archived endpoints give the identical 404 body and record nothing', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const body = orderEvent('ext-404');

    const unknown = await rawPost(env, 'ep_00000000000000000000000000', {
      body,
      headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe('not_found');

    // Active first: the same request is accepted.
    expect((await sendHook(env, endpoint, secret, orderEvent('ext-before-archive'))).status).toBe(202);

    await execSql(env, "UPDATE endpoints SET status = 'archived' WHERE id = ?", endpoint.id);
    env.app.endpoints.invalidate(endpoint.id);
    const archived = await rawPost(env, endpoint.id, {
      body,
      headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) },
    });
    expect(archived.status).toBe(404);
    expect(archived.text).toBe(unknown.text);
    expect(archived.headers.get('content-type')).toBe(unknown.headers.get('content-type'));
    expect(archived.text).not.toContain(endpoint.id);
    expect(archived.text).not.toMatch(/archiv/i);

    // Even a bad signature on an archived endpoint is just "not found".
    const archivedBadSig = await rawPost(env, endpoint.id, { body, headers: { 'content-type': 'application/json', 'x-hookrelay-signature': '0'.repeat(64) } });
    expect(archivedBadSig.text).toBe(unknown.text);

    expect(await count(env, 'events')).toBe(1);
    expect(await count(env, 'auth_failures')).toBe(0);
  });

  test('GET on /hooks/{id} answers 405 with Allow: POST', async () => {
    const { env, token } = await setup();
    const { endpoint } = await createEndpoint(env, token);
    const r = await rawPost(env, endpoint.id, { method: 'GET' });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
    expect(r.json.code).toBe('method_not_allowed');
    expect((await count(env, 'events')) + (await count(env, 'auth_failures'))).toBe(0);
  });

  test('Content-Type: text/plain and a missing Content-Type answer 415; charset parameter is accepted', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const body = orderEvent('ext-ct');
    const sig = hmacHex(secret, body);

    const plain = await rawPost(env, endpoint.id, { body, headers: { 'content-type': 'text/plain', 'x-hookrelay-signature': sig } });
    expect(plain.status).toBe(415);
    expect(plain.json.code).toBe('unsupported_media_type');

    const none = await rawPost(env, endpoint.id, { body: new TextEncoder().encode(body), headers: { 'x-hookrelay-signature': sig } });
    expect(none.status).toBe(415);
    expect(none.json.code).toBe('unsupported_media_type');

    const lookalike = await rawPost(env, endpoint.id, { body, headers: { 'content-type': 'application/jsonp', 'x-hookrelay-signature': sig } });
    expect(lookalike.status).toBe(415);

    expect((await count(env, 'events')) + (await count(env, 'auth_failures'))).toBe(0);

    const charset = await rawPost(env, endpoint.id, { body, headers: { 'content-type': 'application/json; charset=utf-8', 'x-hookrelay-signature': sig } });
    expect(charset.status).toBe(202);
    expect(charset.json.status).toBe('accepted');
    expect(await count(env, 'events')).toBe(1);
  });
});

describe('body size limit (1 MiB)', () => {
  test('exactly 1 MiB is accepted, with and without Content-Length', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    expect(env.core.config.maxBodyBytes).toBe(MiB);

    const a = paddedBody(MiB, 'ext-1mib-a');
    const withLength = await rawPost(env, endpoint.id, {
      body: a,
      headers: { 'content-type': 'application/json', 'content-length': String(MiB), 'x-hookrelay-signature': hmacHex(secret, a) },
    });
    expect(withLength.status).toBe(202);
    expect((await eventRow(env, withLength.json.eventId))!.body_bytes).toBe(MiB);

    const b = new TextEncoder().encode(paddedBody(MiB, 'ext-1mib-b'));
    const streamed = await rawPost(env, endpoint.id, {
      body: streamOf(b),
      headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, b) },
    });
    expect(streamed.status).toBe(202);
    expect(streamed.json.status).toBe('accepted');
    expect((await eventRow(env, streamed.json.eventId))!.body_bytes).toBe(MiB);
  });

  test('1 MiB + 1 answers 413 SVC_PAYLOAD_TOO_LARGE, declared, undeclared, streamed or understated', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const big = paddedBody(MiB + 1);
    const bytes = new TextEncoder().encode(big);
    const sig = hmacHex(secret, big);
    const json = { 'content-type': 'application/json', 'x-hookrelay-signature': sig };

    const variants = [
      await rawPost(env, endpoint.id, { body: big, headers: { ...json, 'content-length': String(MiB + 1) } }),
      await rawPost(env, endpoint.id, { body: big, headers: json }),
      await rawPost(env, endpoint.id, { body: streamOf(bytes), headers: json }),
      await rawPost(env, endpoint.id, { body: streamOf(bytes, 1000), headers: json }),
      // A Content-Length that understates the body does not get it past the limit.
      await rawPost(env, endpoint.id, { body: bytes, headers: { ...json, 'content-length': '10' } }),
    ];
    for (const r of variants) {
      expect(r.status).toBe(413);
      expect(r.json.code).toBe('SVC_PAYLOAD_TOO_LARGE');
    }
    // A declared length over the limit is refused before any byte is read.
    let pulled = 0;
    const lazy = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled++;
        c.enqueue(new Uint8Array(1024));
      },
    });
    const declared = await rawPost(env, endpoint.id, { body: lazy, headers: { ...json, 'content-length': String(50 * MiB) } });
    expect(declared.status).toBe(413);
    expect(declared.json.code).toBe('SVC_PAYLOAD_TOO_LARGE');
    expect(pulled).toBeLessThanOrEqual(1);

    // An endless chunked body without Content-Length is cut off at the limit.
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(c) {
        sent += 64 * 1024;
        c.enqueue(new Uint8Array(64 * 1024).fill(0x20));
      },
    });
    const cut = await rawPost(env, endpoint.id, { body: endless, headers: json });
    expect(cut.status).toBe(413);
    expect(cut.json.code).toBe('SVC_PAYLOAD_TOO_LARGE');
    expect(sent).toBeLessThan(4 * MiB);

    expect(await count(env, 'events')).toBe(0);
    expect(await count(env, 'event_bodies')).toBe(0);
    expect(await count(env, 'auth_failures')).toBe(0);
  });
});

describe('inbound authentication failures', () => {
  test('missing header: 401 SVC_AUTH_HEADER_MISSING; wrong value: 401 SVC_AUTH_FAILED; no event, no body', async () => {
    const { env, token, store } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const body = JSON.stringify({ external_event_id: 'ext-auth', order: { id: 4501 }, note: MARKER });

    const missing = await sendHook(env, endpoint, secret, body, { auth: null });
    expect(missing.status).toBe(401);
    expect(missing.json.code).toBe('SVC_AUTH_HEADER_MISSING');
    expect(missing.json.eventId).toBeUndefined();
    expect(missing.json.receiptId).toBeUndefined();

    const empty = await sendHook(env, endpoint, secret, body, { auth: '' });
    expect(empty.status).toBe(401);
    expect(empty.json.code).toBe('SVC_AUTH_HEADER_MISSING');

    // The header under another name is as good as missing.
    const otherHeader = await sendHook(env, endpoint, secret, body, { auth: null, headers: { 'x-hookrelay-token': hmacHex(secret, body) } });
    expect(otherHeader.status).toBe(401);
    expect(otherHeader.json.code).toBe('SVC_AUTH_HEADER_MISSING');

    const wrongSecret = await sendHook(env, endpoint, secret, body, { auth: hmacHex(newEndpointSecret(), body) });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.json.code).toBe('SVC_AUTH_FAILED');

    const secretAsValue = await sendHook(env, endpoint, secret, body, { auth: secret });
    expect(secretAsValue.status).toBe(401);
    expect(secretAsValue.json.code).toBe('SVC_AUTH_FAILED');
    expect(JSON.stringify(secretAsValue.json)).not.toContain(secret);

    expect(await count(env, 'events')).toBe(0);
    expect(await count(env, 'event_bodies')).toBe(0);

    const failures = await env.repo.listAuthFailures(store.storeId);
    expect(failures.map((f) => f.code).sort()).toEqual(
      ['SVC_AUTH_FAILED', 'SVC_AUTH_FAILED', 'SVC_AUTH_HEADER_MISSING', 'SVC_AUTH_HEADER_MISSING', 'SVC_AUTH_HEADER_MISSING'].sort(),
    );
    for (const f of failures) {
      expect(f.endpointId).toBe(endpoint.id);
      expect(f.storeId).toBe(store.storeId);
      expect(f.at).toBe(env.clock.now());
    }
    // auth_failures has no room for a body or a header value (`diagnosis` holds a code of the contract's, not a value).
    const columns = (await columnsOf(env, 'auth_failures')).sort();
    expect(columns).toEqual(['at', 'code', 'count', 'diagnosis', 'endpoint_id', 'id', 'store_id']);
    const dump = JSON.stringify(await rows(env, 'SELECT * FROM auth_failures'));
    expect(dump).not.toContain(MARKER);
    expect(dump).not.toContain(secret);

    // The sender is fixed: a fresh, correctly signed event goes through.
    const ok = await sendHook(env, endpoint, secret, body);
    expect(ok.status).toBe(202);
    expect(await count(env, 'events')).toBe(1);
  });

  test.each(['zapier', 'make', 'n8n'])('static header (%s) accepts the exact secret and rejects anything else', async (profile) => {
    const { env, token, store } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id', senderProfile: profile });
    expect(endpoint.auth).toMatchObject({ mode: 'static_header', headerName: 'X-Hookrelay-Token' });

    const ok = await sendHook(env, endpoint, secret, orderEvent(`ext-${profile}`), { auth: secret });
    expect(ok.status).toBe(202);
    expect(ok.json.status).toBe('accepted');

    const body = orderEvent(`ext-${profile}-bad`);
    const wrong = [newEndpointSecret(), `${secret}x`, secret.slice(0, -1), secret.toUpperCase(), hmacHex(secret, body), `Bearer ${secret}`];
    for (const value of wrong) {
      const r = await sendHook(env, endpoint, secret, body, { auth: value });
      expect(r.status).toBe(401);
      expect(r.json.code).toBe('SVC_AUTH_FAILED');
    }
    const missing = await sendHook(env, endpoint, secret, body, { auth: null });
    expect(missing.status).toBe(401);
    expect(missing.json.code).toBe('SVC_AUTH_HEADER_MISSING');

    expect(await count(env, 'events')).toBe(1);
    expect((await env.repo.listAuthFailures(store.storeId, endpoint.id)).length).toBe(wrong.length + 1);
  });

  test('authentication runs before JSON parsing: an unsigned non-JSON body is an auth failure, not a rejected event', async () => {
    const { env, token, store } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const r = await sendHook(env, endpoint, secret, 'not json', { auth: '0'.repeat(64) });
    expect(r.status).toBe(401);
    expect(r.json.code).toBe('SVC_AUTH_FAILED');
    expect(await count(env, 'events')).toBe(0);
    expect((await env.repo.listAuthFailures(store.storeId)).length).toBe(1);
  });
});

describe('secret rotation overlap', () => {
  for (const mode of ['hmac_sha256', 'static_header'] as const) {
    test(`${mode}: previous secret verifies until it expires, the current one throughout`, async () => {
      const { env, token } = await setup();
      const { endpoint, secret: oldSecret } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id', authMode: mode });
      const newSecret = newEndpointSecret();
      const expiresAt = env.clock.now() + 24 * 3600_000;
      await execSql(
        env,
        'UPDATE endpoints SET secret_sealed = ?, secret_last4 = ?, previous_secret_sealed = ?, previous_secret_expires_at = ? WHERE id = ?',
        ...[env.core.box.seal(newSecret), newSecret.slice(-4), env.core.box.seal(oldSecret), expiresAt, endpoint.id],
      );
      env.app.endpoints.invalidate(endpoint.id);

      expect((await sendHook(env, endpoint, oldSecret, orderEvent('rot-1'))).status).toBe(202);
      expect((await sendHook(env, endpoint, newSecret, orderEvent('rot-2'))).status).toBe(202);
      const neither = await sendHook(env, endpoint, newEndpointSecret(), orderEvent('rot-3'));
      expect(neither.status).toBe(401);
      expect(neither.json.code).toBe('SVC_AUTH_FAILED');

      env.clock.advance(24 * 3600_000 - 1);
      expect((await sendHook(env, endpoint, oldSecret, orderEvent('rot-4'))).status).toBe(202);

      env.clock.advance(1); // now == expiresAt: the overlap is over
      const late = await sendHook(env, endpoint, oldSecret, orderEvent('rot-5'));
      expect(late.status).toBe(401);
      expect(late.json.code).toBe('SVC_AUTH_FAILED');
      env.clock.advance(3600_000);
      expect((await sendHook(env, endpoint, oldSecret, orderEvent('rot-6'))).status).toBe(401);
      expect((await sendHook(env, endpoint, newSecret, orderEvent('rot-7'))).status).toBe(202);

      expect(await count(env, 'events')).toBe(4);
      expect(await count(env, 'auth_failures')).toBe(3);
    });
  }
});

describe('rejected events (authenticated but invalid): 422, recorded, never handed off, body not kept', () => {
  async function expectRejected(env: TestEnv, r: { status: number; json: any }, code: string) {
    expect(r.status).toBe(422);
    expect(r.json.code).toBe(code);
    expect(r.json.status).toBe('rejected');
    expect(r.json.eventId).toMatch(/^evt_/);
    expect(r.json.receiptId).toMatch(/^rcpt_/);
    const row = (await eventRow(env, r.json.eventId))!;
    expect(row.outcome).toBe('rejected');
    expect(row.code).toBe(code);
    expect(row.receipt_id).toBe(r.json.receiptId);
    expect(row.next_attempt_at).toBeNull();
    expect(row.body_retention).toBe('none');
    expect(await count(env, 'event_bodies', 'event_id = ?', r.json.eventId)).toBe(0);
  }

  test('not JSON, empty, or not UTF-8: SVC_INVALID_JSON', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    await expectRejected(env, await sendHook(env, endpoint, secret, `{"note":"${MARKER}",`), 'SVC_INVALID_JSON');
    await expectRejected(env, await sendHook(env, endpoint, secret, ''), 'SVC_INVALID_JSON');

    const latin1 = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]); // {"a":"é"} in Latin-1
    const r = await rawPost(env, endpoint.id, {
      body: latin1,
      headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, latin1) },
    });
    await expectRejected(env, r, 'SVC_INVALID_JSON');

    expect(await count(env, 'events')).toBe(3);
    expect(await count(env, 'event_bodies')).toBe(0);
    expect(await count(env, 'auth_failures')).toBe(0);
    const dump = JSON.stringify(await rows(env, 'SELECT * FROM events'));
    expect(dump).not.toContain(MARKER);
  });

  test('requiredPaths: a missing or null customer.email is SVC_REQUIRED_PATH_MISSING', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id', requiredPaths: ['customer.email'] });
    expect(endpoint.requiredPaths).toEqual(['customer.email']);
    await expectRejected(env, await sendHook(env, endpoint, secret, JSON.stringify({ order: { id: 1 } })), 'SVC_REQUIRED_PATH_MISSING');
    await expectRejected(env, await sendHook(env, endpoint, secret, JSON.stringify({ order: { id: 1 }, customer: {} })), 'SVC_REQUIRED_PATH_MISSING');
    await expectRejected(
      env,
      await sendHook(env, endpoint, secret, JSON.stringify({ order: { id: 1 }, customer: { email: null } })),
      'SVC_REQUIRED_PATH_MISSING',
    );
    await expectRejected(
      env,
      await sendHook(env, endpoint, secret, JSON.stringify({ order: { id: 1 }, 'customer.email': 'a@b.c' })),
      'SVC_REQUIRED_PATH_MISSING',
    );
    const ok = await sendHook(env, endpoint, secret, JSON.stringify({ order: { id: 1 }, customer: { email: 'a@example.com' } }));
    expect(ok.status).toBe(202);
    expect(ok.json.status).toBe('accepted');
  });

  test('order variant: numeric ids and GIDs are normalised; anything else is SVC_RESOURCE_ID_UNMAPPABLE', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id' });
    const accepted: [unknown, string][] = [
      ['gid://shopify/Order/4501', '4501'],
      [4502, '4502'],
      ['4503', '4503'],
      [9007199254740991, '9007199254740991'],
    ];
    for (const [i, [value, expected]] of accepted.entries()) {
      const r = await sendHook(env, endpoint, secret, JSON.stringify({ external_event_id: `gid-ok-${i}`, order: { id: value } }));
      expect(r.status).toBe(202);
      expect((await eventRow(env, r.json.eventId))!.resource_id).toBe(expected);
    }
    const unmappable: unknown[] = [
      'abc',
      'gid://shopify/Order/abc',
      'gid://shopify/Order/0',
      0,
      -5,
      4501.5,
      '9999999999999999999', // beyond a safe integer: the Flow reference would silently change
      'gid://shopify/Order/99999999999999999999',
      true,
      { id: 4501 },
      null,
    ];
    for (const value of unmappable) {
      await expectRejected(env, await sendHook(env, endpoint, secret, JSON.stringify({ order: { id: value } })), 'SVC_RESOURCE_ID_UNMAPPABLE');
    }
    await expectRejected(env, await sendHook(env, endpoint, secret, JSON.stringify({ order: {} })), 'SVC_RESOURCE_ID_UNMAPPABLE');
    await expectRejected(env, await sendHook(env, endpoint, secret, JSON.stringify([1, 2])), 'SVC_RESOURCE_ID_UNMAPPABLE');
  });

  test('inventory variant needs relatedResourceIdPath at creation and a related id in each event', async () => {
    const { env, token } = await setup();
    const refused = await call(env, 'POST', '/agent/v1/endpoints', { token, body: { triggerVariant: 'inventory' } });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('invalid_input');
    expect(JSON.stringify(refused.json.error)).toContain('relatedResourceIdPath');
    expect(await count(env, 'endpoints')).toBe(0);

    const { endpoint, secret } = await createEndpoint(env, token, { triggerVariant: 'inventory', relatedResourceIdPath: 'item.sku' });
    const ok = await sendHook(env, endpoint, secret, JSON.stringify({ external_event_id: 'inv-1', item: { sku: 'SKU-42' } }));
    expect(ok.status).toBe(202);
    expect((await eventRow(env, ok.json.eventId))!.related_resource_id).toBe('SKU-42');
    const gid = await sendHook(env, endpoint, secret, JSON.stringify({ external_event_id: 'inv-2', item: { sku: 'gid://shopify/InventoryItem/77' } }));
    expect(gid.status).toBe(202);
    await expectRejected(env, await sendHook(env, endpoint, secret, JSON.stringify({ item: {} })), 'SVC_RESOURCE_ID_UNMAPPABLE');
    await expectRejected(env, await sendHook(env, endpoint, secret, JSON.stringify({ item: { sku: '' } })), 'SVC_RESOURCE_ID_UNMAPPABLE');
  });
});

describe('duplicate suppression (same external_event_id, same endpoint, 24 h)', () => {
  test('a repeat within 24 h is 202 duplicate_suppressed linking the first; not kept for handoff', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const first = await sendHook(env, endpoint, secret, orderEvent('ext-dup'));
    expect(first.json.status).toBe('accepted');
    env.clock.advance(23 * 3600_000);
    const second = await sendHook(env, endpoint, secret, orderEvent('ext-dup'));
    expect(second.status).toBe(202);
    expect(second.json).toEqual({
      receiptId: expect.stringMatching(/^rcpt_/),
      eventId: expect.stringMatching(/^evt_/),
      status: 'duplicate_suppressed',
      duplicateOf: first.json.eventId,
    });
    expect(second.json.eventId).not.toBe(first.json.eventId);
    const row = (await eventRow(env, second.json.eventId))!;
    expect(row.outcome).toBe('duplicate_suppressed');
    expect(row.duplicate_of).toBe(first.json.eventId);
    expect(row.next_attempt_at).toBeNull();
    expect(await count(env, 'event_bodies')).toBe(1);

    // A third copy still links the first, not the second.
    const third = await sendHook(env, endpoint, secret, orderEvent('ext-dup'));
    expect(third.json.duplicateOf).toBe(first.json.eventId);

    // After the window the same id is a new event.
    env.clock.advance(24 * 3600_000);
    const later = await sendHook(env, endpoint, secret, orderEvent('ext-dup'));
    expect(later.json.status).toBe('accepted');
    expect(later.json.duplicateOf).toBeUndefined();
  });

  test('the same external id on another endpoint, or a different id, is not a duplicate', async () => {
    const { env, token } = await setup();
    const a = await createEndpoint(env, token);
    const b = await createEndpoint(env, token);
    expect((await sendHook(env, a.endpoint, a.secret, orderEvent('ext-x'))).json.status).toBe('accepted');
    expect((await sendHook(env, b.endpoint, b.secret, orderEvent('ext-x'))).json.status).toBe('accepted');
    expect((await sendHook(env, a.endpoint, a.secret, orderEvent('ext-y'))).json.status).toBe('accepted');
    // Events without an external id are never deduplicated.
    const bare = JSON.stringify({ order: { id: 1 } });
    expect((await sendHook(env, a.endpoint, a.secret, bare)).json.status).toBe('accepted');
    expect((await sendHook(env, a.endpoint, a.secret, bare)).json.status).toBe('accepted');
  });

  test('a rejected event does not claim the external id', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    const bad = await sendHook(env, endpoint, secret, orderEvent('ext-fix', 'abc'));
    expect(bad.status).toBe(422);
    const fixed = await sendHook(env, endpoint, secret, orderEvent('ext-fix', 4501));
    expect(fixed.status).toBe(202);
    expect(fixed.json.status).toBe('accepted');
  });

  test('two copies sent concurrently (one group-commit batch): one accepted, one suppressed', async () => {
    const { env, token } = await setup();
    const { endpoint, secret } = await createEndpoint(env, token);
    // Record the batch sizes, to prove both copies were committed in the same transaction.
    const batches: number[] = [];
    const original = env.repo.commitIngest.bind(env.repo);
    env.repo.commitIngest = (receipts, failures) => {
      batches.push(receipts.length);
      return original(receipts, failures);
    };
    gatherReceipts(env, 2);
    const [x, y] = await Promise.all([sendHook(env, endpoint, secret, orderEvent('ext-race')), sendHook(env, endpoint, secret, orderEvent('ext-race'))]);
    expect(batches).toEqual([2]);
    expect([x.status, y.status]).toEqual([202, 202]);
    const statuses = [x.json.status, y.json.status].sort();
    expect(statuses).toEqual(['accepted', 'duplicate_suppressed']);
    const [winner, loser] = x.json.status === 'accepted' ? [x, y] : [y, x];
    expect(loser.json.duplicateOf).toBe(winner.json.eventId);
    expect(await count(env, 'events', "outcome = 'accepted'")).toBe(1);
    expect(await count(env, 'event_bodies')).toBe(1);

    // A larger burst: still exactly one accepted.
    const burst = await Promise.all(Array.from({ length: 8 }, () => sendHook(env, endpoint, secret, orderEvent('ext-burst'))));
    expect(burst.filter((r) => r.json.status === 'accepted').length).toBe(1);
    const first = burst.find((r) => r.json.status === 'accepted')!.json.eventId;
    for (const r of burst.filter((r) => r.json.status !== 'accepted')) {
      expect(r.json.status).toBe('duplicate_suppressed');
      expect(r.json.duplicateOf).toBe(first);
    }
  });
});
