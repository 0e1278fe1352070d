/** EndpointStore on every backend: endpoints read back exactly, scoped by store, listed by id, updated in place. */
import { expect } from 'bun:test';
import { areaSuite, endpoint, EP, EP2, OTHER_EP, OTHER_STORE, pad, shuffled, STORE, T0, withStores } from '../../fixtures/storage-rows.ts';

areaSuite('EndpointStore', (test) => {
  test('an endpoint reads back exactly, scoped to its store; another store id or an unknown id is null', async (repo) => {
    await withStores(repo);
    const e = endpoint({ id: EP, resourceIdPath: 'order.id', eventType: 'order.flagged', previousSecretSealed: 'old', previousSecretExpiresAt: T0 + 3600_000 });
    await repo.insertEndpoint(e, { triggerVariant: 'generic' });
    await repo.insertEndpoint(endpoint({ id: OTHER_EP, storeId: OTHER_STORE }), {});
    const read = await repo.getEndpoint(STORE, EP);
    expect(read).toEqual(e);
    expect([typeof read?.configVersion, typeof read?.previousSecretExpiresAt, typeof read?.createdAt]).toEqual(['number', 'number', 'number']);
    expect(await repo.getEndpoint(OTHER_STORE, EP)).toBeNull();
    expect(await repo.getEndpoint(STORE, OTHER_EP)).toBeNull();
    expect(await repo.getEndpoint(STORE, 'ep_none')).toBeNull();
  });

  test('getEndpointById is unscoped (the inbound path knows only the id); unknown is null', async (repo) => {
    await withStores(repo);
    await repo.insertEndpoint(endpoint({ id: EP }), {});
    await repo.insertEndpoint(endpoint({ id: OTHER_EP, storeId: OTHER_STORE }), {});
    expect(await repo.getEndpointById(OTHER_EP)).toEqual(endpoint({ id: OTHER_EP, storeId: OTHER_STORE }));
    expect(await repo.getEndpointById(EP)).toEqual(endpoint({ id: EP }));
    expect(await repo.getEndpointById('ep_none')).toBeNull();
  });

  test('listEndpoints: the store’s endpoints only, by id ascending, whatever the insertion order', async (repo) => {
    await withStores(repo);
    const ids = Array.from({ length: 12 }, (_, i) => `ep_${pad(i + 1)}`);
    const storeOf = (id: string) => (Number(id.slice(3)) % 3 ? STORE : OTHER_STORE);
    for (const id of shuffled(ids)) await repo.insertEndpoint(endpoint({ id, storeId: storeOf(id), createdAt: T0 + Number(id.slice(3)) }), {});
    expect((await repo.listEndpoints(STORE)).map((e) => e.id)).toEqual(ids.filter((id) => storeOf(id) === STORE));
    expect((await repo.listEndpoints(OTHER_STORE)).map((e) => e.id)).toEqual(['ep_03', 'ep_06', 'ep_09', 'ep_12']);
    expect(await repo.listEndpoints('st_none')).toEqual([]);
    expect((await repo.listEndpoints(OTHER_STORE))[1]).toEqual(endpoint({ id: 'ep_06', storeId: OTHER_STORE, createdAt: T0 + 6 }));
  });

  test('updateEndpoint writes the new config version and fields of that endpoint only', async (repo) => {
    await withStores(repo);
    await repo.insertEndpoint(endpoint({ id: EP }), {});
    await repo.insertEndpoint(endpoint({ id: EP2 }), {});
    const next = endpoint({
      id: EP,
      status: 'paused',
      name: 'renamed',
      secretSealed: 'new',
      secretLast4: 'wxyz',
      previousSecretSealed: 'sealed',
      previousSecretExpiresAt: T0 + 86400_000,
      requiredPaths: '["order.id"]',
      configVersion: 2,
      updatedAt: T0 + 10,
    });
    await repo.updateEndpoint(next, { status: 'paused' });
    expect(await repo.getEndpoint(STORE, EP)).toEqual(next);
    expect(await repo.getEndpointById(EP2)).toEqual(endpoint({ id: EP2 }));
    // A third version, the previous secret dropped again.
    const third = { ...next, previousSecretSealed: null, previousSecretExpiresAt: null, configVersion: 3, updatedAt: T0 + 20 };
    await repo.updateEndpoint(third, {});
    expect(await repo.getEndpointById(EP)).toEqual(third);
  });
});
