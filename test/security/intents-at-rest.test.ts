/**
 * Secrets at rest: free text an agent types into an intent (diagnostics note, support summary, replay reason) or
 * a request is kept only redacted. Canaries of every secret shape go through preview and execute; afterwards no
 * column of any table holds one, and the previews show the redacted text they will keep and share.
 */
import { beforeAll, describe, expect, it } from 'bun:test';
import { hmacHex } from '../../src/lib/crypto.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, call, count, createEndpoint, createTestEnv, executeIntent, orderEvent, row, sendHook, type TestEnv } from '../helpers.ts';
import { dumpDatabase } from './dump.ts';

let env: TestEnv;
let token: string;
let canaries: Record<string, string>;
/** One sentence holding every canary, pasted wherever free text goes. */
let pasted: string;
const responses: string[] = [];
const shown: Record<string, { preview: any; executed: any }> = {};

async function intent(path: string, input: Record<string, unknown>, key: string) {
  const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input } });
  expect(p.status, p.text).toBe(201);
  const x = await executeIntent(env, token, path, p.json.data.intent, key);
  expect(x.status, x.text).toBe(200);
  responses.push(p.text, x.text);
  return { preview: p.json.data.intent, executed: x.json.data.intent };
}

beforeAll(async () => {
  env = await createTestEnv();
  await addStore(env);
  token = await addGrant(env, 'admin_assistant');
  const { endpoint, secret } = await createEndpoint(env, token);
  const body = orderEvent('rest-1');
  const sent = await sendHook(env, endpoint, secret, body);
  await new HandoffWorker(env.core).drain();
  canaries = {
    endpointSecret: secret,
    grantToken: token,
    hmac: hmacHex(secret, body),
    authorization: 'Authorization: Bearer opaqueCANARYbearer0123456789abcdef',
    shopifyToken: 'shpat_CANARY0123456789abcdef0123456789',
    databaseUrl: 'postgres://canary_user:CANARY_db_pw@db.internal:5432/hookrelay',
    bareSecret: secret.slice('whsec_'.length),
    password: 'hunter2xyz',
  };
  pasted = `It fails. Secret ${canaries.endpointSecret}, token ${canaries.grantToken}, sig ${canaries.hmac}, header ${canaries.authorization}, shop ${canaries.shopifyToken}, db ${canaries.databaseUrl}, bare ${canaries.bareSecret}, password=${canaries.password}.`;

  const diag = await intent('/agent/v1/diagnostics-share-intents', { eventIds: [sent.json.eventId], note: pasted }, 'rest-diag');
  const support = await intent('/agent/v1/support-request-intents', { category: 'delivery', urgency: 'high', summary: pasted }, 'rest-sup');
  const replay = await intent(`/agent/v1/events/${sent.json.eventId}/replay-intents`, { reason: pasted }, 'rest-replay');
  const submit = await call(env, 'POST', '/agent/v1/support-request-intents', {
    token,
    headers: { 'Idempotency-Key': 'rest-submit' },
    body: { mode: 'submit', consent: true, input: { category: 'other', urgency: 'low', summary: pasted } },
  });
  expect(submit.status, submit.text).toBe(200);
  const expansion = await call(env, 'POST', '/agent/v1/expansion-requests', { token, body: { kind: 'multi_store', summary: pasted, detail: pasted } });
  const feature = await call(env, 'POST', '/agent/v1/feature-requests', { token, body: { capability: 'export', problem: pasted, detail: pasted } });
  expect([expansion.status, feature.status]).toEqual([201, 201]);
  responses.push(submit.text, expansion.text, feature.text);
  Object.assign(shown, { diag, support, replay });
});

describe('intent input at rest', () => {
  it('no column of any table holds any canary after preview and execute', async () => {
    const dump = await dumpDatabase(env);
    expect(Object.keys(dump)).toEqual(expect.arrayContaining(['intents', 'records', 'audit_log', 'idempotency_keys']));
    // The intents really were stored (so their absence below means something).
    expect(await count(env, 'intents')).toBe(4);
    for (const [name, canary] of Object.entries(canaries)) {
      for (const [table, text] of Object.entries(dump)) {
        if (text.includes(canary)) throw new Error(`${name} stored in plain text in ${table}`);
      }
    }
    const all = Object.values(dump).join('\n');
    expect(all).not.toContain('CANARY_db_pw');
    expect(all).not.toContain('opaqueCANARYbearer');
    expect(all).not.toMatch(/hrg_[0-9A-Za-z]{8,}|whsec_[0-9A-Za-z]{8,}|shpat_/);
  });

  it('the stored input keeps the rest of the text, each secret replaced by a label', async () => {
    const stored = (await row<{ input: string }>(env, "SELECT input FROM intents WHERE kind = 'diagnostics_share'"))!;
    const note = JSON.parse(stored.input).note as string;
    expect(note).toStartWith('It fails. Secret [redacted secret], token [redacted grant token], sig [redacted signature]');
    for (const label of ['[redacted authorization header]', '[redacted platform token]', '[redacted database URL]']) expect(note).toContain(label);
    expect(note).toEndWith('bare [redacted secret], password=[redacted password]');
  });

  it('the diagnostics preview shows the redacted note it will share, as support shows its summary', async () => {
    const { diag, support, replay } = shown;
    const diagTo = diag!.preview.preview.changes[0].to;
    expect(diagTo.note).toContain('[redacted secret]');
    const share = (await row<{ body: string }>(env, "SELECT body FROM records WHERE kind = 'diagnostics_share'"))!;
    expect(JSON.parse(share.body).note).toBe(diagTo.note);
    expect(support!.preview.preview.changes[0].to.summary).toContain('[redacted grant token]');
    expect(support!.preview.preview.changes[0].to.summary).toEndWith('bare [redacted secret], password=[redacted password]');
    expect(diagTo.note).toEndWith('bare [redacted secret], password=[redacted password]');
    for (const { preview } of [diag!, support!, replay!]) expect(preview.preview.warnings[0]).toContain('redacted');
  });

  it('no response echoes a canary back, and no log line holds one', () => {
    const log = env.log.lines.join('\n');
    for (const [name, canary] of Object.entries(canaries)) {
      if (name === 'grantToken') continue; // sent as the bearer of every call, never echoed (checked below)
      for (const text of responses) expect(text.includes(canary), `${name} echoed`).toBe(false);
      expect(log.includes(canary), `${name} logged`).toBe(false);
    }
    for (const text of responses) expect(text).not.toContain(token);
  });
});
