/**
 * A storage handle on every backend is its areas and nothing more: no SQL runner and no dialect layout to reach
 * past them (db/repo.ts). The layer test (test/contract/layers.test.ts) keeps db/runner.ts and db/dialect.ts below db/.
 */
import { expect } from 'bun:test';
import { areaSuite } from '../../fixtures/storage-rows.ts';

areaSuite('Repo', (test) => {
  test('exposes no runner and no layout, and each area it carries is there', async (repo) => {
    expect('sql' in repo).toBe(false);
    expect('layout' in repo).toBe(false);
    expect('dialect' in repo).toBe(false);
    for (const area of ['links', 'installs', 'shopifyWebhooks', 'redaction', 'bulkReplays'] as const) expect(typeof repo[area]).toBe('object');
    for (const fn of ['sweepRetention', 'claimIntent', 'executeIntent', 'takeOverIdempotency', 'listRecords', 'listSettings'] as const)
      expect(typeof repo[fn]).toBe('function');
  });
});
