/**
 * Canaries: endpoint secrets, the grant token, HMAC header values and a raw-body marker are planted through
 * the real paths, then looked for in every response, every log line and every column of every table.
 * Secrets must exist only sealed (and the seal must open to the original), the token only as its SHA-256,
 * and the body marker only in event_bodies.
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { getTableName, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import { SQLiteTable } from 'drizzle-orm/sqlite-core';
import * as pgSchema from '../../db/pg/schema.ts';
import * as sqliteSchema from '../../db/sqlite/schema.ts';
import { hmacHex, newEndpointSecret, sha256Hex } from '../../src/lib/crypto.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, backend, BASE, call, count, createTestEnv, row as rowOf, rows, type TestEnv } from '../helpers.ts';
import { dumpDatabase } from './dump.ts';

const MARKER = 'RAW_BODY_CANARY_7f3a';

interface Captured {
  label: string;
  /** Status, headers and body together: what is searched for canaries. */
  text: string;
  body: string;
}

interface World {
  env: TestEnv;
  token: string;
  endpoints: { id: string; secret: string; mode: string; createText: string }[];
  eventIds: string[];
  /** Every HMAC / static header value sent on an inbound request (correct or not). */
  headerValues: string[];
  /** Every response after creation: status line, headers and body. */
  responses: Captured[];
}

function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

async function capture(label: string, res: Response): Promise<Captured> {
  const headers = JSON.stringify([...res.headers.entries()]);
  const body = await res.text();
  return { label, text: `${res.status} ${headers} ${body}`, body };
}

let w: World;

beforeAll(async () => {
  const env = await createTestEnv();
  await addStore(env);
  const token = await addGrant(env, 'admin_assistant');
  const world: World = { env, token, endpoints: [], eventIds: [], headerValues: [], responses: [] };

  const inputs = [
    { triggerVariant: 'order', resourceIdPath: 'order.id', requiredPaths: ['customer.email'] },
    { triggerVariant: 'order', resourceIdPath: 'order.id', senderProfile: 'zapier' },
    { triggerVariant: 'generic', authMode: 'static_header', headerName: 'X-Custom-Key' },
  ];
  for (const input of inputs) {
    const r = await call(env, 'POST', '/agent/v1/endpoints', { token, body: input });
    expect(r.status).toBe(201);
    world.endpoints.push({ id: r.json.data.endpoint.id, secret: r.json.data.secret, mode: r.json.data.endpoint.auth.mode, createText: r.text });
  }

  async function hook(ep: World['endpoints'][number], headerName: string, body: string, value: string | null) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (value !== null) {
      headers[headerName] = value;
      world.headerValues.push(value);
    }
    const res = await env.app.fetch(new Request(`${BASE}/hooks/${ep.id}`, { method: 'POST', headers, body }));
    const c = await capture(`POST /hooks/${ep.id}`, res);
    world.responses.push(c);
    return { status: res.status, json: JSON.parse(c.body) };
  }

  const [hmacEp, zapEp, customEp] = world.endpoints as [World['endpoints'][number], World['endpoints'][number], World['endpoints'][number]];
  const withMarker = (ext: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ event_type: 'order.flagged', external_event_id: ext, order: { id: 4501 }, customer: { email: 'a@example.com' }, note: MARKER, ...extra });

  // HMAC endpoint: accepted, duplicate, rejected (missing path, invalid JSON), auth failures.
  const b1 = withMarker('ext-1');
  const expected: number[] = [];
  expected.push((await hook(hmacEp, 'X-Hookrelay-Signature', b1, hmacHex(hmacEp.secret, b1))).status);
  expected.push((await hook(hmacEp, 'X-Hookrelay-Signature', b1, hmacHex(hmacEp.secret, b1))).status);
  const b2 = withMarker('ext-2', { customer: {} });
  expected.push((await hook(hmacEp, 'X-Hookrelay-Signature', b2, hmacHex(hmacEp.secret, b2))).status);
  const b3 = `{"note":"${MARKER}",`;
  expected.push((await hook(hmacEp, 'X-Hookrelay-Signature', b3, hmacHex(hmacEp.secret, b3))).status);
  const b4 = withMarker('ext-4');
  expected.push((await hook(hmacEp, 'X-Hookrelay-Signature', b4, hmacHex(newEndpointSecret(), b4))).status);
  expected.push((await hook(hmacEp, 'X-Hookrelay-Signature', b4, hmacHex(hmacEp.secret, b4).toUpperCase())).status);
  expected.push((await hook(hmacEp, 'X-Hookrelay-Signature', b4, null)).status);
  // Static endpoints: accepted, then a wrong token and the HMAC secret of another endpoint.
  const b5 = withMarker('ext-5');
  expected.push((await hook(zapEp, 'X-Hookrelay-Token', b5, zapEp.secret)).status);
  expected.push((await hook(zapEp, 'X-Hookrelay-Token', withMarker('ext-6'), hmacEp.secret)).status);
  expected.push((await hook(customEp, 'X-Custom-Key', withMarker('ext-7'), customEp.secret)).status);
  expected.push((await hook(customEp, 'X-Custom-Key', withMarker('ext-8'), `${customEp.secret}0`)).status);
  expect(expected).toEqual([202, 202, 422, 422, 401, 401, 401, 202, 401, 202, 401]);

  // Hand the accepted events off through the log destination, so the worker's log lines exist too.
  const handed = await new HandoffWorker(env.core).runOnce();
  expect(handed).toBe(3);
  expect(env.log.lines.some((l) => l.includes('handoff (log destination)'))).toBe(true);

  world.eventIds = (await rows<{ id: string }>(env, 'SELECT id FROM events ORDER BY id')).map((r) => r.id);
  expect(world.eventIds.length).toBe(6);

  // Every read an agent (or anyone) can make afterwards.
  const paths = [
    '/agent/v1/grant',
    '/agent/v1/events',
    '/agent/v1/events?limit=100',
    '/agent/v1/event-result',
    ...world.endpoints.map((e) => `/agent/v1/endpoints/${e.id}`),
    ...world.endpoints.map((e) => `/agent/v1/event-result?endpointId=${e.id}`),
    ...world.eventIds.map((id) => `/agent/v1/events/${id}`),
    ...world.eventIds.map((id) => `/agent/v1/event-result?eventId=${id}`),
    '/agent/v1/events/evt_doesnotexist',
    '/agent/v1/endpoints/ep_doesnotexist',
  ];
  for (const path of paths) {
    const res = await env.app.fetch(new Request(`${BASE}${path}`, { headers: { authorization: `Bearer ${token}` } }));
    expect(res.status === 200 || res.status === 404).toBe(true);
    world.responses.push(await capture(`GET ${path}`, res));
  }
  for (const path of ['/agent/v1/manifest', '/status', '/agent/v1/openapi.json', '/docs']) {
    const res = await env.app.fetch(new Request(`${BASE}${path}`));
    expect(res.status).toBe(200);
    world.responses.push(await capture(`GET ${path}`, res));
  }
  // A wrong bearer token (the real one with a changed character) is not echoed either.
  const wrongToken = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
  const unauthorized = await env.app.fetch(new Request(`${BASE}/agent/v1/events`, { headers: { authorization: `Bearer ${wrongToken}` } }));
  expect(unauthorized.status).toBe(401);
  world.responses.push(await capture('GET /agent/v1/events (wrong token)', unauthorized));
  // An endpoint secret used as a bearer token is not echoed.
  const secretAsBearer = await env.app.fetch(new Request(`${BASE}/agent/v1/grant`, { headers: { authorization: `Bearer ${hmacEp.secret}` } }));
  expect(secretAsBearer.status).toBe(401);
  world.responses.push(await capture('GET /agent/v1/grant (secret as token)', secretAsBearer));

  w = world;
});

