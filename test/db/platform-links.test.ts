/**
 * platform_links, written once for both dialects (db/areas/platform-links.ts), run on each: one renewal at a time and a
 * token saved only under it; a pause kept in place when re-reported; one probe at a time, only when due; a resume
 * that makes the store's waiting events due; an unsent attempt withdrawn without counting.
 */
import { describe, expect, it } from 'bun:test';
import type { Repo } from '../../db/repo.ts';
import type { StoreRow } from '../../db/types.ts';
import { endpoint } from '../fixtures/storage-rows.ts';
import { backends } from '../fixtures/storage.ts';
import { eventRow, storeRow } from '../helpers.ts';

const STORE = 'st_01jz0000000000000000000000';
const EP = 'ep_01jz0000000000000000000000';
const T0 = Date.parse('2026-11-25T12:00:00Z');
const PAUSE = { reason: 'credentials', code: 'SVC_CREDENTIALS_REFUSED', message: 'refused' };

const store: StoreRow = storeRow({
  id: STORE,
  destination: 'shopify',
  credentialMode: 'client-credentials',
  clientId: 'client-1',
  clientSecretEnv: 'SECRET_VAR',
  createdAt: T0,
});

async function withRepo(open: () => Promise<Repo>, fn: (repo: Repo) => Promise<void>) {
  const repo = await open();
  try {
    await repo.insertStore(store);
    await fn(repo);
  } finally {
    await repo.close();
  }
}

