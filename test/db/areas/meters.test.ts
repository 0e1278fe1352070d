/** UsageStore, ReadinessStore and RecordStore on every backend: meters summed as numbers, readiness as booleans, records scoped. */
import { expect } from 'bun:test';
import type { RecordRow } from '../../../db/types.ts';
import { areaSuite, DAY, OTHER_STORE, STORE, T0 } from '../../fixtures/storage-rows.ts';

const P1 = T0;
const P2 = T0 + 30 * DAY;

areaSuite('UsageStore', (test) => {
  test('addUsage sums per store, meter and period; getUsage returns one period’s meters as numbers', async (repo) => {
    expect(await repo.getUsage(STORE, P1)).toEqual({});
    for (let i = 1; i <= 10; i++) await repo.addUsage(STORE, 'replay_executions', P1, i);
    await repo.addUsage(STORE, 'accepted_events', P1, 250_000);
    await repo.addUsage(STORE, 'accepted_events', P2, 7);
    await repo.addUsage(OTHER_STORE, 'replay_executions', P1, 4);
    const usage = await repo.getUsage(STORE, P1);
    expect(usage).toEqual({ replay_executions: 55, accepted_events: 250_000 });
    expect(Object.values(usage).map((n) => typeof n)).toEqual(['number', 'number']);
    expect(await repo.getUsage(STORE, P2)).toEqual({ accepted_events: 7 });
    expect(await repo.getUsage(OTHER_STORE, P1)).toEqual({ replay_executions: 4 });
    expect(await repo.getUsage(OTHER_STORE, P2)).toEqual({});
  });

  test('concurrent adds to one meter are all counted', async (repo) => {
    await Promise.all(Array.from({ length: 20 }, () => repo.addUsage(STORE, 'replay_executions', P1, 1)));
    expect(await repo.getUsage(STORE, P1)).toEqual({ replay_executions: 20 });
  });
});

areaSuite('ReadinessStore', (test) => {
  test('readiness rows read back with real booleans; a second report replaces the first; per store', async (repo) => {
    expect(await repo.listTriggerReadiness(STORE)).toEqual([]);
    await repo.setTriggerReadiness({ storeId: STORE, handle: 'hookrelay-order', hasEnabledFlow: false, updatedAt: T0 });
    await repo.setTriggerReadiness({ storeId: STORE, handle: 'hookrelay-customer', hasEnabledFlow: true, updatedAt: T0 + 1 });
    await repo.setTriggerReadiness({ storeId: OTHER_STORE, handle: 'hookrelay-order', hasEnabledFlow: true, updatedAt: T0 + 2 });
    const byHandle = async (storeId: string) => (await repo.listTriggerReadiness(storeId)).sort((a, b) => a.handle.localeCompare(b.handle));
    expect(await byHandle(STORE)).toEqual([
      { storeId: STORE, handle: 'hookrelay-customer', hasEnabledFlow: true, updatedAt: T0 + 1 },
      { storeId: STORE, handle: 'hookrelay-order', hasEnabledFlow: false, updatedAt: T0 },
    ]);
    expect((await byHandle(STORE)).map((r) => typeof r.hasEnabledFlow)).toEqual(['boolean', 'boolean']);
    await repo.setTriggerReadiness({ storeId: STORE, handle: 'hookrelay-order', hasEnabledFlow: true, updatedAt: T0 + 5 });
    await repo.setTriggerReadiness({ storeId: STORE, handle: 'hookrelay-customer', hasEnabledFlow: false, updatedAt: T0 + 6 });
    expect(await byHandle(STORE)).toEqual([
      { storeId: STORE, handle: 'hookrelay-customer', hasEnabledFlow: false, updatedAt: T0 + 6 },
      { storeId: STORE, handle: 'hookrelay-order', hasEnabledFlow: true, updatedAt: T0 + 5 },
    ]);
    expect(await repo.listTriggerReadiness(OTHER_STORE)).toEqual([
      { storeId: OTHER_STORE, handle: 'hookrelay-order', hasEnabledFlow: true, updatedAt: T0 + 2 },
    ]);
  });
});

areaSuite('RecordStore', (test) => {
  const record = (fields: Partial<RecordRow> & { id: string }): RecordRow => ({
    storeId: STORE,
    kind: 'support',
    body: '{"summary":"x"}',
    createdAt: T0,
    expiresAt: null,
    ...fields,
  });

  test('a record reads back exactly by store, kind and id; another store, kind or id is null', async (repo) => {
    const diag = record({ id: 'diag_1', kind: 'diagnostics', body: '{"a":[1,2]}', expiresAt: T0 + 7 * DAY });
    await repo.insertRecord(record({ id: 'sup_1' }));
    await repo.insertRecord(diag);
    await repo.insertRecord(record({ id: 'sup_9', storeId: OTHER_STORE }));
    expect(await repo.getRecord(STORE, 'support', 'sup_1')).toEqual(record({ id: 'sup_1' }));
    const read = await repo.getRecord(STORE, 'diagnostics', 'diag_1');
    expect(read).toEqual(diag);
    expect([typeof read?.createdAt, typeof read?.expiresAt]).toEqual(['number', 'number']);
    expect(await repo.getRecord(STORE, 'support', 'diag_1')).toBeNull();
    expect(await repo.getRecord(STORE, 'support', 'sup_9')).toBeNull();
    expect(await repo.getRecord(OTHER_STORE, 'support', 'sup_1')).toBeNull();
    expect((await repo.getRecord(OTHER_STORE, 'support', 'sup_9'))?.storeId).toBe(OTHER_STORE);
    expect(await repo.getRecord(STORE, 'support', 'sup_none')).toBeNull();
  });
});
