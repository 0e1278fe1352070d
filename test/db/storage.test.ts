/**
 * The storage contract, written once against the Repo interface and run against every backend: SQLite always,
 * PostgreSQL when HOOKRELAY_TEST_DATABASE_URL is set. A rule that differs between dialects fails here. This file
 * holds the ingest commit and the rate windows; each other area has its own suite in test/db/areas/.
 */
import { describe, expect, it } from 'bun:test';
import type { Repo } from '../../db/repo.ts';
import type { PendingReceipt, StoreRow } from '../../db/types.ts';
import { backends } from '../fixtures/storage.ts';
import { eventRow, storeRow } from '../helpers.ts';

const STORE = 'st_01jz0000000000000000000000';
const EP = 'ep_01jz0000000000000000000000';
const T0 = Date.parse('2026-06-17T12:00:00Z');

const store = (fields: Partial<StoreRow> = {}) => storeRow({ id: STORE, plan: 'free', createdAt: T0, updatedAt: T0, ...fields });

let seq = 0;
function receipt(fields: { ext?: string | null; at?: number; outcome?: string; capacity?: PendingReceipt['capacity'] } = {}): PendingReceipt {
  const id = `evt_${String(++seq).padStart(8, '0')}`;
  const at = fields.at ?? T0;
  const outcome = fields.outcome ?? 'accepted';
  return {
    event: eventRow({
      id,
      storeId: STORE,
      endpointId: EP,
      outcome,
      externalEventId: fields.ext ?? null,
      receivedAt: at,
      nextAttemptAt: outcome === 'accepted' ? at : null,
    }),
    body: outcome === 'accepted' ? new TextEncoder().encode(`{"id":"${id}"}`) : null,
    bodyExpiresAt: at + 30 * 86400_000,
    dedupeSince: outcome === 'accepted' ? at - 86400_000 : null,
    capacity: fields.capacity ?? null,
  };
}

async function withStore(repo: Repo): Promise<void> {
  await repo.insertStore(store());
}

