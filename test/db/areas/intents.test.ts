/** IntentStore on every backend: intents read back exactly, scoped by store, moved by compare-and-set only (the journal's moves included). */
import { expect } from 'bun:test';
import { requeueEvent } from '../../../db/areas/events.ts';
import { runnerOf } from '../../../db/runner.ts';
import { areaSuite, commit, intent, OTHER_STORE, receipt, STORE, T0, withEndpoints } from '../../fixtures/storage-rows.ts';

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

  test('an execute commits its writes with the completion, or nothing: only the executor holding the claim completes it', async (repo, backend) => {
    await withEndpoints(repo);
    const [r] = await commit(repo, [receipt()]);
    const id = r!.event.id;
    // A lease on the event (PostgreSQL's with its token): the replay's requeue ends it as the dialect ends one.
    const lease =
      backend.name === 'postgres' ? "UPDATE events SET lease_until = ?, lease_token = 'stale' WHERE id = ?" : 'UPDATE events SET lease_until = ? WHERE id = ?';
    await runnerOf(repo).run(lease, [T0 + 60_000, id]);
    await repo.insertIntent(intent({ id: 'int_1' }));
    expect(await repo.claimIntent('int_1', { state: 'previewed' }, { executor: 'x', key: 'key-1', at: T0 + 1 })).toBe(true);
    expect(await repo.claimIntent('int_1', { state: 'previewed' }, { executor: 'y', key: null, at: T0 + 2 })).toBe(false);
    expect(await repo.getIntent(STORE, 'int_1')).toMatchObject({ state: 'executing', executor: 'x', executeKey: 'key-1', updatedAt: T0 + 1 });

    const requeue = requeueEvent(id, { outcome: 'accepted', attempts: 0 }, T0 + 5);
    const result = (changes: number[]) => JSON.stringify({ queued: changes[0] });
    // Another executor (its claim taken over): the completion changes nothing, and the requeue rolls back with it.
    expect(await repo.executeIntent('int_1', 'y', [requeue], result, T0 + 3)).toEqual({ ok: false, failed: 1 });
    expect(await repo.getEvent(STORE, id)).toMatchObject({ outcome: 'accepted', leaseUntil: T0 + 60_000 });
    expect(await repo.executeIntent('int_1', 'x', [requeue], result, T0 + 4)).toEqual({ ok: true, changes: [1, 1] });
    expect(await repo.getIntent(STORE, 'int_1')).toMatchObject({ state: 'executed', result: '{"queued":1}', confirmationHash: null, updatedAt: T0 + 4 });
    expect(await repo.getEvent(STORE, id)).toMatchObject({ outcome: 'queued', nextAttemptAt: T0 + 5, leaseUntil: null });
    if (backend.name === 'postgres') expect(await runnerOf(repo).all('SELECT lease_token AS "t" FROM events WHERE id = ?', [id])).toEqual([{ t: null }]);
    // The state the requeue expected is gone: the batch names it, and nothing is written.
    await repo.insertIntent(intent({ id: 'int_2' }));
    await repo.claimIntent('int_2', { state: 'previewed' }, { executor: 'x', key: null, at: T0 + 6 });
    expect(await repo.executeIntent('int_2', 'x', [requeue], result, T0 + 7)).toEqual({ ok: false, failed: 0 });
    expect((await repo.getIntent(STORE, 'int_2'))?.state).toBe('executing');
  });

  test('an execution that changed nothing ends or reopens by its executor only; a dead executor is reopened from any', async (repo) => {
    for (const id of ['int_1', 'int_2', 'int_3', 'int_4']) await repo.insertIntent(intent({ id }));
    const me = await repo.instance.id();
    for (const id of ['int_1', 'int_2', 'int_3']) await repo.claimIntent(id, { state: 'previewed' }, { executor: 'gone', key: 'k', at: T0 + 1 });
    await repo.claimIntent('int_4', { state: 'previewed' }, { executor: me, key: null, at: T0 + 1 });

    expect(await repo.reopenIntent('int_1', 'other', T0 + 2)).toBe(false);
    expect(await repo.reopenIntent('int_1', 'gone', T0 + 2)).toBe(true);
    expect(await repo.getIntent(STORE, 'int_1')).toMatchObject({ state: 'previewed', executor: null, executeKey: null, updatedAt: T0 + 2 });
    expect(await repo.endIntent('int_2', 'other', 'refused', '{"code":"c"}', T0 + 3)).toBe(false);
    expect(await repo.endIntent('int_2', 'gone', 'refused', '{"code":"c"}', T0 + 3)).toBe(true);
    expect(await repo.getIntent(STORE, 'int_2')).toMatchObject({ state: 'refused', refusal: '{"code":"c"}', confirmationHash: null });
    // A claim of an executor no longer alive is taken from `executing` by its executor's name.
    expect(await repo.claimIntent('int_3', { state: 'executing', executor: 'other' }, { executor: me, key: null, at: T0 + 4 })).toBe(false);
    // At start: the dead executor's intent is previewed again, this handle's own stays.
    expect(await repo.reopenDeadExecutions(T0 + 5)).toBe(1);
    expect(await repo.getIntent(STORE, 'int_3')).toMatchObject({ state: 'previewed', executor: null, updatedAt: T0 + 5 });
    expect(await repo.getIntent(STORE, 'int_4')).toMatchObject({ state: 'executing', executor: me });
  });
});
