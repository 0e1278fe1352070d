/**
 * AlertStore on every backend: one open alert per (store, open key) however many raise it at once, a recovery by
 * compare-and-set journaling its phase once, phases leased by compare-and-set (one winner, a recovered phase after
 * its raised one, paused stores left alone), a record fenced by its lease, the failure windows and the pruning.
 */
import { expect } from 'bun:test';
import type { AlertRow } from '../../../db/areas/alerts.ts';
import type { PendingAuthFailure, Repo } from '../../../db/repo.ts';
import { areaSuite, endpoint, EP, EP2, MIN, OTHER_EP, OTHER_STORE, STORE, T0, withStores } from '../../fixtures/storage-rows.ts';

const authFailure = (f: Partial<PendingAuthFailure> & { id: string; at: number }): PendingAuthFailure => ({
  storeId: STORE,
  endpointId: EP,
  code: 'SVC_AUTH_FAILED',
  count: 1,
  ...f,
});

const alert = (fields: Partial<AlertRow> & { id: string }): AlertRow => ({
  storeId: STORE,
  endpointId: EP,
  kind: 'silence',
  state: 'open',
  openKey: `${fields.endpointId ?? EP}:${fields.kind ?? 'silence'}`,
  since: T0 - 3 * 3600_000,
  raisedAt: T0,
  recoveredAt: null,
  detail: '{"expectedEveryMs":7200000}',
  ...fields,
});

const phases = async (repo: Repo, id: string) => (await repo.listAlertHandoffs([id])).map((h) => `${h.phase}:${h.state}`).sort();

