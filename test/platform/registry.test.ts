/** The registry: one platform per destination name of the contract, found by the store's destination. */
import { describe, expect, it } from 'bun:test';
import { DESTINATIONS } from '../../src/contract/platform.ts';
import { platformOf, platforms, platformSecretEnv } from '../../src/platform/registry.ts';
import { createTestEnv } from '../helpers.ts';

describe('platform registry', () => {
  it('holds one platform per destination name, each under its own name; an unknown destination hands off as log', () => {
    expect(platforms.map((p) => p.name).sort()).toEqual([...DESTINATIONS].sort());
    for (const name of DESTINATIONS) expect(platformOf(name).name).toBe(name);
    expect(platformOf('carrier-pigeon').name).toBe('log');
    expect(platformOf('__proto__').name).toBe('log');
    expect(platformSecretEnv).toContain('HOOKRELAY_SHOPIFY_APP_SECRET');
  });

  it("mounts each route once, none of them the server's own paths", async () => {
    const env = await createTestEnv();
    const unused = () => {
      throw new Error('not called while mounting');
    };
    const ops = { newStoreRow: unused, heldSecrets: unused };
    const paths = platforms.flatMap((p) => p.routes(env.core, ops).map((r) => r.path));
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths).toContain('/shopify/webhooks');
    for (const path of paths)
      expect(path.startsWith('/hooks/') || path.startsWith('/agent/') || ['/', '/docs', '/metrics', '/status'].includes(path)).toBe(false);
  });
});
