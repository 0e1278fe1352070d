/**
 * A store with events for the seat's page tests: a real app handing off to the fake Shopify, two endpoints (one
 * named with an XSS payload), events whose external ids are XSS payloads, some failed by Flow's userErrors.
 */
import { escapeHtml } from '../../src/lib/web.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { b, type FakeShopify } from '../fixtures/fake-shopify.ts';
import { addGrant, addStore, createEndpoint, createTestEnv, orderEvent, sendHook, type TestEnv } from '../helpers.ts';
import type { InitStoreInput } from '../../src/ops/stores.ts';

export const SHOP_TOKEN = 'shpat_seat_pages_test';

/** Payloads a sender or an agent may plant; each must come out of a page as text, never as markup. */
export const XSS = {
  endpointName: '<script>window.__pwned=1</script>ep',
  externalId: '"><img src=x onerror=alert(1)>',
  externalId2: "'><svg onload=alert(2)>",
  note: '<iframe src=javascript:alert(3)></iframe>',
};

/** Every payload's raw markup is absent from `page`, and its escaped text is there when `present` says so. */
export function expectInert(page: string, present: string[] = []): void {
  for (const p of Object.values(XSS)) {
    if (page.includes(p)) throw new Error(`raw payload in the page: ${p}`);
  }
  for (const p of present) {
    if (!page.includes(escapeHtml(p))) throw new Error(`escaped payload missing from the page: ${p}`);
  }
  // No element a payload could have opened, whatever the escaping of its quotes.
  if (/<(script|img|svg|iframe)\b/i.test(page)) throw new Error('a script, img, svg or iframe element is in the page');
}

export interface World {
  env: TestEnv;
  token: string;
  orders: { endpoint: { id: string; auth: { headerName: string; mode: string } }; secret: string };
  customers: { endpoint: { id: string; auth: { headerName: string; mode: string } }; secret: string };
  worker: HandoffWorker;
  /** Sends an event on `ep` with external id `ext`; Flow refuses it when `fail`. Returns its id once handed off. */
  send(ext: string, opts?: { fail?: boolean; ep?: World['orders']; canary?: string }): Promise<string>;
}

export async function world(fake: FakeShopify, store: Partial<InitStoreInput> = {}, vars: Record<string, string> = {}): Promise<World> {
  const all: Record<string, string> = { SHOP_TOKEN, ...vars };
  const env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => all[n] });
  await addStore(env, { destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN', ...store });
  const token = await addGrant(env, 'admin_assistant');
  const orders = await createEndpoint(env, token, { name: XSS.endpointName, triggerVariant: 'order', resourceIdPath: 'order.id' });
  const customers = await createEndpoint(env, token, { name: 'Customer sync', triggerVariant: 'customer', resourceIdPath: 'order.id' });
  const worker = new HandoffWorker(env.core);
  return {
    env,
    token,
    orders,
    customers,
    worker,
    async send(ext, opts = {}) {
      const ep = opts.ep ?? orders;
      if (opts.fail) fake.script(b.userErrors({ field: null, message: 'Flow refused it' }));
      const body = opts.canary ? JSON.stringify({ ...JSON.parse(orderEvent(ext)), note_in_body: opts.canary }) : orderEvent(ext);
      const sent = await sendHook(env, ep.endpoint, ep.secret, body);
      if (sent.status !== 202) throw new Error(`send: ${sent.status} ${JSON.stringify(sent.json)}`);
      await worker.drain();
      return sent.json.eventId as string;
    },
  };
}
