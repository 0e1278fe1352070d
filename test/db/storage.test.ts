/**
 * The storage contract, written once against the Repo interface and run against every backend: SQLite always,
 * PostgreSQL when HOOKRELAY_TEST_DATABASE_URL is set. A rule that differs between dialects fails here.
 */
import { describe, expect, it } from 'bun:test';
import type { Repo } from '../../db/repo.ts';
import type { AttemptResult, PendingReceipt, StoreRow } from '../../db/types.ts';
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
    event: eventRow({ id, storeId: STORE, endpointId: EP, outcome, externalEventId: fields.ext ?? null, receivedAt: at, nextAttemptAt: outcome === 'accepted' ? at : null }),
    body: outcome === 'accepted' ? new TextEncoder().encode(`{"id":"${id}"}`) : null,
    bodyExpiresAt: at + 30 * 86400_000,
    dedupeSince: outcome === 'accepted' ? at - 86400_000 : null,
    capacity: fields.capacity ?? null,
  };
}

function result(eventId: string, number: number, outcome: 'delivered' | 'retry', at: number): AttemptResult {
  return {
    attempt: { eventId, number, destination: 'log', startedAt: at, finishedAt: at + 5, outcome, httpStatus: null, code: null, message: null, retryAt: null },
    storeId: STORE,
    metrics: [`handoff:${outcome}`],
    event: { outcome: outcome === 'delivered' ? 'delivered' : 'queued', code: null, nextAttemptAt: outcome === 'delivered' ? null : at + 1000, deliveredAt: outcome === 'delivered' ? at + 5 : null, leaseUntil: null },
  };
}

async function withStore(repo: Repo): Promise<void> {
  await repo.insertStore(store());
}

