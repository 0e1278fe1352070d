/**
 * Auth failures fold into counted rows on every backend: past `keepRows` rows of an endpoint and code in a fold
 * window, a failure adds to the newest row (count, at) instead of inserting; listing and counting see the counts.
 */
import { describe, expect, it } from 'bun:test';
import type { PendingAuthFailure } from '../../db/repo.ts';
import { backends } from '../fixtures/storage.ts';

const STORE = 'st_01jz0000000000000000000000';
const EP = 'ep_01jz0000000000000000000000';
const T0 = Date.parse('2026-06-17T12:00:00Z');

function failure(n: number, at: number, fields: Partial<PendingAuthFailure> = {}): PendingAuthFailure {
  return {
    id: `af_${String(n).padStart(6, '0')}`,
    storeId: STORE,
    endpointId: EP,
    code: 'SVC_AUTH_FAILED',
    at,
    count: 1,
    foldSince: T0,
    keepRows: 3,
    ...fields,
  };
}

for (const backend of backends()) {
  describe(`auth failure folding (${backend.name})`, () => {
    it('keeps keepRows rows per endpoint, code and window, folds the rest into the newest; a new window starts again', async () => {
      const repo = await backend.open();
      try {
        // One commit holding a flood, and single-failure commits after it, as the writer sends them.
        await repo.commitIngest(
          [],
          Array.from({ length: 50 }, (_, i) => failure(i, T0 + i)),
        );
        for (let i = 50; i < 60; i++) await repo.commitIngest([], [failure(i, T0 + i)]);
        await repo.commitIngest([], [failure(60, T0 + 60, { code: 'SVC_AUTH_HEADER_MISSING' })]);
        const rows = await repo.listAuthFailures(STORE, EP, 100);
        expect(rows.map((r) => [r.code, r.count, r.at])).toEqual([
          ['SVC_AUTH_HEADER_MISSING', 1, T0 + 60],
          ['SVC_AUTH_FAILED', 58, T0 + 59],
          ['SVC_AUTH_FAILED', 1, T0 + 1],
          ['SVC_AUTH_FAILED', 1, T0],
        ]);
        expect((await repo.countAuthFailures(STORE, T0)).map(({ endpointId, n }) => ({ endpointId, n }))).toEqual([{ endpointId: EP, n: 61 }]);

        const next = T0 + 60_000;
        await repo.commitIngest(
          [],
          Array.from({ length: 5 }, (_, i) => failure(100 + i, next + i, { foldSince: next })),
        );
        expect((await repo.listAuthFailures(STORE, EP, 100)).length).toBe(4 + 3);
        expect((await repo.countAuthFailures(STORE, T0)).map(({ endpointId, n }) => ({ endpointId, n }))).toEqual([{ endpointId: EP, n: 66 }]);
        // Without fold fields a failure is inserted as it is.
        await repo.commitIngest([], [{ id: 'af_plain', storeId: STORE, endpointId: EP, code: 'SVC_AUTH_FAILED', at: next + 10, count: 1 }]);
        expect((await repo.listAuthFailures(STORE, EP, 1))[0]).toMatchObject({ id: 'af_plain', count: 1 });
      } finally {
        await repo.close();
      }
    });
  });
}
