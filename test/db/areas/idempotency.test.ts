/**
 * IdempotencyStore on every backend: stored responses read back within their window, claims of a key for a
 * request about to run (held while live; taken over once expired or stale and pending), released on failure.
 */
import { expect } from 'bun:test';
import type { IdempotencyRow } from '../../../db/types.ts';
import { areaSuite, DAY, MIN, OTHER_STORE, STORE, T0 } from '../../fixtures/storage-rows.ts';

const done = (fields: Partial<IdempotencyRow> = {}): IdempotencyRow => ({
  storeId: STORE,
  key: 'k1',
  operationId: 'createEndpoint',
  requestHash: 'h1',
  status: 201,
  response: '{"data":{"ok":true}}',
  createdAt: T0,
  owner: null,
  ...fields,
});
const claim = (fields: Partial<IdempotencyRow> = {}) => {
  const { storeId, key, operationId, requestHash, createdAt, owner } = done(fields);
  return { storeId, key, operationId, requestHash, createdAt, owner };
};
/** The windows of a claim at `at`: keys expire after a day, a pending claim is stale after a minute. */
const since = (at: number) => at - DAY;
const staleBefore = (at: number) => at - MIN;

areaSuite('IdempotencyStore', (test) => {
  test('getIdempotency returns a stored response created at or after `since`, exactly; per store and key', async (repo) => {
    await repo.putIdempotency(done());
    await repo.putIdempotency(done({ storeId: OTHER_STORE, requestHash: 'h9', createdAt: T0 + 5 }));
    const read = await repo.getIdempotency(STORE, 'k1', T0);
    expect(read).toEqual(done());
    expect([typeof read?.status, typeof read?.createdAt]).toEqual(['number', 'number']);
    expect(await repo.getIdempotency(STORE, 'k1', T0 - 1)).toEqual(done());
    expect(await repo.getIdempotency(STORE, 'k1', T0 + 1)).toBeNull();
    expect((await repo.getIdempotency(OTHER_STORE, 'k1', T0))?.requestHash).toBe('h9');
    expect(await repo.getIdempotency(STORE, 'k2', 0)).toBeNull();
  });

  test('putIdempotency replaces the row of the same store and key', async (repo) => {
    await repo.putIdempotency(done({ status: 0, response: '', owner: 'local:a' }));
    await repo.putIdempotency(done({ status: 409, response: '{"error":1}', createdAt: T0 + 7 }));
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toEqual(done({ status: 409, response: '{"error":1}', createdAt: T0 + 7 }));
  });

  test('claimIdempotency stores a pending claim (status 0) and returns null; a second claim gets the holder', async (repo) => {
    expect(await repo.claimIdempotency(claim({ owner: 'local:a' }), since(T0), staleBefore(T0))).toBeNull();
    const pending = done({ status: 0, response: '', owner: 'local:a' });
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toEqual(pending);
    // In flight elsewhere: held, and the holder's row returned unchanged.
    expect(await repo.claimIdempotency(claim({ requestHash: 'h2', createdAt: T0 + 1, owner: 'local:b' }), since(T0 + 1), staleBefore(T0 + 1))).toEqual(pending);
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toEqual(pending);
    // The same key of another store is its own.
    expect(await repo.claimIdempotency(claim({ storeId: OTHER_STORE }), since(T0), staleBefore(T0))).toBeNull();
  });

  test('a pending claim older than staleBefore is taken over; a completed one is held however old, until it expires', async (repo) => {
    await repo.claimIdempotency(claim({ owner: 'local:a' }), since(T0), staleBefore(T0));
    // Pending since before staleBefore: its instance died, the new request takes the key.
    const later = T0 + 2 * MIN;
    expect(await repo.claimIdempotency(claim({ requestHash: 'h2', createdAt: later, owner: 'local:b' }), since(later), staleBefore(later))).toBeNull();
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toEqual(done({ requestHash: 'h2', status: 0, response: '', createdAt: later, owner: 'local:b' }));
    // Pending at exactly staleBefore is not stale.
    expect((await repo.claimIdempotency(claim({ requestHash: 'h3', createdAt: later + MIN }), since(later + MIN), later))?.requestHash).toBe('h2');

    await repo.putIdempotency(done({ requestHash: 'h2', createdAt: later }));
    // Completed: held even when created before staleBefore (staleness is for pending claims only).
    const muchLater = later + 3600_000;
    expect(await repo.claimIdempotency(claim({ requestHash: 'h4', createdAt: muchLater }), since(muchLater), staleBefore(muchLater))).toEqual(
      done({ requestHash: 'h2', createdAt: later }),
    );
    // At exactly `since` it is still live.
    expect((await repo.claimIdempotency(claim({ requestHash: 'h5', createdAt: later + DAY }), later, staleBefore(later + DAY)))?.requestHash).toBe('h2');
    // Older than `since`: expired, taken over.
    const nextDay = later + DAY + 1;
    expect(await repo.claimIdempotency(claim({ requestHash: 'h6', createdAt: nextDay }), since(nextDay), staleBefore(nextDay))).toBeNull();
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toEqual(done({ requestHash: 'h6', status: 0, response: '', createdAt: nextDay }));
  });

  test('releaseIdempotency drops a pending claim, so a retry may claim it; a completed response stays', async (repo) => {
    await repo.claimIdempotency(claim(), since(T0), staleBefore(T0));
    await repo.releaseIdempotency(STORE, 'k1');
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toBeNull();
    expect(await repo.claimIdempotency(claim({ requestHash: 'h2', createdAt: T0 + 1 }), since(T0 + 1), staleBefore(T0 + 1))).toBeNull();
    await repo.putIdempotency(done({ requestHash: 'h2', createdAt: T0 + 1 }));
    await repo.releaseIdempotency(STORE, 'k1');
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toEqual(done({ requestHash: 'h2', createdAt: T0 + 1 }));
    // Releasing a key no one holds, or another store's, changes nothing.
    await repo.releaseIdempotency(STORE, 'k_none');
    await repo.releaseIdempotency(OTHER_STORE, 'k1');
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toEqual(done({ requestHash: 'h2', createdAt: T0 + 1 }));
  });

  test('of several claims of one key at once, exactly one gets it; the others get its row', async (repo) => {
    const claims = await Promise.all(
      Array.from({ length: 6 }, (_, i) => repo.claimIdempotency(claim({ requestHash: `h${i}`, owner: `o${i}` }), since(T0), staleBefore(T0))),
    );
    expect(claims.filter((c) => c === null)).toHaveLength(1);
    const winner = claims.indexOf(null);
    expect((await repo.getIdempotency(STORE, 'k1', 0))?.owner).toBe(`o${winner}`);
    expect(claims.filter((c) => c !== null).every((c) => c!.owner === `o${winner}` && c!.status === 0)).toBe(true);
  });

  test('takeOverIdempotency moves a pending claim from its gone holder to the caller, once; a finished key stays', async (repo) => {
    await repo.claimIdempotency(claim({ owner: 'local:a' }), since(T0), staleBefore(T0));
    expect(await repo.takeOverIdempotency(STORE, 'k1', 'local:b', 'local:c', T0 + 1)).toBe(false);
    expect(await repo.takeOverIdempotency(STORE, 'k1', 'local:a', 'local:c', T0 + 1)).toBe(true);
    expect(await repo.getIdempotency(STORE, 'k1', 0)).toMatchObject({ owner: 'local:c', createdAt: T0 + 1, status: 0 });
    expect(await repo.takeOverIdempotency(STORE, 'k1', 'local:a', 'local:d', T0 + 2)).toBe(false);
    await repo.putIdempotency(done({ owner: 'local:c', status: 200 }));
    expect(await repo.takeOverIdempotency(STORE, 'k1', 'local:c', 'local:d', T0 + 3)).toBe(false);
  });
});
