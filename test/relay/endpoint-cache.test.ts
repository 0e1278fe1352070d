/**
 * The inbound path's endpoint cache when full: the entry loaded longest ago makes room, the others stay (a
 * deployment with as many endpoints as entries would otherwise empty it on every reload, and read storage for
 * every receipt). A changed endpoint is read again; one gone is not kept.
 */
import { describe, expect, it } from 'bun:test';
import { EndpointCache } from '../../src/relay/endpoint-cache.ts';
import { addGrant, addStore, createEndpoint, createTestEnv } from '../helpers.ts';

async function setup() {
  const env = await createTestEnv();
  await addStore(env);
  const token = await addGrant(env);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await createEndpoint(env, token, { triggerVariant: 'generic', name: `ep ${i}` })).endpoint.id);
  // The storage as it is, its endpoint reads observed.
  const reads: string[] = [];
  const { getEndpointById } = env.repo;
  env.repo.getEndpointById = (id) => {
    reads.push(id);
    return getEndpointById.call(env.repo, id);
  };
  return { env, ids, reads };
}

describe('endpoint cache', () => {
  it('full, lets the entry loaded longest ago go and keeps the rest', async () => {
    const { env, ids, reads } = await setup();
    const [a, b, c] = ids as [string, string, string];
    const cache = new EndpointCache(env.core, 60_000, 2);
    for (const id of [a, b, c]) expect((await cache.get(id))?.row.id).toBe(id);
    expect(reads).toEqual([a, b, c]);
    // b and c are still held: no read.
    for (const id of [b, c]) expect((await cache.get(id))?.row.id).toBe(id);
    expect(reads).toEqual([a, b, c]);
    // a was the one to go: read again, and now b (loaded longest ago) makes room.
    await cache.get(a);
    await cache.get(c);
    await cache.get(b);
    expect(reads).toEqual([a, b, c, a, b]);
  });

  it('reads an entry again after its time, without dropping the others', async () => {
    const { env, ids, reads } = await setup();
    const [a, b] = ids as [string, string, string];
    const cache = new EndpointCache(env.core, 5_000, 2);
    await cache.get(a);
    env.clock.advance(3_000);
    await cache.get(b);
    env.clock.advance(3_000);
    // a is past its time, b is not: a reload of a at a full cache keeps b.
    await cache.get(a);
    await cache.get(b);
    expect(reads).toEqual([a, b, a]);
  });

  it('an endpoint that is gone is not kept', async () => {
    const { env, reads } = await setup();
    const cache = new EndpointCache(env.core, 60_000, 2);
    expect(await cache.get('ep_missing')).toBeNull();
    expect(await cache.get('ep_missing')).toBeNull();
    expect(reads).toEqual(['ep_missing', 'ep_missing']);
  });
});
