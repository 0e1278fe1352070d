/** Request ids come from the id generator: unique across restarts, so audit rows of two runs never share one. */
import { describe, expect, it } from 'bun:test';
import { createApp } from '../../src/server/app.ts';
import { addGrant, addStore, BASE, createTestEnv, rows } from '../helpers.ts';

describe('request ids', () => {
  it('differ between two app instances on the same database (a restart), and within one', async () => {
    const env = await createTestEnv();
    await addStore(env);
    const token = await addGrant(env, 'observer');
    const get = (app: ReturnType<typeof createApp>) =>
      app.fetch(new Request(`${BASE}/agent/v1/setup-state`, { headers: { authorization: `Bearer ${token}` } }));
    expect((await get(env.app)).status).toBe(200);
    expect((await get(env.app)).status).toBe(200);
    const restarted = createApp(env.core); // a new process would start its own app the same way
    expect((await get(restarted)).status).toBe(200);

    const ids = (await rows<{ id: string }>(env, 'SELECT request_id AS id FROM audit_log ORDER BY id')).map((r) => r.id);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-z]{26}$/);
  });

  it('differ for MCP requests too (audited refusals of two app instances)', async () => {
    const env = await createTestEnv();
    const refusedOrigin = (app: ReturnType<typeof createApp>) =>
      app.fetch(
        new Request(`${BASE}/agent/v1/mcp`, {
          method: 'POST',
          headers: { origin: 'https://elsewhere.example', 'content-type': 'application/json' },
          body: '{}',
        }),
      );
    expect((await refusedOrigin(env.app)).status).toBe(403);
    expect((await refusedOrigin(createApp(env.core))).status).toBe(403);
    const ids = (await rows<{ id: string }>(env, 'SELECT request_id AS id FROM audit_log ORDER BY id')).map((r) => r.id);
    expect(ids).toHaveLength(2);
    expect(ids[0]).not.toBe(ids[1]);
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-z]{26}$/);
  });
});
