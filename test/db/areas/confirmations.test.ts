/**
 * ConfirmationStore on every backend: one row per Flow action run (a resend changes nothing), an event's newest
 * confirmation with the count of runs, the events list's unconfirmed filter, and the confirmed share per endpoint.
 */
import { expect } from 'bun:test';
import type { ConfirmationRow } from '../../../db/areas/confirmations.ts';
import type { Repo } from '../../../db/repo.ts';
import type { EventRow } from '../../../db/types.ts';
import { areaSuite, commit, EP, EP2, MIN, OTHER_EP, OTHER_STORE, receipt, result, STORE, T0, withEndpoints } from '../../fixtures/storage-rows.ts';

const start = (eventId: string, at: number) => ({ eventId, number: 1, destination: 'log', startedAt: at });

/**
 * Receipts at T0 + i min, then handed off: those in `deliverAt` (index -> time) delivered then (deliveredAt is that
 * time + 5 ms), the others left accepted. Returns the committed events.
 */
async function seed(repo: Repo, receipts: Parameters<typeof receipt>[0][], deliverAt: Record<number, number>): Promise<EventRow[]> {
  await withEndpoints(repo);
  const events = (
    await commit(
      repo,
      receipts.map((r, i) => receipt({ at: T0 + (i + 1) * MIN, ...r })),
    )
  ).map((r) => r.event);
  const delivered = Object.keys(deliverAt).map(Number);
  await repo.claimDue(T0 + 1000 * MIN, 100, T0 + 2000 * MIN);
  await repo.journalAttempts(delivered.map((i) => start(events[i]!.id, deliverAt[i]!)));
  await repo.recordAttempts(delivered.map((i) => result(events[i]!.id, 1, 'delivered', deliverAt[i]!, { storeId: events[i]!.storeId })));
  return events;
}

function confirmation(e: EventRow, fields: Partial<ConfirmationRow> & { actionRunId: string }): ConfirmationRow {
  return { storeId: e.storeId, eventId: e.id, endpointId: e.endpointId, outcome: 'ok', note: null, confirmedAt: T0 + 500 * MIN, ...fields };
}

const ids = (events: EventRow[]) => events.map((e) => e.id);