describe('endpoint secrets', () => {
  test('each secret appears in its create response exactly once, and in no later response', () => {
    for (const ep of w.endpoints) {
      expect(ep.secret).toMatch(/^whsec_[0-9A-Za-z]{20,}$/);
      expect(occurrences(ep.createText, ep.secret)).toBe(1);
      for (const r of w.responses) {
        if (r.text.includes(ep.secret)) throw new Error(`secret of ${ep.id} leaked in ${r.label}`);
      }
    }
    // The reads show only the last four characters.
    const detail = w.responses.find((r) => r.label === `GET /agent/v1/endpoints/${w.endpoints[0]!.id}`)!;
    expect(detail.text).toContain(`"secretLast4":"${w.endpoints[0]!.secret.slice(-4)}"`);
    // No response after creation carries anything shaped like an endpoint secret.
    for (const r of w.responses) expect(r.text).not.toMatch(/whsec_[0-9A-Za-z]{8,}/);
  });

  test('no secret in any log line', () => {
    expect(w.env.log.lines.length).toBeGreaterThan(0);
    const log = w.env.log.lines.join('\n');
    for (const ep of w.endpoints) expect(log).not.toContain(ep.secret);
    expect(log).not.toMatch(/whsec_/);
  });

  test('the dump the canary searches read covers every table the backend declares (db/sqlite or db/pg schema)', async () => {
    const dump = await dumpDatabase(w.env);
    const declared = Object.values(backend === 'postgres' ? pgSchema : sqliteSchema)
      .filter((t) => is(t, PgTable) || is(t, SQLiteTable))
      .map((t) => getTableName(t as PgTable | SQLiteTable));
    expect(declared.length).toBeGreaterThan(15);
    expect(Object.keys(dump)).toEqual(expect.arrayContaining(declared));
  });

  test('no secret in plain text in any column of any table; stored only sealed, and the seal opens to the original', async () => {
    const dump = await dumpDatabase(w.env);
    expect(Object.keys(dump)).toEqual(
      expect.arrayContaining(['endpoints', 'endpoint_versions', 'events', 'event_bodies', 'auth_failures', 'grants', 'stores']),
    );
    for (const [table, text] of Object.entries(dump)) {
      for (const ep of w.endpoints) {
        if (text.includes(ep.secret)) throw new Error(`secret of ${ep.id} stored in plain text in ${table}`);
      }
      expect(text).not.toMatch(/whsec_/);
    }
    for (const ep of w.endpoints) {
      const row = (await rowOf<{ secret_sealed: string; secret_last4: string }>(
        w.env,
        'SELECT secret_sealed, secret_last4 FROM endpoints WHERE id = ?',
        ep.id,
      ))!;
      expect(row.secret_sealed).toMatch(/^v1\./);
      expect(row.secret_sealed).not.toContain(ep.secret);
      expect(w.env.core.box.open(row.secret_sealed)).toBe(ep.secret);
      expect(row.secret_last4).toBe(ep.secret.slice(-4));
      // A fresh seal of the same secret differs (random IV) and opens to the same value.
      const again = w.env.core.box.seal(ep.secret);
      expect(again).not.toBe(row.secret_sealed);
      expect(w.env.core.box.open(again)).toBe(ep.secret);
      // Tampering with the ciphertext is detected, not decrypted to something else.
      const parts = row.secret_sealed.split('.');
      const ct = Buffer.from(parts[3]!, 'base64url');
      ct[0]! ^= 1;
      parts[3] = ct.toString('base64url');
      expect(() => w.env.core.box.open(parts.join('.'))).toThrow();
    }
  });
});

