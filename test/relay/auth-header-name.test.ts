/** A 401 for a missing authentication header names the header the endpoint is configured to read. */
import { describe, expect, it } from 'bun:test';
import { addGrant, addStore, createEndpoint, createTestEnv, orderEvent, sendHook } from '../helpers.ts';

describe('a missing authentication header', () => {
  it("is answered 401 naming the endpoint's configured header, for a signature and for a static token", async () => {
    const env = await createTestEnv();
    await addStore(env);
    const token = await addGrant(env);
    const signed = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id', headerName: 'X-Acme-Signature' });
    const missing = await sendHook(env, signed.endpoint, signed.secret, orderEvent('no-header'), { auth: null });
    expect(missing.status).toBe(401);
    expect(missing.json.code).toBe('SVC_AUTH_HEADER_MISSING');
    expect(missing.json.message).toContain('X-Acme-Signature');

    const plain = await createEndpoint(env, token, {
      triggerVariant: 'order',
      resourceIdPath: 'order.id',
      authMode: 'static_header',
      headerName: 'X-Zap-Token',
    });
    const other = await sendHook(env, plain.endpoint, plain.secret, orderEvent('no-header-2'), { auth: null });
    expect(other.json).toMatchObject({ code: 'SVC_AUTH_HEADER_MISSING' });
    expect(other.json.message).toContain('X-Zap-Token');
    expect(other.json.message).not.toContain(plain.secret);
  });
});