areaSuite('AlertStore', (test) => {
  test('raises once per open key: a second raise of the same key is refused and journals nothing', async (repo) => {
    await withStores(repo);
    expect(await repo.raiseAlert(alert({ id: 'alr_1' }), { phase: 'raised', at: T0 })).toBe(true);
    expect(await repo.raiseAlert(alert({ id: 'alr_2' }), { phase: 'raised', at: T0 + 1 })).toBe(false);
    // Another key, or the same key in another store, is another alert.
    expect(await repo.raiseAlert(alert({ id: 'alr_3', endpointId: EP2 }), { phase: 'raised', at: T0 })).toBe(true);
    expect(
      await repo.raiseAlert(alert({ id: 'alr_4', storeId: OTHER_STORE, endpointId: OTHER_EP, openKey: `${EP}:silence` }), { phase: 'raised', at: T0 }),
    ).toBe(true);
    expect((await repo.listOpenAlerts(STORE)).map((a) => a.id)).toEqual(['alr_1', 'alr_3']);
    expect((await repo.listOpenAlerts()).map((a) => a.id).sort()).toEqual(['alr_1', 'alr_3', 'alr_4']);
    expect(await repo.listAlertHandoffs(['alr_2'])).toEqual([]);
    expect(await repo.listAlertHandoffs(['alr_1'])).toEqual([
      {
        alertId: 'alr_1',
        phase: 'raised',
        storeId: STORE,
        state: 'pending',
        attempts: 0,
        nextAttemptAt: T0,
        leaseUntil: null,
        lastError: null,
        deliveredAt: null,
        createdAt: T0,
      },
    ]);
    expect((await repo.listOpenAlerts(STORE))[0]).toEqual(alert({ id: 'alr_1' }));
  });

  test('raises of one key at once (several handles on PostgreSQL) make exactly one alert', async (repo, backend) => {
    await withStores(repo);
    const peers = backend.peer ? await Promise.all([backend.peer(), backend.peer()]) : [];
    try {
      const handles = [repo, ...peers];
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => handles[i % handles.length]!.raiseAlert(alert({ id: `alr_${i}` }), { phase: 'raised', at: T0 })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const open = await repo.listOpenAlerts(STORE);
      expect(open).toHaveLength(1);
      expect(await phases(repo, open[0]!.id)).toEqual(['raised:pending']);
    } finally {
      await Promise.all(peers.map((p) => p.close()));
    }
  });

  test('recovers by compare-and-set, once, journaling its phase; the key is free for a new breach', async (repo) => {
    await withStores(repo);
    await repo.raiseAlert(alert({ id: 'alr_1' }), { phase: 'raised', at: T0 });
    expect(await repo.recoverAlert(OTHER_STORE, 'alr_1', T0 + MIN, null)).toBe(false); // another store's id: nothing
    expect(await repo.recoverAlert(STORE, 'alr_1', T0 + MIN, '{"recoveredBy":"receipt"}')).toBe(true);
    expect(await repo.recoverAlert(STORE, 'alr_1', T0 + 2 * MIN, null)).toBe(false);
    expect(await phases(repo, 'alr_1')).toEqual(['raised:pending', 'recovered:pending']);
    expect(await repo.listOpenAlerts(STORE)).toEqual([]);
    const [recovered] = await repo.listRecentAlerts(STORE, T0, 10);
    expect(recovered).toEqual(alert({ id: 'alr_1', state: 'recovered', openKey: null, recoveredAt: T0 + MIN, detail: '{"recoveredBy":"receipt"}' }));
    // A new breach of the same endpoint and kind is a new alert.
    expect(await repo.raiseAlert(alert({ id: 'alr_2', raisedAt: T0 + 5 * MIN }), { phase: 'raised', at: T0 + 5 * MIN })).toBe(true);
    expect((await repo.listOpenAlerts(STORE)).map((a) => a.id)).toEqual(['alr_2']);
  });

  test('listRecentAlerts: open ones and those raised or recovered since, newest raised first, limited', async (repo) => {
    await withStores(repo);
    await repo.raiseAlert(alert({ id: 'alr_old', endpointId: 'ep_a', raisedAt: T0 - 10 * 86400_000 }), { phase: 'raised', at: T0 });
    await repo.recoverAlert(STORE, 'alr_old', T0 - 9 * 86400_000, null);
    await repo.raiseAlert(alert({ id: 'alr_open_old', endpointId: 'ep_b', raisedAt: T0 - 20 * 86400_000 }), { phase: 'raised', at: T0 });
    await repo.raiseAlert(alert({ id: 'alr_late_recovery', endpointId: 'ep_c', raisedAt: T0 - 5 * 86400_000 }), { phase: 'raised', at: T0 });
    await repo.recoverAlert(STORE, 'alr_late_recovery', T0 - 1000, null);
    await repo.raiseAlert(alert({ id: 'alr_new', endpointId: 'ep_d', raisedAt: T0 }), { phase: 'raised', at: T0 });
    await repo.raiseAlert(alert({ id: 'alr_other', storeId: OTHER_STORE, raisedAt: T0 }), { phase: 'raised', at: T0 });
    const since = T0 - 86400_000;
    expect((await repo.listRecentAlerts(STORE, since, 10)).map((a) => a.id)).toEqual(['alr_new', 'alr_late_recovery', 'alr_open_old']);
    expect((await repo.listRecentAlerts(STORE, since, 2)).map((a) => a.id)).toEqual(['alr_new', 'alr_late_recovery']);
  });

  test('leases a due phase once; a recovered phase waits for its raised one; paused stores are left alone', async (repo) => {
    await withStores(repo);
    await repo.raiseAlert(alert({ id: 'alr_1' }), { phase: 'raised', at: T0 });
    await repo.recoverAlert(STORE, 'alr_1', T0, null);
    await repo.raiseAlert(alert({ id: 'alr_later', endpointId: EP2 }), { phase: 'raised', at: T0 + MIN });
    await repo.raiseAlert(alert({ id: 'alr_paused', storeId: OTHER_STORE }), { phase: 'raised', at: T0 });

    const first = await repo.leaseAlertHandoffs(T0, T0 + MIN, 10, [OTHER_STORE]);
    expect(first.map((l) => `${l.alert.id}:${l.handoff.phase}`)).toEqual(['alr_1:raised']);
    expect(first[0]).toMatchObject({
      takenOver: false,
      handoff: { state: 'sending', attempts: 1, leaseUntil: T0 + MIN },
      alert: { id: 'alr_1', kind: 'silence' },
    });
    // Leased: nobody else takes it, and the recovered phase still waits for it.
    expect(await repo.leaseAlertHandoffs(T0 + 1, T0 + MIN, 10, [OTHER_STORE])).toEqual([]);

    expect(
      await repo.finishAlertHandoff(first[0]!.handoff, { state: 'delivered', attempts: 1, nextAttemptAt: null, lastError: null, deliveredAt: T0 + 2 }),
    ).toBe(true);
    const next = await repo.leaseAlertHandoffs(T0 + 3, T0 + 10 * MIN, 10, [OTHER_STORE]);
    expect(next.map((l) => `${l.alert.id}:${l.handoff.phase}`)).toEqual(['alr_1:recovered']);
    // Not due yet, then due; the paused store's phase only once it is no longer skipped.
    expect((await repo.leaseAlertHandoffs(T0 + MIN, T0 + 2 * MIN, 10, [OTHER_STORE])).map((l) => l.alert.id)).toEqual(['alr_later']);
    expect((await repo.leaseAlertHandoffs(T0 + MIN, T0 + 2 * MIN, 10, [])).map((l) => l.alert.id)).toEqual(['alr_paused']);
  });

  test('a lease that ran out is taken over (said so), and the stale holder records nothing', async (repo) => {
    await withStores(repo);
    await repo.raiseAlert(alert({ id: 'alr_1' }), { phase: 'raised', at: T0 });
    const [stale] = await repo.leaseAlertHandoffs(T0, T0 + MIN, 10, []);
    expect(await repo.leaseAlertHandoffs(T0 + MIN - 1, T0 + 2 * MIN, 10, [])).toEqual([]);
    const [fresh] = await repo.leaseAlertHandoffs(T0 + MIN, T0 + 2 * MIN, 10, []);
    expect(fresh).toMatchObject({ takenOver: true, handoff: { attempts: 2, leaseUntil: T0 + 2 * MIN } });
    expect(await repo.finishAlertHandoff(stale!.handoff, { state: 'delivered', attempts: 1, nextAttemptAt: null, lastError: null, deliveredAt: T0 })).toBe(
      false,
    );
    // Nothing was sent by the new holder (deferred): the attempt is given back, the phase due again.
    expect(
      await repo.finishAlertHandoff(fresh!.handoff, { state: 'pending', attempts: 1, nextAttemptAt: T0 + 5 * MIN, lastError: null, deliveredAt: null }),
    ).toBe(true);
    expect((await repo.listAlertHandoffs(['alr_1']))[0]).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: T0 + 5 * MIN, leaseUntil: null });
    expect(await repo.leaseAlertHandoffs(T0 + 5 * MIN - 1, T0 + 6 * MIN, 10, [])).toEqual([]);
    const [again] = await repo.leaseAlertHandoffs(T0 + 5 * MIN, T0 + 6 * MIN, 10, []);
    expect(again).toMatchObject({ takenOver: false, handoff: { attempts: 2 } });
    expect(
      await repo.finishAlertHandoff(again!.handoff, { state: 'failed', attempts: 2, nextAttemptAt: null, lastError: 'user_errors', deliveredAt: null }),
    ).toBe(true);
    expect((await repo.listAlertHandoffs(['alr_1']))[0]).toMatchObject({ state: 'failed', attempts: 2, nextAttemptAt: null, lastError: 'user_errors' });
    // A final phase is never leased again.
    expect(await repo.leaseAlertHandoffs(T0 + 86400_000, T0 + 86400_000 + MIN, 10, [])).toEqual([]);
  });

  test('leases of one phase at once (several handles on PostgreSQL): one winner', async (repo, backend) => {
    await withStores(repo);
    await repo.raiseAlert(alert({ id: 'alr_1' }), { phase: 'raised', at: T0 });
    const peers = backend.peer ? await Promise.all([backend.peer(), backend.peer()]) : [];
    try {
      const handles = [repo, ...peers, repo];
      const leased = (await Promise.all(handles.map((h) => h.leaseAlertHandoffs(T0, T0 + MIN, 10, [])))).flat();
      expect(leased).toHaveLength(1);
    } finally {
      await Promise.all(peers.map((p) => p.close()));
    }
  });

  test('countAuthFailures, as the burst check reads it: per endpoint since a time, folded counts summed, first and last', async (repo) => {
    await withStores(repo);
    await repo.commitIngest(
      [],
      [
        authFailure({ id: 'af_1', endpointId: EP, at: T0 - 20 * MIN }),
        authFailure({ id: 'af_2', endpointId: EP, at: T0 - 8 * MIN }),
        authFailure({ id: 'af_3', endpointId: EP, at: T0 - 2 * MIN, count: 4 }),
        authFailure({ id: 'af_4', endpointId: EP2, at: T0 - MIN }),
        authFailure({ id: 'af_5', storeId: OTHER_STORE, endpointId: OTHER_EP, at: T0 - MIN }),
      ],
    );
    const windows = await repo.countAuthFailures(STORE, T0 - 10 * MIN);
    expect(windows.sort((a, b) => a.endpointId.localeCompare(b.endpointId))).toEqual([
      { endpointId: EP, n: 5, first: T0 - 8 * MIN, last: T0 - 2 * MIN },
      { endpointId: EP2, n: 1, first: T0 - MIN, last: T0 - MIN },
    ]);
  });

  test('listEndpointVersions: newest first, with their config and time', async (repo) => {
    await withStores(repo);
    await repo.insertEndpoint(endpoint({ id: EP }), { expectedEvery: null });
    await repo.updateEndpoint(endpoint({ id: EP, configVersion: 2, updatedAt: T0 + MIN }), { expectedEvery: '2h' });
    expect(await repo.listEndpointVersions(EP)).toEqual([
      { version: 2, config: '{"expectedEvery":"2h"}', createdAt: T0 + MIN },
      { version: 1, config: '{"expectedEvery":null}', createdAt: T0 },
    ]);
  });

  test('pruneAlerts deletes old recovered alerts and their phases, never an open one', async (repo) => {
    await withStores(repo);
    await repo.raiseAlert(alert({ id: 'alr_old', raisedAt: T0 - 200 * 86400_000 }), { phase: 'raised', at: T0 });
    await repo.recoverAlert(STORE, 'alr_old', T0 - 199 * 86400_000, null);
    await repo.raiseAlert(alert({ id: 'alr_old_open', endpointId: EP2, raisedAt: T0 - 200 * 86400_000 }), { phase: 'raised', at: T0 });
    await repo.raiseAlert(alert({ id: 'alr_new', endpointId: 'ep_x', raisedAt: T0 }), { phase: 'raised', at: T0 });
    await repo.recoverAlert(STORE, 'alr_new', T0, null);
    expect(await repo.pruneAlerts(T0 - 180 * 86400_000, 100)).toBe(1);
    expect(await repo.listAlertHandoffs(['alr_old'])).toEqual([]);
    expect((await repo.listRecentAlerts(STORE, 0, 10)).map((a) => a.id)).toEqual(['alr_new', 'alr_old_open']);
    expect(await repo.pruneAlerts(T0 - 180 * 86400_000, 100)).toBe(0);
  });
});
