/**
 * auth_failures.diagnosis on every backend: a failure's signature-forensics code is stored as given (null when
 * none), read back by listAuthFailures, and a folded row takes the newest examined failure's code (one past the
 * limits, not examined, keeps it), as setup state reads it.
 */
import { expect } from 'bun:test';
import type { PendingAuthFailure } from '../../db/repo.ts';
import { areaSuite, EP, EP2, STORE, T0 } from '../fixtures/storage-rows.ts';

function failure(n: number, fields: Partial<PendingAuthFailure> = {}): PendingAuthFailure {
  return { id: `af_${String(n).padStart(6, '0')}`, storeId: STORE, endpointId: EP, code: 'SVC_AUTH_FAILED', at: T0 + n, count: 1, ...fields };
}

areaSuite('auth_failures.diagnosis', (test) => {
  test('stored as given, null without one, per row', async (repo) => {
    await repo.commitIngest([], [failure(1, { diagnosis: 'hex_uppercase' }), failure(2), failure(3, { endpointId: EP2, diagnosis: 'previous_secret' })]);
    expect((await repo.listAuthFailures(STORE, EP)).map((f) => [f.id, f.diagnosis])).toEqual([
      ['af_000002', null],
      ['af_000001', 'hex_uppercase'],
    ]);
    expect((await repo.listAuthFailures(STORE, EP2)).map((f) => f.diagnosis)).toEqual(['previous_secret']);
  });

  test('a folded row takes the newest failure’s diagnosis, in one commit and across commits', async (repo) => {
    const fold = { foldSince: T0, keepRows: 2 };
    await repo.commitIngest([], [failure(1, { ...fold, diagnosis: 'base64_not_hex' }), failure(2, { ...fold, diagnosis: 'base64_not_hex' })]);
    // A flood in one commit: folded into the newest row, whose diagnosis becomes the last one's.
    await repo.commitIngest([], [failure(3, { ...fold, diagnosis: 'prefix_v1' }), failure(4, { ...fold, diagnosis: 'body_trailing_newline' })]);
    let rows = await repo.listAuthFailures(STORE, EP);
    expect(rows.map((f) => [f.count, f.at, f.diagnosis])).toEqual([
      [3, T0 + 4, 'body_trailing_newline'],
      [1, T0 + 1, 'base64_not_hex'],
    ]);
    // A failure not examined (past the limits: no diagnosis field) keeps the row's finding.
    await repo.commitIngest([], [failure(5, fold)]);
    rows = await repo.listAuthFailures(STORE, EP);
    expect(rows.map((f) => [f.count, f.at, f.diagnosis])).toEqual([
      [4, T0 + 5, 'body_trailing_newline'],
      [1, T0 + 1, 'base64_not_hex'],
    ]);
    // A newest failure examined without a finding folds in as none: the row says what the newest was.
    await repo.commitIngest([], [failure(6, { ...fold, diagnosis: null })]);
    rows = await repo.listAuthFailures(STORE, EP);
    expect(rows.map((f) => [f.count, f.at, f.diagnosis])).toEqual([
      [5, T0 + 6, null],
      [1, T0 + 1, 'base64_not_hex'],
    ]);
    // Several in one commit: the newest examined one decides, unexamined ones after it change nothing.
    await repo.commitIngest([], [failure(7, { ...fold, diagnosis: 'prefix_sha256' }), failure(8, fold)]);
    expect((await repo.listAuthFailures(STORE, EP))[0]!.diagnosis).toBe('prefix_sha256');
  });
});
