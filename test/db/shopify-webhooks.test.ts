/**
 * The storage of Shopify webhooks and of erasure, written once for both dialects (db/areas/shopify-webhooks.ts,
 * db/areas/redaction.ts), run on each: a delivery recorded once, one run at a time, done once, retried after a failure,
 * forgotten long after; bodies erased by event (SQLite's body keys cleared, so a key used again never leads back),
 * rows and other stores untouched; a customer's events found with their endpoint's trigger at the time; a once-only
 * effect taken by one delivery; the app subscriptions hookrelay created, by store.
 */
import { describe, expect, it } from 'bun:test';
import type { Repo } from '../../db/repo.ts';
import type { NewShopifyWebhook } from '../../db/areas/shopify-webhooks.ts';
import type { EndpointRow, EventRow } from '../../db/types.ts';
import { backends } from '../fixtures/storage.ts';
import { eventRow, storeRow } from '../helpers.ts';

const STORE = 'st_01jz0000000000000000000000';
const OTHER = 'st_01jz0000000000000000000001';
const T0 = Date.parse('2026-11-25T12:00:00Z');

const store = (id: string, shopDomain: string) => storeRow({ id, shopDomain, platformAccountId: 'a', installationId: 'i', createdAt: T0, updatedAt: T0 });

const endpoint = (id: string, storeId: string, triggerVariant: string): EndpointRow => ({
  id,
  storeId,
  name: id,
  status: 'active',
  triggerVariant,
  resourceIdPath: 'x.id',
  relatedResourceIdPath: null,
  fields: '[]',
  includeBody: 0,
  requiredPaths: '[]',
  senderProfile: null,
  authMode: 'hmac_sha256',
  headerName: 'X-Hookrelay-Signature',
  secretSealed: 'v1.x',
  secretLast4: 'abcd',
  previousSecretSealed: null,
  previousSecretExpiresAt: null,
  sourceLabel: 'test',
  eventType: null,
  expectedEveryMs: null,
  configVersion: 1,
  createdAt: T0,
  updatedAt: T0,
});

const delivery = (id: string, fields: Partial<NewShopifyWebhook> = {}): NewShopifyWebhook => ({
  webhookId: id,
  topic: 'shop/redact',
  shopDomain: 'demo.myshopify.com',
  apiVersion: '2026-10',
  eventId: null,
  triggeredAt: T0 - 1000,
  receivedAt: T0,
  processedAt: null,
  result: null,
  leaseUntil: T0 + 60_000,
  payloadSealed: 'v1.sealed',
  ...fields,
});

const withBody = (event: EventRow) => ({ event, body: new TextEncoder().encode(`{"body":"${event.id}"}`), bodyExpiresAt: T0 + 86400_000, dedupeSince: null });

async function withRepo(open: () => Promise<Repo>, fn: (repo: Repo) => Promise<void>) {
  const repo = await open();
  try {
    await repo.insertStore(store(STORE, 'demo.myshopify.com'));
    await repo.insertStore(store(OTHER, 'other.myshopify.com'));
    await fn(repo);
  } finally {
    await repo.close();
  }
}