for (const backend of backends()) {
  describe(`platform_links (${backend.name})`, () => {
    it('one renewal at a time; a token is saved only under the renewal held, and counts a generation', async () => {
      await withRepo(backend.open, async (repo) => {
        const { links } = repo;
        expect(await links.get(STORE)).toBeNull();
        expect(await links.takeRenewal(STORE, 'a', T0, T0 + 60_000)).toBe(true);
        expect(await links.takeRenewal(STORE, 'b', T0 + 1, T0 + 60_001)).toBe(false);
        expect(await links.takeRenewal(STORE, 'a', T0 + 2, T0 + 60_002)).toBe(true); // its own, again
        expect(
          await links.saveToken(STORE, 'b', { sealed: 'v1.x', expiresAt: T0 + 86_400_000, obtainedAt: T0, scope: null, clientId: 'client-1' }, T0),
        ).toBeNull();
        expect(
          await links.saveToken(STORE, 'a', { sealed: 'v1.a', expiresAt: T0 + 86_400_000, obtainedAt: T0, scope: 'read_orders', clientId: 'client-1' }, T0),
        ).toBe(1);
        expect(await links.get(STORE)).toMatchObject({
          tokenSealed: 'v1.a',
          tokenGeneration: 1,
          renewalOwner: null,
          renewalLeaseUntil: null,
          lastRenewalAt: T0,
          tokenClientId: 'client-1',
        });
        // A lease that ran out is taken over; a failed renewal records its code and frees the lease.
        expect(await links.takeRenewal(STORE, 'b', T0 + 10, T0 + 20)).toBe(true);
        expect(await links.takeRenewal(STORE, 'a', T0 + 21, T0 + 90)).toBe(true);
        await links.failRenewal(STORE, 'b', 'SVC_TOKEN_REQUEST_FAILED', T0 + 22); // b no longer holds it: nothing
        expect((await links.get(STORE))!.renewalOwner).toBe('a');
        await links.failRenewal(STORE, 'a', 'SVC_TOKEN_REQUEST_FAILED', T0 + 23);
        expect(await links.get(STORE)).toMatchObject({ renewalOwner: null, lastRenewalError: 'SVC_TOKEN_REQUEST_FAILED', tokenSealed: 'v1.a' });
        await links.clearToken(STORE, T0 + 30);
        expect(await links.get(STORE)).toMatchObject({ tokenSealed: null, tokenExpiresAt: null, tokenGeneration: 2, lastRenewalError: null });
        await links.noteApiVersion(STORE, '2027-01', T0 + 40);
        expect(await links.get(STORE)).toMatchObject({ answeredApiVersion: '2027-01', answeredApiVersionAt: T0 + 40 });
      });
    });

    it('a pause keeps its since, probes and next probe when reported again; one probe at a time, only when due', async () => {
      await withRepo(backend.open, async (repo) => {
        const { links } = repo;
        const first = await links.pause(STORE, PAUSE, T0, 0, T0 + 5_000);
        expect(first).toMatchObject({ pauseReason: 'credentials', pauseCode: 'SVC_CREDENTIALS_REFUSED', pausedSince: T0, probes: 0, nextProbeAt: T0 + 5_000 });
        const again = await links.pause(STORE, { ...PAUSE, code: 'SVC_TOKEN_REQUEST_FAILED', message: 'no token' }, T0 + 1_000, 3, T0 + 99_000);
        expect(again).toMatchObject({ pausedSince: T0, probes: 0, nextProbeAt: T0 + 5_000, pauseCode: 'SVC_TOKEN_REQUEST_FAILED', pauseMessage: 'no token' });
        expect((await links.listPaused()).map((l) => l.storeId)).toEqual([STORE]);

        expect(await links.takeProbe(STORE, T0 + 4_999, T0 + 60_000)).toBeNull(); // not due
        const probe = await links.takeProbe(STORE, T0 + 5_000, T0 + 65_000);
        expect(probe).toMatchObject({ storeId: STORE, probeLeaseUntil: T0 + 65_000 });
        expect(await links.takeProbe(STORE, T0 + 5_001, T0 + 65_001)).toBeNull(); // another instance: no
        await links.probeFailed(STORE, PAUSE, T0 + 6_000, T0 + 16_000);
        expect(await links.get(STORE)).toMatchObject({ probes: 1, nextProbeAt: T0 + 16_000, probeLeaseUntil: null, pauseCode: 'SVC_CREDENTIALS_REFUSED' });
        // A probe whose holder died: its lease runs out and the next one is taken.
        expect(await links.takeProbe(STORE, T0 + 16_000, T0 + 20_000)).not.toBeNull();
        expect(await links.takeProbe(STORE, T0 + 20_000, T0 + 30_000)).not.toBeNull();
      });
    });

    it("resume ends the pause and makes the store's waiting events due now; leased and finished events are left alone", async () => {
      await withRepo(backend.open, async (repo) => {
        const { links } = repo;
        await repo.insertEndpoint(endpoint({ id: EP, storeId: STORE, createdAt: T0, updatedAt: T0 }), {});
        const ev = (id: string, fields: Parameters<typeof eventRow>[0]) => ({
          event: eventRow({ storeId: STORE, endpointId: EP, receivedAt: T0, ...fields, id }),
          body: null,
          bodyExpiresAt: T0 + 1,
          dedupeSince: null,
        });
        await repo.commitIngest(
          [
            ev('evt_00000001', { id: 'evt_00000001', outcome: 'accepted', nextAttemptAt: T0 + 300_000 }),
            ev('evt_00000002', { id: 'evt_00000002', outcome: 'accepted', nextAttemptAt: T0 + 300_000 }),
            ev('evt_00000003', { id: 'evt_00000003', outcome: 'accepted', nextAttemptAt: T0 + 300_000 }),
          ],
          [],
        );
        // Two claimed: the first is then withdrawn unsent (waiting for a probe far off), the second stays the worker's.
        const claimed = await repo.claimDue(T0 + 300_000, 2, T0 + 400_000);
        expect(claimed.map((d) => d.event.id)).toEqual(['evt_00000001', 'evt_00000002']);
        await repo.journalAttempts([{ eventId: 'evt_00000001', number: 1, destination: 'shopify', startedAt: T0 + 300_000 }]);
        await repo.recordAttempts([
          {
            unsent: true,
            attempt: {
              eventId: 'evt_00000001',
              number: 1,
              destination: 'shopify',
              startedAt: T0 + 300_000,
              finishedAt: T0 + 300_000,
              outcome: 'retry',
              httpStatus: null,
              code: null,
              message: null,
              retryAt: T0 + 900_000,
            },
            storeId: STORE,
            metrics: [],
            event: { outcome: 'queued', code: null, nextAttemptAt: T0 + 900_000, leaseUntil: null, deliveredAt: null },
          },
        ]);
        // Withdrawn, not counted: no attempt row, attempts 0, waiting for the probe.
        expect(await repo.listAttempts('evt_00000001')).toEqual([]);
        expect(await repo.getEvent(STORE, 'evt_00000001')).toMatchObject({ outcome: 'queued', attempts: 0, nextAttemptAt: T0 + 900_000, leaseUntil: null });

        await links.pause(STORE, PAUSE, T0 + 300_000, 0, T0 + 900_000);
        expect(await links.resume(STORE, T0 + 310_000)).toBe(true);
        expect(await links.resume(STORE, T0 + 310_001)).toBe(false);
        expect(await links.get(STORE)).toMatchObject({ pauseReason: null, pauseCode: null, pausedSince: null, nextProbeAt: null, resumedAt: T0 + 310_000 });
        expect((await repo.getEvent(STORE, 'evt_00000001'))!.nextAttemptAt).toBe(T0 + 310_000);
        expect((await repo.getEvent(STORE, 'evt_00000002'))!.leaseUntil).toBe(T0 + 400_000); // still the worker's
        expect(await repo.nextDueAt()).toBeLessThanOrEqual(T0 + 310_000);
        expect(await links.listPaused()).toEqual([]);
      });
    });
  });
}