for (const backend of backends()) {
  describe(`storage contract (${backend.name})`, () => {
    it('commits receipts with their bodies; a repeated external id within the window is suppressed, linking the first', async () => {
      const repo = await backend.open();
      try {
        await withStore(repo);
        const a = receipt({ ext: 'x-1' });
        const b = receipt({ ext: 'x-1', at: T0 + 10 });
        const c = receipt({ ext: 'x-2' });
        const first = await repo.commitIngest([a, b, c], []);
        expect(first.map((r) => [r.outcome, r.duplicateOf])).toEqual([
          ['accepted', null],
          ['duplicate_suppressed', a.event.id],
          ['accepted', null],
        ]);
        // A later commit: still a duplicate of the first, whose body is kept and never the duplicate's.
        const d = receipt({ ext: 'x-1', at: T0 + 3600_000 });
        expect((await repo.commitIngest([d], []))[0]).toMatchObject({ outcome: 'duplicate_suppressed', duplicateOf: a.event.id });
        expect(new TextDecoder().decode((await repo.getEventBody(a.event.id))!)).toBe(`{"id":"${a.event.id}"}`);
        expect(await repo.getEventBody(d.event.id)).toBeNull();
        // Past the window the id is new again.
        const e = receipt({ ext: 'x-1', at: T0 + 2 * 86400_000 });
        expect((await repo.commitIngest([e], []))[0]).toMatchObject({ outcome: 'accepted', duplicateOf: null });
        // A rejected receipt never claims an id.
        const r = receipt({ ext: 'x-3', outcome: 'rejected' });
        const f = receipt({ ext: 'x-3', at: T0 + 20 });
        expect((await repo.commitIngest([r, f], [])).map((x) => x.outcome)).toEqual(['rejected', 'accepted']);
        const listed = await repo.listEvents({ storeId: STORE, limit: 100 });
        expect(listed.map((x) => x.id)).toEqual(
          [a, b, c, d, e, r, f]
            .map((x) => x.event.id)
            .sort()
            .reverse(),
        );
        expect((await repo.getEvent(STORE, b.event.id))?.duplicateOf).toBe(a.event.id);
        expect((await repo.latestEvent(STORE))?.id).toBe(f.event.id);
      } finally {
        await repo.close();
      }
    });

    it('holds accepted receipts past the hard limit, counts the rest exactly, and releases held ones when room returns', async () => {
      const repo = await backend.open();
      try {
        await withStore(repo);
        const capacity = { meter: 'accepted_events', periodStart: T0, hardLimit: 3 };
        const out = await repo.commitIngest(
          [receipt({ capacity }), receipt({ capacity }), receipt({ ext: 'dup', capacity }), receipt({ ext: 'dup', capacity }), receipt({ capacity })],
          [],
        );
        expect(out.map((r) => r.outcome)).toEqual(['accepted', 'accepted', 'accepted', 'duplicate_suppressed', 'held']);
        expect((await repo.getUsage(STORE, T0)).accepted_events).toBe(3);
        expect((await repo.commitIngest([receipt({ capacity })], []))[0]!.outcome).toBe('held');
        expect(await repo.releaseHeld(STORE, capacity, T0 + 1)).toBe(0);
        expect(await repo.releaseHeld(STORE, { ...capacity, hardLimit: 4 }, T0 + 1)).toBe(1);
        expect((await repo.getUsage(STORE, T0)).accepted_events).toBe(4);
        expect(await repo.hasOutcome(STORE, 'held')).toBe(true);
        expect(await repo.pendingStats(STORE)).toEqual({ backlog: 5, oldestReceivedAt: T0 });
        expect(await repo.handoffBacklog(STORE)).toEqual({ backlog: 5, oldestReceivedAt: T0 });
      } finally {
        await repo.close();
      }
    });

    it('counts rate windows per key and refuses, counting nothing, once any key is full', async () => {
      const repo = await backend.open();
      try {
        const keys = [
          { key: 'simple|g|gr_1', limit: 2 },
          { key: 'simple|s|st_1', limit: 3 },
        ];
        expect(await repo.takeRate(keys, T0)).toBe(-1);
        expect(await repo.takeRate(keys, T0)).toBe(-1);
        expect(await repo.takeRate(keys, T0)).toBe(0); // the grant's window is full
        expect(await repo.takeRate([{ key: 'simple|g|gr_2', limit: 2 }, keys[1]!], T0)).toBe(-1); // the store had room for one more
        expect(await repo.takeRate([{ key: 'simple|g|gr_2', limit: 2 }, keys[1]!], T0)).toBe(1);
        expect(await repo.takeRate(keys, T0 + 60_000)).toBe(-1); // a new window
      } finally {
        await repo.close();
      }
    });

    it('adds to rate windows per key and returns the counts after, in the order given, never refusing', async () => {
      const repo = await backend.open();
      try {
        expect(
          await repo.addRate(
            [
              { key: 'auth|e|ep_1', n: 1 },
              { key: 'auth|c|10.0.0.1', n: 3 },
            ],
            T0,
          ),
        ).toEqual([1, 3]);
        expect(
          await repo.addRate(
            [
              { key: 'auth|c|10.0.0.1', n: 2 },
              { key: 'auth|c|10.0.0.2', n: 1 },
            ],
            T0,
          ),
        ).toEqual([5, 1]);
        expect(await repo.addRate([{ key: 'auth|c|10.0.0.1', n: 1 }], T0 + 60_000)).toEqual([1]); // a new window
        if (backend.peer) {
          // Another instance on the same database adds to the same counts; concurrent adds are all counted.
          const peer = await backend.peer();
          try {
            const adds = await Promise.all(
              Array.from({ length: 20 }, (_, i) =>
                (i % 2 ? peer : repo).addRate(
                  [
                    { key: 'auth|e|ep_1', n: 1 },
                    { key: 'auth|c|10.0.0.9', n: 1 },
                  ],
                  T0,
                ),
              ),
            );
            expect(adds.map((a) => a[0]).sort((x, y) => x! - y!)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
            expect(await peer.addRate([{ key: 'auth|c|10.0.0.1', n: 0 }], T0)).toEqual([5]);
          } finally {
            await peer.close();
          }
        }
      } finally {
        await repo.close();
      }
    });
  });
}