describe('grant token', () => {
  test('never in any response, log line or table; only its SHA-256 is stored (and never returned)', async () => {
    const hash = sha256Hex(w.token);
    for (const r of w.responses) {
      if (r.text.includes(w.token)) throw new Error(`grant token leaked in ${r.label}`);
      if (r.text.includes(hash)) throw new Error(`grant token hash leaked in ${r.label}`);
      expect(r.text).not.toMatch(/hrg_[0-9A-Za-z]{8,}/);
    }
    for (const create of w.endpoints.map((e) => e.createText)) {
      expect(create).not.toContain(w.token);
      expect(create).not.toContain(hash);
    }
    const log = w.env.log.lines.join('\n');
    expect(log).not.toContain(w.token);
    expect(log).not.toContain(hash);

    const dump = await dumpDatabase(w.env);
    for (const [table, text] of Object.entries(dump)) {
      if (text.includes(w.token)) throw new Error(`grant token stored in plain text in ${table}`);
      expect(text).not.toMatch(/hrg_[0-9A-Za-z]{8,}/);
    }
    const grants = await rows<{ token_hash: string }>(w.env, 'SELECT token_hash FROM grants');
    expect(grants).toEqual([{ token_hash: hash }]);
    // The grant read really worked with that token (so the absence above is meaningful).
    const grantRead = w.responses.find((r) => r.label === 'GET /agent/v1/grant')!;
    expect(grantRead.text.startsWith('200 ')).toBe(true);
  });
});

describe('raw event bodies', () => {
  test('the marker is kept only in event_bodies, for the accepted events', async () => {
    const dump = await dumpDatabase(w.env);
    // The dump decodes blobs, so it does see the retained bodies.
    expect(occurrences(dump.event_bodies!, MARKER)).toBe(3);
    for (const [table, text] of Object.entries(dump)) {
      if (table === 'event_bodies') continue;
      if (text.includes(MARKER)) throw new Error(`raw body marker stored in ${table}`);
    }
    const bodies = await rows<{ outcome: string; body: Uint8Array }>(w.env, 'SELECT e.outcome, b.body FROM event_bodies b JOIN events e ON e.id = b.event_id');
    expect(bodies.length).toBe(3);
    for (const b of bodies) {
      expect(b.outcome).toBe('delivered');
      expect(Buffer.from(b.body).toString('utf8')).toContain(MARKER);
    }
    // Rejected and duplicate events keep no body; auth failures never had a place for one.
    const outcomes = (await rows<{ outcome: string }>(w.env, 'SELECT outcome FROM events ORDER BY outcome')).map((r) => r.outcome);
    expect(outcomes).toEqual(['delivered', 'delivered', 'delivered', 'duplicate_suppressed', 'rejected', 'rejected']);
    expect(await count(w.env, 'auth_failures')).toBe(5);
  });

  test('the marker is in no response and no log line', () => {
    for (const r of w.responses) {
      if (r.text.includes(MARKER)) throw new Error(`raw body marker returned by ${r.label}`);
    }
    expect(w.env.log.lines.join('\n')).not.toContain(MARKER);
    // The reads did cover the events that carried it.
    const list = w.responses.find((r) => r.label === 'GET /agent/v1/events?limit=100')!;
    for (const id of w.eventIds) expect(list.text).toContain(id);
  });
});

describe('HMAC and static header values', () => {
  test('no header value sent is in any response, log line or table', async () => {
    expect(w.headerValues.length).toBe(10);
    const dump = Object.values(await dumpDatabase(w.env)).join('\n');
    const log = w.env.log.lines.join('\n');
    for (const value of w.headerValues) {
      for (const r of w.responses) {
        if (r.text.includes(value)) throw new Error(`header value leaked in ${r.label}`);
        if (r.text.toLowerCase().includes(value.toLowerCase())) throw new Error(`header value (case-folded) leaked in ${r.label}`);
      }
      expect(log).not.toContain(value);
      expect(dump).not.toContain(value);
    }
  });
});
