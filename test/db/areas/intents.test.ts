/** IntentStore on every backend: intents read back exactly, scoped by store, moved by compare-and-set only. */
import { expect } from 'bun:test';
import { areaSuite, intent, OTHER_STORE, STORE, T0 } from '../../fixtures/storage-rows.ts';

areaSuite('IntentStore', (test) => {
  test('an intent reads back exactly, scoped to its store; another store id or an unknown id is null', async (repo) => {
    const row = intent({ id: 'int_1', targetId: 'evt_9', basis: '{"attempts":2}' });
    await repo.insertIntent(row);
    await repo.insertIntent(intent({ id: 'int_9', storeId: OTHER_STORE }));
    const read = await repo.getIntent(STORE, 'int_1');
    expect(read).toEqual(row);
    expect([typeof read?.confirmationExpiresAt, typeof read?.createdAt]).toEqual(['number', 'number']);
    expect(await repo.getIntent(OTHER_STORE, 'int_1')).toBeNull();
    expect(await repo.getIntent(STORE, 'int_9')).toBeNull();
    expect(await repo.getIntent(STORE, 'int_none')).toBeNull();
  });

  test('transitionIntent moves from the named state only, applying the whole patch; otherwise false and nothing applied', async (repo) => {
    await repo.insertIntent(intent({ id: 'int_1' }));
    await repo.insertIntent(intent({ id: 'int_2' }));
    // Not in that state: refused, the patch not applied.
    expect(await repo.transitionIntent('int_1', 'executing', { state: 'executed', result: '{"x":1}', updatedAt: T0 + 1 })).toBe(false);
    expect(await repo.getIntent(STORE, 'int_1')).toEqual(intent({ id: 'int_1' }));
    expect(await repo.transitionIntent('int_none', 'previewed', { state: 'executing' })).toBe(false);

    const executing = { state: 'executing', executor: 'local:a', executeKey: 'key-1', confirmationHash: null, updatedAt: T0 + 2 };
    expect(await repo.transitionIntent('int_1', 'previewed', executing)).toBe(true);
    expect(await repo.getIntent(STORE, 'int_1')).toEqual(intent({ id: 'int_1', ...executing }));
    // The same move again finds it no longer previewed.
    expect(await repo.transitionIntent('int_1', 'previewed', { state: 'refused', refusal: '{}', updatedAt: T0 + 3 })).toBe(false);
    expect((await repo.getIntent(STORE, 'int_1'))?.refusal).toBeNull();
    expect(await repo.transitionIntent('int_1', 'executing', { state: 'executed', result: '{"queued":3}', updatedAt: T0 + 4 })).toBe(true);
    expect(await repo.getIntent(STORE, 'int_1')).toEqual(intent({ id: 'int_1', ...executing, state: 'executed', result: '{"queued":3}', updatedAt: T0 + 4 }));
    // The other intent never moved.
    expect(await repo.getIntent(STORE, 'int_2')).toEqual(intent({ id: 'int_2' }));
  });

  test('of several moves from the same state at once, exactly one wins', async (repo) => {
    await repo.insertIntent(intent({ id: 'int_1' }));
    const moves = await Promise.all(
      Array.from({ length: 6 }, (_, i) => repo.transitionIntent('int_1', 'previewed', { state: 'executing', executor: `x${i}`, updatedAt: T0 + i })),
    );
    expect(moves.filter(Boolean)).toHaveLength(1);
    const winner = moves.indexOf(true);
    expect(await repo.getIntent(STORE, 'int_1')).toMatchObject({ state: 'executing', executor: `x${winner}`, updatedAt: T0 + winner });
  });
});
