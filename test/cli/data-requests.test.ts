/**
 * `hookrelay requests list --kind data_request`: the customer data requests Shopify sent (customers/data_request,
 * which the operator must answer within 30 days) are listed with the date they are due by, and shown whole by
 * `requests show`, without an SQL prompt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openCore } from '../../src/boot.ts';
import { CUSTOMER_DATA_REQUEST } from '../../src/platform/shopify/webhook-handler.ts';
import { initStore } from '../../src/ops/stores.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';

const box = adminBox('hookrelay-data-requests-');
const cwd = box.dir('work');
const dir = join(box.root, 'data');
afterAll(() => rmSync(box.root, { recursive: true, force: true }));

const ID = 'cdr_0123456789abcdef0123456789';
const REQUESTED_AT = '2026-06-01T09:30:00.000Z';
/** A record as the customers/data_request handler keeps it: ids and counts, never an email, a phone or a body. */
const BODY = {
  dataRequestId: '9999',
  customerId: '207119551',
  ordersRequested: ['450789469'],
  webhookId: 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
  requestedAt: REQUESTED_AT,
  eventCount: 2,
  bodiesRetained: 1,
  events: [],
  eventsTruncated: false,
  holds: 'hookrelay holds, per event: its receipt.',
};

beforeAll(async () => {
  const core = await openCore({ dataDir: dir });
  try {
    const { store } = await initStore(core, { shopDomain: 'a.myshopify.com' });
    const at = Date.parse(REQUESTED_AT) + 5_000;
    await core.repo.insertRecord({ id: ID, storeId: store.storeId, kind: CUSTOMER_DATA_REQUEST, body: JSON.stringify(BODY), createdAt: at, expiresAt: null });
  } finally {
    await core.repo.close();
  }
}, SPAWN_TIMEOUT_MS);

const run = (...args: string[]) => admin(box, cwd, [...args, '--data-dir', dir]);

describe('customer data requests in hookrelay requests', () => {
  it(
    'are listed by --kind data_request and among all kinds, with the date they are due by (30 days after the request)',
    () => {
      const only = run('requests', 'list', '--kind', 'data_request');
      expect(only.code).toBe(0);
      expect(only.json.requests).toEqual([
        {
          id: ID,
          kind: 'data_request',
          shop: 'a.myshopify.com',
          createdAt: '2026-06-01T09:30:05.000Z',
          expiresAt: null,
          urgency: null,
          dueBy: '2026-07-01T09:30:00.000Z',
          summary: 'customer 207119551, orders 450789469: 2 events held, 1 bodies retained',
        },
      ]);
      expect(run('requests', 'list').json.requests.map((r: { id: string }) => r.id)).toContain(ID);
      expect(run('requests', 'list', '--kind', 'support').json.requests).toEqual([]);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'are shown whole by requests show',
    () => {
      const r = run('requests', 'show', ID);
      expect(r.code).toBe(0);
      expect(r.json.request).toMatchObject({ id: ID, kind: 'data_request', dueBy: '2026-07-01T09:30:00.000Z', body: BODY });
    },
    SPAWN_TIMEOUT_MS,
  );
});
