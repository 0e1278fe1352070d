/**
 * AuditLog on every backend: listAudit returns the NEWEST `limit` rows (at or after `since`, of the store when
 * given), oldest first, so they read as a log.
 */
import { expect } from 'bun:test';
import { audit, areaSuite, OTHER_STORE, pad, shuffled, STORE, T0 } from '../../fixtures/storage-rows.ts';

/** 25 rows of STORE, aud_01 … aud_25, one a second apart, inserted out of order. */
const ROWS = Array.from({ length: 25 }, (_, i) => audit({ id: `aud_${pad(i + 1)}`, at: T0 + (i + 1) * 1000 }));
const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `aud_${pad(from + i)}`);

areaSuite('AuditLog', (test) => {
  test('25 rows, limit 10: the newest 10, oldest first', async (repo) => {
    for (const row of shuffled(ROWS)) await repo.insertAudit(row);
    expect((await repo.listAudit({ storeId: STORE, limit: 10 })).map((a) => a.id)).toEqual(ids(16, 25));
    expect((await repo.listAudit({ limit: 10 })).map((a) => a.id)).toEqual(ids(16, 25));
    expect((await repo.listAudit({ storeId: STORE, limit: 1 })).map((a) => a.id)).toEqual(['aud_25']);
  });

  test('a limit above the row count returns every row, oldest first; rows read back exactly', async (repo) => {
    for (const row of shuffled(ROWS)) await repo.insertAudit(row);
    const all = await repo.listAudit({ storeId: STORE, limit: 100 });
    expect(all).toEqual(ROWS);
    expect([typeof all[0]!.at, typeof all[0]!.status]).toEqual(['number', 'number']);
  });

  test('since is inclusive and applies before the limit: the newest of the rows at or after it', async (repo) => {
    for (const row of shuffled(ROWS)) await repo.insertAudit(row);
    // Rows 5…25 are at or after T0 + 5 s; the newest 10 of them are 16…25.
    expect((await repo.listAudit({ storeId: STORE, since: T0 + 5000, limit: 10 })).map((a) => a.id)).toEqual(ids(16, 25));
    // Rows 20…25 are at or after T0 + 20 s: fewer than the limit, all of them.
    expect((await repo.listAudit({ storeId: STORE, since: T0 + 20_000, limit: 10 })).map((a) => a.id)).toEqual(ids(20, 25));
    expect((await repo.listAudit({ since: T0 + 25_000, limit: 10 })).map((a) => a.id)).toEqual(['aud_25']);
    expect(await repo.listAudit({ storeId: STORE, since: T0 + 25_001, limit: 10 })).toEqual([]);
  });

  test('storeId scopes to the store; without it every store’s rows and box-wide ones (no store) are listed', async (repo) => {
    // aud_01…aud_25 alternate between STORE, the other store and box-wide rows (no store).
    const rows = ROWS.map((r, i) => ({ ...r, storeId: [STORE, OTHER_STORE, null][i % 3]! }));
    for (const row of shuffled(rows)) await repo.insertAudit(row);
    const of = (storeId: string | null) => rows.filter((r) => r.storeId === storeId).map((r) => r.id);
    expect((await repo.listAudit({ storeId: STORE, limit: 100 })).map((a) => a.id)).toEqual(of(STORE));
    expect((await repo.listAudit({ storeId: OTHER_STORE, limit: 5 })).map((a) => a.id)).toEqual(of(OTHER_STORE).slice(-5));
    expect((await repo.listAudit({ limit: 6 })).map((a) => a.id)).toEqual(ids(20, 25));
    expect((await repo.listAudit({ storeId: STORE, since: T0 + 13_000, limit: 3 })).map((a) => a.id)).toEqual(['aud_19', 'aud_22', 'aud_25']);
    expect(await repo.listAudit({ storeId: 'st_none', limit: 10 })).toEqual([]);
  });

  test('rows of the same time read in id order, and the limit keeps the greatest ids', async (repo) => {
    const same = ['aud_c', 'aud_a', 'aud_e', 'aud_b', 'aud_d'].map((id) => audit({ id, at: T0 }));
    for (const row of same) await repo.insertAudit(row);
    await repo.insertAudit(audit({ id: 'aud_0', at: T0 - 1 }));
    expect((await repo.listAudit({ storeId: STORE, limit: 10 })).map((a) => a.id)).toEqual(['aud_0', 'aud_a', 'aud_b', 'aud_c', 'aud_d', 'aud_e']);
    expect((await repo.listAudit({ storeId: STORE, limit: 3 })).map((a) => a.id)).toEqual(['aud_c', 'aud_d', 'aud_e']);
  });

  test('pageAudit: one store, newest first, filtered, each page strictly after the previous one’s last row (ties by id)', async (repo) => {
    // aud_01…aud_25: odd rows human, even rows agent of gr_a; aud_10 and aud_11 at the same time; one row of another store.
    const rows = ROWS.map((r, i) => ({
      ...r,
      at: i === 10 ? ROWS[9]!.at : r.at,
      actorKind: i % 2 === 0 ? 'human' : 'agent',
      grantId: i % 2 === 0 ? null : 'gr_a',
      operationId: i % 5 === 0 ? 'issueGrant' : 'getSetupState',
    }));
    for (const row of shuffled(rows)) await repo.insertAudit(row);
    await repo.insertAudit(audit({ id: 'aud_99', at: T0 + 99_000, storeId: OTHER_STORE }));
    const page = async (f: Partial<Parameters<typeof repo.pageAudit>[0]>) => (await repo.pageAudit({ storeId: STORE, limit: 100, ...f })).map((a) => a.id);
    expect(await page({ limit: 3 })).toEqual(['aud_25', 'aud_24', 'aud_23']);
    expect(await page({ limit: 3, before: { at: rows[10]!.at, id: 'aud_11' } })).toEqual(['aud_10', 'aud_09', 'aud_08']);
    expect(await page({ actorKind: 'agent', limit: 2 })).toEqual(['aud_24', 'aud_22']);
    expect(await page({ grantId: 'gr_a', since: T0 + 20_000 })).toEqual(['aud_24', 'aud_22', 'aud_20']);
    expect(await page({ operationId: 'issueGrant', until: T0 + 16_000 })).toEqual(['aud_11', 'aud_06', 'aud_01']);
    expect(await page({ storeId: OTHER_STORE })).toEqual(['aud_99']);
  });
});