areaSuite('ConfirmationStore', (test) => {
  test('records a run once: its resend (same action_run_id) changes nothing, and reads back exactly', async (repo) => {
    const [e] = await seed(repo, [{}], { 0: T0 + 10 * MIN });
    const first = confirmation(e!, { actionRunId: 'run-1', outcome: 'error', note: 'tag step failed' });
    expect(await repo.getConfirmationRun('run-1')).toBeNull();
    expect(await repo.insertConfirmation(first)).toBe(true);
    expect(await repo.insertConfirmation({ ...first, outcome: 'ok', note: 'a resend says otherwise', confirmedAt: first.confirmedAt + MIN })).toBe(false);
    expect(await repo.getConfirmationRun('run-1')).toEqual(first);
    expect(typeof (await repo.getConfirmationRun('run-1'))!.confirmedAt).toBe('number');
    expect(await repo.eventConfirmation(STORE, e!.id)).toEqual({ latest: first, runs: 1 });
  });

  test("eraseConfirmationNotes clears the store's notes only, keeping every confirmation", async (repo) => {
    const [a, b] = await seed(repo, [{}, { storeId: OTHER_STORE, endpointId: OTHER_EP }], { 0: T0 + 10 * MIN, 1: T0 + 10 * MIN });
    const mine = confirmation(a!, { actionRunId: 'run-a', note: 'packed by Jane' });
    const bare = confirmation(a!, { actionRunId: 'run-bare' });
    const theirs = confirmation(b!, { actionRunId: 'run-b', note: 'their note' });
    for (const c of [mine, bare, theirs]) await repo.insertConfirmation(c);
    expect(await repo.eraseConfirmationNotes(STORE)).toBe(1);
    expect(await repo.getConfirmationRun('run-a')).toEqual({ ...mine, note: null });
    expect(await repo.getConfirmationRun('run-bare')).toEqual(bare);
    expect(await repo.getConfirmationRun('run-b')).toEqual(theirs);
    expect(await repo.eraseConfirmationNotes(STORE)).toBe(0);
  });

  test("eventConfirmation: null without one, else the newest with the count of runs, within the event's store only", async (repo) => {
    const [a, b] = await seed(repo, [{}, {}], { 0: T0 + 10 * MIN, 1: T0 + 11 * MIN });
    expect(await repo.eventConfirmation(STORE, a!.id)).toBeNull();
    const older = confirmation(a!, { actionRunId: 'run-old', outcome: 'error', note: 'first workflow', confirmedAt: T0 + 20 * MIN });
    const newer = confirmation(a!, { actionRunId: 'run-new', confirmedAt: T0 + 30 * MIN });
    await repo.insertConfirmation(newer);
    await repo.insertConfirmation(older);
    expect(await repo.eventConfirmation(STORE, a!.id)).toEqual({ latest: newer, runs: 2 });
    expect(await repo.eventConfirmation(STORE, b!.id)).toBeNull();
    expect(await repo.eventConfirmation(OTHER_STORE, a!.id)).toBeNull();
  });

  test('listEvents unconfirmedBefore: exactly the delivered events handed off before the time that no run confirmed', async (repo) => {
    // 0..5 on EP or EP2, delivered at various times; 6 accepted (never delivered); 7 the other store's, delivered early.
    const events = await seed(repo, [{}, { endpointId: EP2 }, {}, {}, { endpointId: EP2 }, {}, {}, { storeId: OTHER_STORE, endpointId: OTHER_EP }], {
      0: T0 + 10 * MIN,
      1: T0 + 11 * MIN,
      2: T0 + 12 * MIN,
      3: T0 + 13 * MIN,
      4: T0 + 50 * MIN,
      5: T0 + 60 * MIN,
      7: T0 + 10 * MIN,
    });
    await repo.insertConfirmation(confirmation(events[2]!, { actionRunId: 'run-2' }));
    await repo.insertConfirmation(confirmation(events[3]!, { actionRunId: 'run-3', outcome: 'error' }));
    const cutoff = T0 + 50 * MIN; // 4 was delivered at T0 + 50 min + 5 ms: not before it
    const list = (f: Partial<Parameters<Repo['listEvents']>[0]> = {}) => repo.listEvents({ storeId: STORE, unconfirmedBefore: cutoff, limit: 100, ...f });
    expect(ids(await list())).toEqual(ids([events[1]!, events[0]!]));
    expect(ids(await list({ endpointId: EP }))).toEqual(ids([events[0]!]));
    expect(ids(await list({ beforeId: events[1]!.id }))).toEqual(ids([events[0]!]));
    expect(ids(await list({ limit: 1 }))).toEqual(ids([events[1]!]));
    expect(ids(await list({ unconfirmedBefore: T0 + 61 * MIN }))).toEqual(ids([events[5]!, events[4]!, events[1]!, events[0]!]));
    expect(ids(await list({ unconfirmedBefore: T0 }))).toEqual([]);
    expect(ids(await repo.listEvents({ storeId: OTHER_STORE, unconfirmedBefore: cutoff, limit: 100 }))).toEqual(ids([events[7]!]));
    // Confirming one takes it off the list.
    await repo.insertConfirmation(confirmation(events[1]!, { actionRunId: 'run-1' }));
    expect(ids(await list())).toEqual(ids([events[0]!]));
  });

  test('confirmedShare: per endpoint, the delivered events received since the time and how many a run confirmed (errors apart)', async (repo) => {
    // EP: 0, 1, 2, 3 delivered; EP2: 4, 5 delivered, 6 accepted; 7 the other store's.
    const events = await seed(
      repo,
      [{}, {}, {}, {}, { endpointId: EP2 }, { endpointId: EP2 }, { endpointId: EP2 }, { storeId: OTHER_STORE, endpointId: OTHER_EP }],
      {
        0: T0 + 20 * MIN,
        1: T0 + 20 * MIN,
        2: T0 + 20 * MIN,
        3: T0 + 20 * MIN,
        4: T0 + 20 * MIN,
        5: T0 + 20 * MIN,
        7: T0 + 20 * MIN,
      },
    );
    await repo.insertConfirmation(confirmation(events[1]!, { actionRunId: 'a' }));
    // Two runs of one event count it once; an error among them counts it as errored.
    await repo.insertConfirmation(confirmation(events[2]!, { actionRunId: 'b' }));
    await repo.insertConfirmation(confirmation(events[2]!, { actionRunId: 'c', outcome: 'error' }));
    await repo.insertConfirmation(confirmation(events[5]!, { actionRunId: 'd', outcome: 'error' }));
    await repo.insertConfirmation(confirmation(events[7]!, { actionRunId: 'e' }));
    const share = (since: number) => repo.confirmedShare(STORE, since, `evt_${'0'.repeat(8)}`);
    expect(await share(T0)).toEqual([
      { endpointId: EP, delivered: 4, confirmed: 2, errored: 1 },
      { endpointId: EP2, delivered: 2, confirmed: 1, errored: 1 },
    ]);
    // Received from T0 + 2 min on: event 0 (received at T0 + 1 min) is out of the window.
    expect(await share(T0 + 2 * MIN)).toEqual([
      { endpointId: EP, delivered: 3, confirmed: 2, errored: 1 },
      { endpointId: EP2, delivered: 2, confirmed: 1, errored: 1 },
    ]);
    expect(await share(T0 + 100 * MIN)).toEqual([]);
    expect(await repo.confirmedShare(OTHER_STORE, T0, `evt_${'0'.repeat(8)}`)).toEqual([{ endpointId: OTHER_EP, delivered: 1, confirmed: 1, errored: 0 }]);
    // The id floor bounds the range too: an id past every event finds none.
    expect(await repo.confirmedShare(STORE, T0, 'evt_zzzzzzzz')).toEqual([]);
  });
});
