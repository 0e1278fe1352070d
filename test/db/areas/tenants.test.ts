/** TenantStore on every backend: stores, box-wide settings and grants, read back exactly as written. */
import { expect } from 'bun:test';
import { areaSuite, grant, OTHER_STORE, otherStore, pad, shuffled, store, STORE, T0, withStores } from '../../fixtures/storage-rows.ts';

areaSuite('TenantStore', (test) => {
  test('stores read back exactly as inserted, by id and by shop; unknown ones are null', async (repo) => {
    await withStores(repo);
    expect(await repo.getStore(STORE)).toEqual(store());
    expect(await repo.getStore(OTHER_STORE)).toEqual(otherStore());
    expect(await repo.getStoreByShop('other.myshopify.com')).toEqual(otherStore());
    expect(await repo.getStore('st_none')).toBeNull();
    expect(await repo.getStoreByShop('none.myshopify.com')).toBeNull();
  });

  test('listStores returns every store by id ascending, whatever the order they were inserted in', async (repo) => {
    const ids = Array.from({ length: 12 }, (_, i) => `st_${pad(i + 1)}`);
    for (const id of shuffled(ids)) await repo.insertStore(store({ id, shopDomain: `${id}.myshopify.com`, createdAt: T0 + ids.indexOf(id) }));
    const listed = await repo.listStores();
    expect(listed.map((s) => s.id)).toEqual(ids);
    expect(listed[4]).toEqual(store({ id: 'st_05', shopDomain: 'st_05.myshopify.com', createdAt: T0 + 4 }));
  });

  test('updateStore replaces the mutable fields of that store only; id, shop and creation stay', async (repo) => {
    await withStores(repo);
    const changed = {
      plan: 'growth',
      billingStatus: 'past_due',
      destination: 'shopify',
      adminTokenEnv: 'SHOP_TOKEN',
      credentialMode: 'client_credentials',
      clientId: 'client-1',
      clientSecretEnv: 'SHOP_SECRET',
      uninstalledAt: T0 + 50,
      updatedAt: T0 + 60,
    };
    await repo.updateStore(store({ ...changed, shopDomain: 'renamed.myshopify.com', createdAt: T0 + 99 }));
    expect(await repo.getStore(STORE)).toEqual(store(changed));
    expect(await repo.getStoreByShop('renamed.myshopify.com')).toBeNull();
    expect(await repo.getStore(OTHER_STORE)).toEqual(otherStore());
    // Back to null: a nullable field is cleared, not kept.
    await repo.updateStore(store({ ...changed, adminTokenEnv: null, uninstalledAt: null, updatedAt: T0 + 70 }));
    expect(await repo.getStore(STORE)).toMatchObject({ adminTokenEnv: null, uninstalledAt: null, updatedAt: T0 + 70, plan: 'growth' });
  });

  test('settings: null until put, the last put wins, keys are independent', async (repo) => {
    expect(await repo.getSetting('public_url')).toBeNull();
    await repo.putSetting('public_url', '"https://a.example"', T0);
    await repo.putSetting('other', '{"n":1}', T0);
    await repo.putSetting('public_url', '"https://b.example"', T0 + 1);
    expect(await repo.getSetting('public_url')).toBe('"https://b.example"');
    expect(await repo.getSetting('other')).toBe('{"n":1}');
    expect(await repo.getSetting('Public_URL')).toBeNull();
  });

  test('grants read back exactly by token hash, numbers as numbers; an unknown hash is null', async (repo) => {
    await withStores(repo);
    const g = grant({ id: 'gr_1', expiresAt: T0 + 8 * 3600_000, lastUsedAt: T0 + 5, scopes: '["setup:read","events:read"]' });
    await repo.insertGrant(g);
    const read = await repo.getGrantByTokenHash('hash_gr_1');
    expect(read).toEqual(g);
    expect([typeof read?.expiresAt, typeof read?.createdAt, typeof read?.lastUsedAt]).toEqual(['number', 'number', 'number']);
    expect(await repo.getGrantByTokenHash('hash_none')).toBeNull();
  });

  test('listGrants: by id ascending, all stores or one store, whatever the insertion order', async (repo) => {
    await withStores(repo);
    const ids = Array.from({ length: 14 }, (_, i) => `gr_${pad(i + 1)}`);
    // Odd numbers on STORE, even on the other store.
    const storeOf = (id: string) => (Number(id.slice(3)) % 2 ? STORE : OTHER_STORE);
    for (const id of shuffled(ids)) await repo.insertGrant(grant({ id, storeId: storeOf(id) }));
    expect((await repo.listGrants()).map((g) => g.id)).toEqual(ids);
    expect((await repo.listGrants(STORE)).map((g) => g.id)).toEqual(ids.filter((id) => storeOf(id) === STORE));
    expect((await repo.listGrants(OTHER_STORE)).map((g) => g.id)).toEqual(ids.filter((id) => storeOf(id) === OTHER_STORE));
    expect(await repo.listGrants('st_none')).toEqual([]);
    expect((await repo.listGrants(STORE))[0]).toEqual(grant({ id: 'gr_01' }));
  });

  test('revokeGrant: null for an unknown id; the first revocation time is kept when revoked again; others untouched', async (repo) => {
    await withStores(repo);
    await repo.insertGrant(grant({ id: 'gr_1' }));
    await repo.insertGrant(grant({ id: 'gr_2' }));
    expect(await repo.revokeGrant('gr_none', T0)).toBeNull();
    expect(await repo.revokeGrant('gr_1', T0 + 5)).toEqual(grant({ id: 'gr_1', revokedAt: T0 + 5 }));
    expect(await repo.revokeGrant('gr_1', T0 + 9)).toEqual(grant({ id: 'gr_1', revokedAt: T0 + 5 }));
    expect((await repo.getGrantByTokenHash('hash_gr_1'))?.revokedAt).toBe(T0 + 5);
    expect((await repo.listGrants(STORE)).map((g) => [g.id, g.revokedAt])).toEqual([
      ['gr_1', T0 + 5],
      ['gr_2', null],
    ]);
  });
});
