/** One Idempotency-Key limit (src/contract/limits.ts) for the server, the OpenAPI document and the client. */
import { describe, expect, it } from 'bun:test';
import { HookrelayClient } from '../../src/client/http.ts';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../../src/contract/limits.ts';
import { buildOpenApi } from '../../src/contract/openapi.ts';
import { addGrant, addStore, BASE, call, createTestEnv } from '../helpers.ts';

describe('Idempotency-Key length', () => {
  it('the OpenAPI document states the limit', () => {
    const doc = buildOpenApi() as { components: { parameters: { IdempotencyKey: { schema: { maxLength: number } } } } };
    expect(doc.components.parameters.IdempotencyKey.schema.maxLength).toBe(IDEMPOTENCY_KEY_MAX_LENGTH);
  });

  it('server and client accept a key of exactly the limit and refuse one character more', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const token = await addGrant(env);
    const body = { kind: 'multi_store', summary: 'two stores' };
    const longest = 'k'.repeat(IDEMPOTENCY_KEY_MAX_LENGTH);
    const tooLong = `${longest}k`;
    const send = (key: string) => call(env, 'POST', '/agent/v1/expansion-requests', { token, headers: { 'Idempotency-Key': key }, body });
    expect((await send(longest)).status).toBe(201);
    const refused = await send(tooLong);
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toContain(String(IDEMPOTENCY_KEY_MAX_LENGTH));

    // The client, talking to the same in-process server, draws the line at the same place.
    const client = new HookrelayClient({
      baseUrl: BASE,
      token,
      fetch: ((url: string, init: RequestInit) => env.app.fetch(new Request(url, init))) as typeof fetch,
    });
    const ok = await client.call('createExpansionRequest', { body, idempotencyKey: longest });
    expect(ok.status).toBe(201);
    const err = await client.call('createExpansionRequest', { body, idempotencyKey: tooLong }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'invalid_input' });
    expect((err as Error).message).toContain(`1-${IDEMPOTENCY_KEY_MAX_LENGTH}`);
  });
});
