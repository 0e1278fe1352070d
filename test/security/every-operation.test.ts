/** Calls every served operation of the contract with canaries planted, and checks nothing leaks anywhere. */
import { describe, expect, it } from 'bun:test';
import { OPERATIONS } from '../../src/contract/operations.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { startFakeShopify } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, executeIntent, rows } from '../helpers.ts';

const SHOPIFY_TOKEN = 'shpat_CANARY_platform_token_1234';
const DB_URL = 'postgres://canary:CANARY_db_password@db.internal:5432/hookrelay';
const BODY_MARKER = 'RAW_BODY_CANARY_every_op';

describe('redaction across every operation', () => {
  it('no response, audit row or log line contains a secret, token, HMAC, database URL or raw body', async () => {
    const fake = await startFakeShopify({ token: SHOPIFY_TOKEN });
    const env = await createTestEnv({
      shopifyAdminUrl: fake.url,
      env: (n) => (n === 'SHOP_TOKEN' ? SHOPIFY_TOKEN : n === 'DATABASE_URL' ? DB_URL : undefined),
    });
    try {
      await addStore(env, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
      const token = await addGrant(env, 'admin_assistant', { ttlMs: 86400_000 });
      const { endpoint, secret } = await createEndpoint(env, token);
      const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: 'c-1', order: { id: 4501 }, note: BODY_MARKER });
      const { hmacHex } = await import('../../src/lib/crypto.ts');
      const signature = hmacHex(secret, body);
      const hook = await env.app.fetch(
        new Request(`http://local/hooks/${endpoint.id}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'X-Hookrelay-Signature': signature },
          body,
        }),
      );
      const { eventId } = (await hook.json()) as { eventId: string };
      await new HandoffWorker(env.core).drain();

      const texts: string[] = [];
      const served = new Set<string>();
      const ids = { endpointId: endpoint.id, eventId };
      const inputs: Record<string, unknown> = {
        createEndpointEditIntent: { name: 'edited' },
        createEndpointDeleteIntent: {},
        createSecretRotationIntent: { overlapSeconds: 60 },
        createReplayIntent: { reason: 'canary' },
        createBulkReplayIntent: { reason: `canary ${secret}`, filter: { outcome: 'delivered' } },
        createDiagnosticsShareIntent: { eventIds: [eventId] },
        createSupportRequestIntent: { category: 'delivery', urgency: 'low', summary: `help with ${secret} ${SHOPIFY_TOKEN}` },
      };
      const bodies: Record<string, unknown> = {
        createEndpoint: { triggerVariant: 'generic' },
        createEndpointTestIntent: {},
        createExpansionRequest: { kind: 'multi_store', summary: `more stores ${DB_URL}` },
        createFeatureRequest: { capability: 'x', problem: `need ${secret}` },
      };
      let rotated = '';
      for (const op of OPERATIONS) {
        if (op.operationId === 'connectMcpAgentOperations') continue;
        const path = op.path.replace('{endpointId}', ids.endpointId).replace('{eventId}', ids.eventId);
        if (op.effect === 'preview_or_execute') {
          await new HandoffWorker(env.core).drain(); // a replay executed before hands its event off again first
          const p = await call(env, 'POST', path, { token, body: { mode: 'preview', input: inputs[op.operationId] } });
          texts.push(p.text);
          expect(p.status, op.operationId).toBe(201);
          const intent = p.json.data.intent;
          served.add(op.operationId);
          if (op.operationId === 'createEndpointDeleteIntent') continue; // preview only: keep the endpoint for the rest
          const x = await executeIntent(env, token, path, intent, `k-${op.operationId}`);
          expect(x.status, op.operationId).toBe(200);
          if (op.operationId === 'createSecretRotationIntent') rotated = x.json.data.intent.result.secret;
          else texts.push(x.text);
        } else {
          const r = await call(env, op.method, path, { token, body: op.method === 'POST' ? bodies[op.operationId] : undefined });
          expect(r.status, op.operationId).toBeLessThan(300);
          if (op.operationId !== 'createEndpoint') texts.push(r.text);
        }
        served.add(op.operationId);
      }
      await new HandoffWorker(env.core).drain();
      expect(served.size).toBe(OPERATIONS.length - 1);
      expect(rotated).toStartWith('whsec_');

      const audit = JSON.stringify(await rows(env, 'SELECT * FROM audit_log'));
      const logs = env.log.lines.join('\n');
      const canaries = [secret, rotated, token, SHOPIFY_TOKEN, DB_URL, 'CANARY_db_password', BODY_MARKER, signature];
      for (const c of canaries) {
        for (const t of texts) expect(t.includes(c), `response contains ${c.slice(0, 12)}…`).toBe(false);
        expect(audit.includes(c), `audit contains ${c.slice(0, 12)}…`).toBe(false);
        expect(logs.includes(c), `logs contain ${c.slice(0, 12)}…`).toBe(false);
      }
      expect(fake.requests.length).toBeGreaterThanOrEqual(2);
    } finally {
      fake.stop();
    }
  });
});
