import { afterAll, describe, expect, it } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteRepo, WalSync } from '../../db/sqlite/repo.ts';
import { eventRow } from '../helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'hookrelay-wal-sync-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A WalSync whose fsyncs wait until the test ends them, one by one. */
function heldSync() {
  const path = join(dir, `held-${Math.random()}.db-wal`);
  writeFileSync(path, '');
  const calls: { end: (err?: Error) => void }[] = [];
  const sync = new WalSync(path, () => new Promise<void>((resolve, reject) => calls.push({ end: (err) => (err ? reject(err) : resolve()) })));
  return { sync, calls };
}

const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  await Bun.sleep(1);
  return done;
};

describe('WalSync: the ingest commit fsync, off the event loop', () => {
  it('a commit that finishes while an fsync runs waits for the next one, which every such commit shares', async () => {
    const { sync, calls } = heldSync();
    const first = sync.sync();
    await Bun.sleep(1);
    const second = sync.sync();
    const third = sync.sync();
    expect(calls.length).toBe(1);
    calls[0]!.end();
    await first;
    // The fsync under way may have begun before their pages were written: they are not durable yet.
    expect(await settled(second)).toBe(false);
    await Bun.sleep(1);
    expect(calls.length).toBe(2);
    calls[1]!.end();
    await Promise.all([second, third]);
    expect(calls.length).toBe(2);
    await sync.close();
  });

  it('a failed fsync fails the commits that wait on it, and the next one tries again', async () => {
    const { sync, calls } = heldSync();
    const failing = sync.sync();
    await Bun.sleep(1);
    calls[0]!.end(Object.assign(new Error('I/O error'), { code: 'EIO' }));
    await expect(failing).rejects.toMatchObject({ code: 'EIO' });
    const next = sync.sync();
    await Bun.sleep(1);
    expect(calls.length).toBe(2);
    calls[1]!.end();
    await next;
    await sync.close();
  });

  it('commitIngest on a FULL file database answers after its WAL is synced, and the receipt is there', async () => {
    const repo = await SqliteRepo.open({ path: join(dir, 'full.db') });
    const event = eventRow({ id: 'evt_wal_1', storeId: 'st_1', endpointId: 'ep_1' });
    const [committed] = await repo.commitIngest([{ event, body: new Uint8Array([1]), bodyExpiresAt: Date.now() + 1000, dedupeSince: null }], []);
    expect(committed!.eventId).toBe('evt_wal_1');
    expect(repo.file).toEqual({ path: join(dir, 'full.db'), synchronous: 'FULL' });
    await repo.close();
    const reopened = await SqliteRepo.open({ path: join(dir, 'full.db') });
    expect(await reopened.getEvent('st_1', 'evt_wal_1')).not.toBeNull();
    await reopened.close();
  });
});
