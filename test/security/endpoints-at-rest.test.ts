/**
 * Endpoint creation's free text at rest: canaries of every secret shape pasted into name, sourceLabel and
 * eventType come back in no read (create, detail, setup state, events), no log line and no column of any table;
 * on SQLite, not in the bytes of the database files either (main file and -wal).
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteRepo } from '../../db/sqlite/repo.ts';
import { createCore, defaultConfig } from '../../src/core.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { newGrantToken, newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { memoryLog } from '../../src/lib/log.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { createApp } from '../../src/server/app.ts';
import { addGrant, addStore, BASE, call, count, createEndpoint, createTestEnv, sendHook, sqliteOnly, testHandoff, type TestEnv } from '../helpers.ts';
import { dumpDatabase } from './dump.ts';

let env: TestEnv;
let dir: string | null = null;
let dbPath: string | null = null;
let canaries: Record<string, string>;
let created: any;
const reads: string[] = [];

/** A deployment on a database file (SQLite), so the test can read what the disk holds; in memory on PostgreSQL runs. */
async function fileEnv(): Promise<TestEnv> {
  if (!sqliteOnly) return createTestEnv();
  dir = mkdtempSync(join(tmpdir(), 'hookrelay-endpoints-at-rest-'));
  dbPath = join(dir, 'hookrelay.db');
  const repo = await openSqliteRepo({ path: dbPath });
  const clock = new ManualClock();
  const log = memoryLog();
  const core = createCore({
    repo,
    box: new SecretBox(newSecretKey()),
    clock,
    log,
    config: defaultConfig({ publicUrl: BASE, env: () => undefined, handoff: testHandoff() }),
  });
  return { core, app: createApp(core), clock, log, repo };
}

beforeAll(async () => {
  env = await fileEnv();
  await addStore(env);
  const token = await addGrant(env, 'admin_assistant');
  const { secret } = await createEndpoint(env, token);
  canaries = {
    endpointSecret: secret,
    bareEndpointSecret: secret.slice('whsec_'.length),
    grantToken: await addGrant(env, 'observer'),
    otherGrantToken: newGrantToken(),
    shopifyToken: 'shpat_CANARY0123456789abcdef',
    databaseUrl: 'postgres://canary:CANARY_db_pw@db/hr',
    password: 'hunter2xyz',
  };
  const input = {
    triggerVariant: 'order',
    resourceIdPath: 'order.id',
    name: `orders ${canaries.bareEndpointSecret} password=${canaries.password}`,
    sourceLabel: `zap ${canaries.grantToken} ${canaries.shopifyToken}`,
    eventType: `${canaries.endpointSecret} ${canaries.databaseUrl}`,
  };
  for (const v of [input.name, input.sourceLabel, input.eventType]) expect(v.length).toBeLessThanOrEqual(100);
  const r = await call(env, 'POST', '/agent/v1/endpoints', { token, headers: { 'Idempotency-Key': 'rest-create' }, body: input });
  expect(r.status, r.text).toBe(201);
  created = r.json.data;
  reads.push(r.text);

  // An event without event_type takes the endpoint's, into the events table and the handoff.
  const sent = await sendHook(env, created.endpoint, created.secret, JSON.stringify({ external_event_id: 'rest-ep-1', order: { id: 4501 } }));
  expect(sent.status).toBe(202);
  await new HandoffWorker(env.core).drain();

  for (const path of [`/agent/v1/endpoints/${created.endpoint.id}`, '/agent/v1/setup-state', '/agent/v1/events', `/agent/v1/events/${sent.json.eventId}`]) {
    const read = await call(env, 'GET', path, { token });
    expect(read.status, read.text).toBe(200);
    reads.push(read.text);
  }
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('createEndpoint free text', () => {
  it('keeps the rest of each field, each secret replaced by its label, and warns that it redacted', () => {
    const { endpoint, warnings } = created;
    expect(endpoint.name).toBe('orders [redacted secret] password=[redacted password]');
    expect(endpoint.sourceLabel).toBe('zap [redacted grant token] [redacted platform token]');
    expect(endpoint.eventType).toBe('[redacted secret] [redacted database URL]');
    expect(warnings[0]).toContain('redacted');
  });

  it('no read echoes a canary: create, endpoint detail, setup state, events', () => {
    expect(reads).toHaveLength(5);
    for (const [name, canary] of Object.entries(canaries)) {
      if (name === 'endpointSecret') continue; // the create response shows the new endpoint's own secret, not this one
      for (const text of reads) expect(text.includes(canary), `${name} echoed`).toBe(false);
    }
    for (const text of reads) expect(text).not.toContain(canaries.endpointSecret);
    expect(reads.join('\n')).not.toContain('CANARY_db_pw');
    expect(reads[3]).toContain('"eventType":"[redacted secret] [redacted database URL]"'); // the event took the endpoint's
  });

  it('no log line holds a canary', () => {
    const log = env.log.lines.join('\n');
    expect(log).toContain('handoff (log destination)'); // the event, with the endpoint's event type, was handed off
    for (const [name, canary] of Object.entries(canaries)) expect(log.includes(canary), `${name} logged`).toBe(false);
  });

  it('no column of any table holds a canary (endpoints, endpoint_versions, events, idempotency_keys…)', async () => {
    expect(await count(env, 'endpoints')).toBe(2);
    expect(await count(env, 'endpoint_versions')).toBe(2);
    const dump = await dumpDatabase(env);
    expect(dump.endpoints).toContain(created.endpoint.id);
    for (const [name, canary] of Object.entries(canaries)) {
      for (const [table, text] of Object.entries(dump)) {
        if (text.includes(canary)) throw new Error(`${name} stored in plain text in ${table}`);
      }
    }
  });

  it.if(sqliteOnly)('the database files on disk (main file and -wal) hold no canary', () => {
    const files = [dbPath!, `${dbPath}-wal`, `${dbPath}-shm`].filter((f) => existsSync(f));
    expect(files).toContain(`${dbPath}-wal`);
    const bytes = Buffer.concat(files.map((f) => readFileSync(f)));
    // The endpoint is on disk (so the absence below means something).
    expect(bytes.includes(created.endpoint.id)).toBe(true);
    for (const [name, canary] of Object.entries(canaries)) expect(bytes.includes(canary), `${name} on disk`).toBe(false);
    for (const part of ['CANARY_db_pw', canaries.password!, 'shpat_CANARY']) expect(bytes.includes(part), `${part} on disk`).toBe(false);
  });
});