for (const backend of backends()) {
  describe(`shopify_webhooks storage (${backend.name})`, () => {
    it('records a delivery once: a repeat of its webhook id writes nothing', async () => {
      await withRepo(backend.open, async (repo) => {
        const hooks = repo.shopifyWebhooks;
        expect(await hooks.record(delivery('wh-1'))).toBe(true);
        expect(await hooks.record(delivery('wh-1', { topic: 'customers/redact', payloadSealed: 'v1.other' }))).toBe(false);
        expect(await hooks.get('wh-1')).toEqual({
          webhookId: 'wh-1',
          topic: 'shop/redact',
          shopDomain: 'demo.myshopify.com',
          apiVersion: '2026-10',
          eventId: null,
          triggeredAt: T0 - 1000,
          receivedAt: T0,
          processedAt: null,
          attempts: 1,
          leaseUntil: T0 + 60_000,
          lastError: null,
          result: null,
          payloadSealed: 'v1.sealed',
        });
        // Nothing to process: recorded done, no run taken.
        expect(await hooks.record(delivery('wh-2', { topic: 'orders/create', processedAt: T0, result: 'not handled', payloadSealed: null }))).toBe(true);
        expect(await hooks.get('wh-2')).toMatchObject({ processedAt: T0, attempts: 0, leaseUntil: null });
        expect(await hooks.get('nope')).toBeNull();
      });
    });

    it('hands a delivery to one run at a time, due only once its run is free; done once, dropping the payload', async () => {
      await withRepo(backend.open, async (repo) => {
        const hooks = repo.shopifyWebhooks;
        await hooks.record(delivery('wh-1'));
        await hooks.record(delivery('wh-2', { receivedAt: T0 + 1 }));
        expect(await hooks.due(T0 + 1000, 10)).toEqual([]); // the recording's run holds both
        expect(await hooks.claim('wh-1', T0 + 1000, T0 + 2000)).toBeNull();
        // The recording's run died: after its lease the sweep may take it, once.
        expect(await hooks.due(T0 + 60_000, 10)).toEqual(['wh-1', 'wh-2']);
        expect(await hooks.due(T0 + 60_000, 1)).toEqual(['wh-1']);
        const run = await hooks.claim('wh-1', T0 + 60_000, T0 + 120_000);
        expect(run).toMatchObject({ attempts: 2, leaseUntil: T0 + 120_000, payloadSealed: 'v1.sealed' });
        expect(await hooks.claim('wh-1', T0 + 60_001, T0 + 120_001)).toBeNull();
        // It fails: the code kept, the next run not before its retry time.
        await hooks.failed('wh-1', 'processing_failed', T0 + 90_000);
        expect(await hooks.get('wh-1')).toMatchObject({ lastError: 'processing_failed', leaseUntil: T0 + 90_000, processedAt: null });
        expect(await hooks.due(T0 + 89_999, 10)).toEqual(['wh-2']);
        expect((await hooks.claim('wh-1', T0 + 90_000, T0 + 150_000))!.attempts).toBe(3);
        expect(await hooks.done('wh-1', '3 bodies erased', T0 + 91_000)).toBe(true);
        expect(await hooks.done('wh-1', 'again', T0 + 92_000)).toBe(false);
        expect(await hooks.get('wh-1')).toMatchObject({
          processedAt: T0 + 91_000,
          result: '3 bodies erased',
          payloadSealed: null,
          leaseUntil: null,
          lastError: null,
          attempts: 3,
        });
        // A late failure of a stale run does not undo it; a processed delivery is never due or taken again.
        await hooks.failed('wh-1', 'late', T0 + 200_000);
        expect(await hooks.get('wh-1')).toMatchObject({ lastError: null, processedAt: T0 + 91_000 });
        expect(await hooks.due(T0 + 10 * 86400_000, 10)).toEqual(['wh-2']);
        expect(await hooks.claim('wh-1', T0 + 10 * 86400_000, T0 + 11 * 86400_000)).toBeNull();
        // Processed deliveries are forgotten after a while; pending ones never.
        expect(await hooks.prune(T0 + 91_000)).toBe(0);
        expect(await hooks.prune(T0 + 91_001)).toBe(1);
        expect(await hooks.get('wh-1')).toBeNull();
        expect(await hooks.get('wh-2')).not.toBeNull();
      });
    });

    it('gives a once-only effect to the first delivery that claims it (again to that delivery, never to another), and keeps it past pruning', async () => {
      await withRepo(backend.open, async (repo) => {
        const hooks = repo.shopifyWebhooks;
        const key = `customers/redact ${'a'.repeat(64)}`;
        expect(await hooks.claimEffect(key, STORE, 'wh-1', T0)).toBe(true);
        expect(await hooks.claimEffect(key, STORE, 'wh-1', T0 + 1)).toBe(true); // its own retry after a failed run
        expect(await hooks.claimEffect(key, STORE, 'wh-2', T0 + 2)).toBe(false); // a replay under a new webhook id
        expect(await hooks.claimEffect(`customers/redact ${'b'.repeat(64)}`, STORE, 'wh-2', T0 + 3)).toBe(true);
        await hooks.record(delivery('wh-1', { processedAt: T0, result: 'done', payloadSealed: null }));
        expect(await hooks.prune(T0 + 86400_000)).toBe(1);
        expect(await hooks.claimEffect(key, STORE, 'wh-3', T0 + 86400_000)).toBe(false);
      });
    });

    it("records the app subscriptions hookrelay created, once each, and lists a store's newest first", async () => {
      await withRepo(backend.open, async (repo) => {
        const installs = repo.installs;
        await installs.recordSubscription('gid://shopify/AppSubscription/1', STORE, 'starter', T0);
        await installs.recordSubscription('gid://shopify/AppSubscription/2', STORE, 'growth', T0 + 1000);
        await installs.recordSubscription('gid://shopify/AppSubscription/2', STORE, 'scale', T0 + 2000); // a repeat changes nothing
        await installs.recordSubscription('gid://shopify/AppSubscription/3', OTHER, 'scale', T0 + 3000);
        expect(await installs.subscriptionsOf(STORE)).toEqual([
          { subscriptionId: 'gid://shopify/AppSubscription/2', plan: 'growth', createdAt: T0 + 1000 },
          { subscriptionId: 'gid://shopify/AppSubscription/1', plan: 'starter', createdAt: T0 },
        ]);
        expect(await installs.subscriptionsOf('st_none')).toEqual([]);
      });
    });

    it("sets a store's plan and billing only while they are as read and the store is (un)installed as said, writing nothing else", async () => {
      await withRepo(backend.open, async (repo) => {
        const installs = repo.installs;
        const before = (await repo.getStore(STORE))!;
        const free = { plan: before.plan, billingStatus: before.billingStatus };
        expect(await installs.setBilling(STORE, free, { plan: 'growth', billingStatus: 'active' }, T0 + 1)).toBe(true);
        // A reading made before that change landed: refused.
        expect(await installs.setBilling(STORE, free, { plan: 'free', billingStatus: 'cancelled' }, T0 + 2)).toBe(false);
        expect(await repo.getStore(STORE)).toEqual({ ...before, plan: 'growth', billingStatus: 'active', updatedAt: T0 + 1 });
        const growth = { plan: 'growth', billingStatus: 'active' };
        expect(await installs.setBilling(STORE, growth, free, T0 + 3, false)).toBe(false); // installed: not for an uninstall
        await repo.updateStore({ ...(await repo.getStore(STORE))!, uninstalledAt: T0 + 4 });
        expect(await installs.setBilling(STORE, growth, free, T0 + 5)).toBe(false); // uninstalled: not for a subscription
        expect(await installs.setBilling(STORE, growth, { plan: 'free', billingStatus: 'cancelled' }, T0 + 6, false)).toBe(true);
        expect((await repo.getStore(OTHER))!.plan).toBe(before.plan);
      });
    });
  });

  describe(`erasure storage (${backend.name})`, () => {
    it('erases the bodies of the events named, of that store only, and keeps every row; a second erase changes nothing', async () => {
      await withRepo(backend.open, async (repo) => {
        const ev = (n: number, storeId = STORE) => withBody(eventRow({ id: `evt_00000000${n}`, storeId, receivedAt: T0 + n }));
        // Stored in this order, the bodies erased below hold the highest keys: SQLite hands them out again next.
        await repo.commitIngest([ev(4, OTHER), ev(3), ev(1), ev(2)], []);
        const redaction = repo.redaction;
        expect(await redaction.retainedEvents(STORE, '', 10)).toEqual(['evt_000000001', 'evt_000000002', 'evt_000000003']);
        expect(await redaction.retainedEvents(STORE, 'evt_000000001', 1)).toEqual(['evt_000000002']);

        // An id of another store is left alone even when named.
        expect(await redaction.eraseBodies(STORE, ['evt_000000001', 'evt_000000002', 'evt_000000004'])).toBe(2);
        expect(await redaction.eraseBodies(STORE, ['evt_000000001', 'evt_000000002'])).toBe(0);
        expect(await repo.getEventBody('evt_000000001')).toBeNull();
        expect(await repo.getEventBody('evt_000000002')).toBeNull();
        expect(new TextDecoder().decode((await repo.getEventBody('evt_000000003'))!)).toBe('{"body":"evt_000000003"}');
        expect(await repo.getEventBody('evt_000000004')).not.toBeNull();
        expect((await repo.getEvent(STORE, 'evt_000000001'))!.bodyRetention).toBe('expired');
        expect((await repo.getEvent(STORE, 'evt_000000003'))!.bodyRetention).toBe('retained');
        expect((await repo.getEvent(OTHER, 'evt_000000004'))!.bodyRetention).toBe('retained');
        expect(await redaction.retainedEvents(STORE, '', 10)).toEqual(['evt_000000003']);

        // Bodies stored after (SQLite may reuse the erased keys) never lead back to an erased event.
        await repo.commitIngest([ev(5), ev(6)], []);
        expect(await repo.getEventBody('evt_000000001')).toBeNull();
        expect(await repo.getEventBody('evt_000000002')).toBeNull();
        expect(new TextDecoder().decode((await repo.getEventBody('evt_000000006'))!)).toBe('{"body":"evt_000000006"}');
        expect(await redaction.eraseBodies(STORE, [])).toBe(0);
      });
    });

    it("finds a store's events by resource id with the endpoint's trigger at the event's config version", async () => {
      await withRepo(backend.open, async (repo) => {
        const customer = endpoint('ep_customer', STORE, 'customer');
        await repo.insertEndpoint(customer, { triggerVariant: 'customer' });
        await repo.insertEndpoint(endpoint('ep_order', STORE, 'order'), { triggerVariant: 'order' });
        await repo.insertEndpoint(endpoint('ep_other', OTHER, 'customer'), { triggerVariant: 'customer' });
        // The customer endpoint became a product endpoint at version 2: its later events are about products.
        await repo.updateEndpoint({ ...customer, triggerVariant: 'product', configVersion: 2 }, { triggerVariant: 'product' });
        const ev = (n: number, endpointId: string, resourceId: string, fields: Partial<EventRow> = {}) =>
          withBody(
            eventRow({ id: `evt_00000000${n}`, storeId: endpointId === 'ep_other' ? OTHER : STORE, endpointId, resourceId, receivedAt: T0 + n, ...fields }),
          );
        await repo.commitIngest(
          [
            ev(1, 'ep_customer', '207119551'),
            ev(2, 'ep_order', '450789469'),
            ev(3, 'ep_customer', '207119551', { configVersion: 2 }),
            ev(4, 'ep_order', '1'),
            ev(5, 'ep_other', '207119551'),
            ev(6, 'ep_gone', '207119551'),
          ],
          [],
        );
        const found = await repo.redaction.eventsByResource(STORE, ['207119551', '450789469']);
        expect(found.map((e) => [e.id, e.endpointId, e.resourceId, e.config && JSON.parse(e.config).triggerVariant])).toEqual([
          ['evt_000000001', 'ep_customer', '207119551', 'customer'],
          ['evt_000000002', 'ep_order', '450789469', 'order'],
          ['evt_000000003', 'ep_customer', '207119551', 'product'],
          ['evt_000000006', 'ep_gone', '207119551', null],
        ]);
        expect(found[0]).toMatchObject({ outcome: 'queued', bodyRetention: 'retained', receivedAt: T0 + 1 });
        expect(await repo.redaction.eventsByResource(STORE, [])).toEqual([]);
      });
    });

    it("deletes a store's records, intents and stored responses of the kinds named, and no other store's", async () => {
      await withRepo(backend.open, async (repo) => {
        for (const [id, storeId, kind] of [
          ['sup_1', STORE, 'support_request'],
          ['diag_1', STORE, 'diagnostics_share'],
          ['sup_2', OTHER, 'support_request'],
          ['bill_1', STORE, 'billing'],
        ] as const) {
          await repo.insertRecord({ id, storeId, kind, body: '{"summary":"Jane called"}', createdAt: T0, expiresAt: null });
        }
        const intent = (id: string, storeId: string, kind: string) => ({
          id,
          storeId,
          grantId: 'gr_1',
          kind,
          operationId: 'op',
          targetId: null,
          state: 'executed',
          input: '{"reason":"Jane asked"}',
          preview: '{}',
          confirmationHash: null,
          confirmationExpiresAt: null,
          result: null,
          refusal: null,
          basis: null,
          executor: null,
          executeKey: null,
          createdAt: T0,
          updatedAt: T0,
        });
        await repo.insertIntent(intent('int_1', STORE, 'replay'));
        await repo.insertIntent(intent('int_2', STORE, 'endpoint_edit'));
        await repo.insertIntent(intent('int_3', OTHER, 'replay'));
        await repo.putIdempotency({ storeId: STORE, key: 'k1', operationId: 'op', requestHash: 'h', status: 200, response: '{}', createdAt: T0, owner: null });
        await repo.putIdempotency({ storeId: OTHER, key: 'k1', operationId: 'op', requestHash: 'h', status: 200, response: '{}', createdAt: T0, owner: null });
        const redaction = repo.redaction;
        expect(await redaction.deleteRecords(STORE, ['support_request', 'diagnostics_share'])).toBe(2);
        expect(await redaction.deleteIntents(STORE, ['replay'])).toBe(1);
        expect(await redaction.deleteIdempotencyKeys(STORE)).toBe(1);
        expect(await redaction.deleteRecords(STORE, [])).toBe(0);
        expect(await repo.getRecord(STORE, 'support_request', 'sup_1')).toBeNull();
        expect(await repo.getRecord(OTHER, 'support_request', 'sup_2')).not.toBeNull();
        expect(await repo.getRecord(STORE, 'billing', 'bill_1')).not.toBeNull();
        expect(await repo.getIntent(STORE, 'int_1')).toBeNull();
        expect(await repo.getIntent(STORE, 'int_2')).not.toBeNull();
        expect(await repo.getIntent(OTHER, 'int_3')).not.toBeNull();
        expect(await repo.getIdempotency(OTHER, 'k1', 0)).not.toBeNull();
      });
    });
  });
}