for (const backend of backends()) {
  describe(`storage contract (${backend.name})`, () => {
    it('stores and reads a store, a grant and its token hash', async () => {
      const repo = await backend.open();
      try {
        await withStore(repo);
        expect((await repo.getStore(STORE))?.shopDomain).toBe('demo.myshopify.com');
        expect((await repo.getStoreByShop('demo.myshopify.com'))?.id).toBe(STORE);
        await repo.updateStore(store({ plan: 'growth', updatedAt: T0 + 1 }));
        expect((await repo.getStore(STORE))?.plan).toBe('growth');
        await repo.insertGrant({ id: 'gr_1', storeId: STORE, tier: 'observer', scopes: '["setup:read"]', label: 'x', tokenHash: 'h1', expiresAt: T0 + 1000, revokedAt: null, createdAt: T0, lastUsedAt: null });
        expect((await repo.getGrantByTokenHash('h1'))?.expiresAt).toBe(T0 + 1000);
        expect((await repo.revokeGrant('gr_1', T0 + 5))?.revokedAt).toBe(T0 + 5);
        expect((await repo.revokeGrant('gr_1', T0 + 9))?.revokedAt).toBe(T0 + 5);
        expect(await repo.revokeGrant('gr_none', T0)).toBeNull();
        expect(await repo.getSetting('public_url')).toBeNull();
        await repo.putSetting('public_url', '"https://a.example"', T0);
        await repo.putSetting('public_url', '"https://b.example"', T0 + 1);
        expect(await repo.getSetting('public_url')).toBe('"https://b.example"');
      } finally {
        await repo.close();
      }
    });

    it('commits receipts with their bodies; a repeated external id within the window is suppressed, linking the first', async () => {
      const repo = await backend.open();
      try {
        await withStore(repo);
        const a = receipt({ ext: 'x-1' });
        const b = receipt({ ext: 'x-1', at: T0 + 10 });
        const c = receipt({ ext: 'x-2' });
        const first = await repo.commitIngest([a, b, c], []);
        expect(first.map((r) => [r.outcome, r.duplicateOf])).toEqual([['accepted', null], ['duplicate_suppressed', a.event.id], ['accepted', null]]);
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
        expect(listed.map((x) => x.id)).toEqual([a, b, c, d, e, r, f].map((x) => x.event.id).sort().reverse());
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
        const out = await repo.commitIngest([receipt({ capacity }), receipt({ capacity }), receipt({ ext: 'dup', capacity }), receipt({ ext: 'dup', capacity }), receipt({ capacity })], []);
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

    it('claims due events once under a lease, journals attempts before sends, records them, and fences a stale record', async () => {
      const repo = await backend.open();
      try {
        await withStore(repo);
        await repo.insertEndpoint(
          { id: EP, storeId: STORE, name: 'n', status: 'active', triggerVariant: 'generic', resourceIdPath: null, relatedResourceIdPath: null, requiredPaths: '[]', senderProfile: null, authMode: 'hmac_sha256', headerName: 'X-Hookrelay-Signature', secretSealed: 's', secretLast4: 'abcd', previousSecretSealed: null, previousSecretExpiresAt: null, sourceLabel: 'x', eventType: null, configVersion: 1, createdAt: T0, updatedAt: T0 },
          {},
        );
        const rs = [receipt(), receipt(), receipt()];
        await repo.commitIngest(rs, []);
        expect(await repo.nextDueAt()).toBe(T0);
        const claimed = await repo.claimDue(T0, 10, T0 + 60_000);
        expect(claimed.map((d) => d.event.id)).toEqual(rs.map((r) => r.event.id));
        expect(claimed.every((d) => d.endpoint.id === EP && d.store.id === STORE && d.event.outcome === 'queued')).toBe(true);
        expect(await repo.claimDue(T0, 10, T0 + 60_000)).toEqual([]); // leased: nobody else takes them

        const starts = claimed.map((d) => ({ eventId: d.event.id, number: 1, destination: 'log', startedAt: T0 + 1 }));
        expect(await repo.journalAttempts(starts)).toHaveLength(3);
        expect((await repo.listAttempts(rs[0]!.event.id)).map((a) => a.outcome)).toEqual(['sending']);
        await repo.recordAttempts([result(rs[0]!.event.id, 1, 'delivered', T0 + 2), result(rs[1]!.event.id, 1, 'retry', T0 + 2)]);
        expect((await repo.getEvent(STORE, rs[0]!.event.id))).toMatchObject({ outcome: 'delivered', attempts: 1, leaseUntil: null });
        expect((await repo.getEvent(STORE, rs[1]!.event.id))).toMatchObject({ outcome: 'queued', attempts: 1, nextAttemptAt: T0 + 1002 });

        // rs[2]'s worker went silent mid-send; once its lease ends a claim marks the attempt unknown and counts it.
        const again = await repo.claimDue(T0 + 60_000, 10, T0 + 120_000);
        expect(again.map((d) => d.event.id).sort()).toEqual([rs[1]!.event.id, rs[2]!.event.id].sort());
        const stale = again.find((d) => d.event.id === rs[2]!.event.id)!;
        expect(stale.event.attempts).toBe(1);
        expect((await repo.listAttempts(rs[2]!.event.id)).map((a) => [a.number, a.outcome])).toEqual([[1, 'unknown']]);
        // The stale worker's late record writes nothing; the event is the new holder's.
        await repo.recordAttempts([result(rs[2]!.event.id, 1, 'delivered', T0 + 70_000)]);
        expect((await repo.getEvent(STORE, rs[2]!.event.id))?.outcome).toBe('queued');
        expect((await repo.listAttempts(rs[2]!.event.id)).map((a) => a.outcome)).toEqual(['unknown']);
        // The same number journaled twice is left out, so it is never sent twice by one worker.
        expect(await repo.journalAttempts([{ eventId: rs[2]!.event.id, number: 2, destination: 'log', startedAt: T0 + 60_001 }])).toHaveLength(1);
        expect(await repo.journalAttempts([{ eventId: rs[2]!.event.id, number: 2, destination: 'log', startedAt: T0 + 60_002 }])).toEqual([]);
        await repo.recordAttempts([result(rs[2]!.event.id, 2, 'delivered', T0 + 60_003)]);
        expect((await repo.getEvent(STORE, rs[2]!.event.id))).toMatchObject({ outcome: 'delivered', attempts: 2 });
        expect((await repo.sumStats(STORE, T0))['handoff:delivered']).toBe(2);
      } finally {
        await repo.close();
      }
    });

    it('idempotency keys, intents compare-and-set, audit, usage, records, readiness and auth-failure counts', async () => {
      const repo = await backend.open();
      try {
        await withStore(repo);
        await repo.putIdempotency({ storeId: STORE, key: 'k', operationId: 'op', requestHash: 'h', status: 200, response: '{}', createdAt: T0, owner: null });
        expect((await repo.getIdempotency(STORE, 'k', T0 - 1))?.requestHash).toBe('h');
        expect(await repo.getIdempotency(STORE, 'k', T0 + 1)).toBeNull();
        await repo.insertIntent({ id: 'int_1', storeId: STORE, grantId: 'gr_1', kind: 'replay', operationId: 'op', targetId: null, state: 'previewed', input: '{}', preview: '{}', confirmationHash: 'c', confirmationExpiresAt: T0 + 1, result: null, refusal: null, basis: null, executor: null, executeKey: null, createdAt: T0, updatedAt: T0 });
        expect(await repo.transitionIntent('int_1', 'previewed', { state: 'executed', updatedAt: T0 + 1 })).toBe(true);
        expect(await repo.transitionIntent('int_1', 'previewed', { state: 'executed', updatedAt: T0 + 2 })).toBe(false);
        expect((await repo.getIntent(STORE, 'int_1'))?.state).toBe('executed');
        await repo.addUsage(STORE, 'replay_executions', T0, 2);
        await repo.addUsage(STORE, 'replay_executions', T0, 3);
        expect((await repo.getUsage(STORE, T0)).replay_executions).toBe(5);
        await repo.insertRecord({ id: 'sup_1', storeId: STORE, kind: 'support', body: '{"a":1}', createdAt: T0, expiresAt: null });
        expect((await repo.getRecord(STORE, 'support', 'sup_1'))?.body).toBe('{"a":1}');
        await repo.setTriggerReadiness({ storeId: STORE, handle: 'hookrelay-order', hasEnabledFlow: false, updatedAt: T0 });
        await repo.setTriggerReadiness({ storeId: STORE, handle: 'hookrelay-order', hasEnabledFlow: true, updatedAt: T0 + 1 });
        expect(await repo.listTriggerReadiness(STORE)).toEqual([{ storeId: STORE, handle: 'hookrelay-order', hasEnabledFlow: true, updatedAt: T0 + 1 }]);
        await repo.commitIngest([], [
          { id: 'af_1', storeId: STORE, endpointId: EP, code: 'SVC_AUTH_FAILED', at: T0, count: 1 },
          { id: 'af_2', storeId: STORE, endpointId: EP, code: 'SVC_AUTH_FAILED', at: T0 + 1, count: 40 },
        ]);
        expect(await repo.countAuthFailures(STORE, T0)).toEqual([{ endpointId: EP, n: 41 }]);
        expect((await repo.listAuthFailures(STORE, EP, 1)).map((f) => f.id)).toEqual(['af_2']);
        const audit = { at: T0, storeId: STORE, grantId: null, actorKind: 'agent', actorLabel: 'a', operationId: 'op', scopes: '[]', targetId: null, intentId: null, transition: null, outcome: 'ok', status: 200, errorCode: null, refusalCategory: null, refusalCode: null, requestId: 'r', surface: 'http' };
        await repo.insertAudit({ ...audit, id: 'aud_1' });
        await repo.insertAudit({ ...audit, id: 'aud_2', at: T0 + 1 });
        expect((await repo.listAudit({ storeId: STORE, limit: 10 })).map((a) => a.id)).toEqual(['aud_1', 'aud_2']);
        // More rows than the limit: the newest N, read oldest first, on every backend (PostgreSQL once gave the oldest N).
        for (let i = 3; i <= 12; i++) await repo.insertAudit({ ...audit, id: `aud_${String(i).padStart(2, '0')}`, at: T0 + i });
        expect((await repo.listAudit({ storeId: STORE, limit: 3 })).map((a) => a.id)).toEqual(['aud_10', 'aud_11', 'aud_12']);
        expect((await repo.listAudit({ storeId: STORE, since: T0 + 11, limit: 5 })).map((a) => a.id)).toEqual(['aud_11', 'aud_12']);
      } finally {
        await repo.close();
      }
    });

    it('claims an Idempotency-Key once: a live key is held, a pending one past its staleness or an expired one is taken over', async () => {
      const repo = await backend.open();
      try {
        const row = { storeId: STORE, key: 'k1', operationId: 'op', requestHash: 'h', createdAt: T0, owner: null };
        expect(await repo.claimIdempotency(row, T0 - 86400_000, T0 - 60_000)).toBeNull();
        expect((await repo.claimIdempotency({ ...row, createdAt: T0 + 1, owner: null }, T0 - 86400_000, T0 - 60_000))?.status).toBe(0); // in flight
        expect(await repo.claimIdempotency({ ...row, createdAt: T0 + 61_000, owner: null }, T0 - 86400_000, T0 + 1_000)).toBeNull(); // its holder died
        await repo.putIdempotency({ ...row, status: 200, response: '{"ok":1}', createdAt: T0 + 61_000 });
        expect((await repo.claimIdempotency({ ...row, createdAt: T0 + 62_000, owner: null }, T0, T0 + 62_000))?.response).toBe('{"ok":1}'); // done: held
        expect(await repo.claimIdempotency({ ...row, createdAt: T0 + 2 * 86400_000, owner: null }, T0 + 86400_000, T0)).toBeNull(); // expired
        await repo.releaseIdempotency(STORE, 'k1');
        expect(await repo.getIdempotency(STORE, 'k1', 0)).toBeNull();
      } finally {
        await repo.close();
      }
    });

    it('counts rate windows per key and refuses, counting nothing, once any key is full', async () => {
      const repo = await backend.open();
      try {
        const keys = [{ key: 'simple|g|gr_1', limit: 2 }, { key: 'simple|s|st_1', limit: 3 }];
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
        expect(await repo.addRate([{ key: 'auth|e|ep_1', n: 1 }, { key: 'auth|c|10.0.0.1', n: 3 }], T0)).toEqual([1, 3]);
        expect(await repo.addRate([{ key: 'auth|c|10.0.0.1', n: 2 }, { key: 'auth|c|10.0.0.2', n: 1 }], T0)).toEqual([5, 1]);
        expect(await repo.addRate([{ key: 'auth|c|10.0.0.1', n: 1 }], T0 + 60_000)).toEqual([1]); // a new window
        if (backend.peer) {
          // Another instance on the same database adds to the same counts; concurrent adds are all counted.
          const peer = await backend.peer();
          try {
            const adds = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? peer : repo).addRate([{ key: 'auth|e|ep_1', n: 1 }, { key: 'auth|c|10.0.0.9', n: 1 }], T0)));
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
