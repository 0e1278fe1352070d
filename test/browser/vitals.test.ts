/**
 * Web Vitals of every page the seat registers (src/seat/pages/index.ts), and of the detail views of those that have
 * one, on both faces — embedded (ID token, App Bridge's stand-in) and console (a session from a sign-in link) —
 * measured in Chromium on loopback with 100,000 events in the store (seeded once through the inbound path's
 * commit): LCP ≤ 1.0 s, CLS ≤ 0.05 and INP ≤ 100 ms (a real click) on each, with no serious or critical axe
 * violation at that size. The figures are printed.
 */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { type BrowserFixture, launchBrowser, type Tab, type Vitals, vitals } from '../fixtures/browser.ts';
import { seedEvents } from '../fixtures/seed-events.ts';
import { rows, type TestEnv } from '../helpers.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { PAGES } from '../../src/seat/pages/index.ts';
import { issueSignInLink } from '../../src/seat/session.ts';
import { checkPage, embeddedWorld } from './_seat.ts';

setDefaultTimeout(120_000);

const EVENTS = 100_000;
const CLIENT = { clientId: 'vitals-app-client-0001', clientSecret: 'vitals-app-secret-canary-4e2a' };
const SHOP = 'vitals-store.myshopify.com';
const { fake, server, start } = embeddedWorld(CLIENT, SHOP);

let browser: BrowserFixture;
let tab: Tab;
let e: TestEnv;
const figures: Record<string, Vitals> = {};
/** Each page to measure: its name and its path under the face's base (`''` is Home). */
const pages: [string, string][] = [];

beforeAll(async () => {
  e = await start();
  browser = await launchBrowser();
  tab = await browser.tab({ cdn: 'stand-in', idToken: () => fake.idToken({ sub: '5' }) });
  await tab.page.goto(fake.embeddedAppUrl(`${server.url}/app`, { sub: '5' }), { waitUntil: 'load' });
  const store = (await e.core.repo.getStoreByShop(SHOP))!;
  const { token, grantId } = await issueGrant(e.core, { shopDomain: SHOP, tier: 'admin_assistant', ttlMs: 86_400_000, label: 'vitals' });
  const made = await fetch(`${server.url}/agent/v1/endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Orders', triggerVariant: 'order', resourceIdPath: 'order.id' }),
  });
  const endpointId = ((await made.json()) as any).data.endpoint.id as string;
  await seedEvents(e.repo, { storeId: store.id, endpointId, n: EVENTS, until: e.clock.now() });
  const [newest] = await rows(e, 'SELECT id FROM events WHERE store_id = ? ORDER BY id DESC LIMIT 1', store.id);
  // The detail view of each list page that has one.
  const details: Record<string, [string, string][]> = {
    '/events': [
      ['Events search', '/events?externalEventId=seed-99999'],
      ['Event', `/events?event=${newest!.id}`],
    ],
    '/endpoints': [['Endpoint', `/endpoints?id=${endpointId}`]],
    '/agents': [['Grant', `/agents?grant=${grantId}`]],
  };
  for (const p of PAGES) pages.push([p.title, p.path], ...(details[p.path] ?? []));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server.stop();
  const lines = Object.entries(figures).map(
    ([name, v]) => `${name.padEnd(24)} LCP ${String(v.lcp).padStart(4)} ms  CLS ${v.cls.toFixed(3)}  INP ${String(v.inp).padStart(3)} ms`,
  );
  console.log(`Web Vitals of the seat, ${EVENTS.toLocaleString('en')} events in the store:\n${lines.join('\n')}`);
});

describe(`every page with ${EVENTS.toLocaleString('en')} events in the store`, () => {
  it('has them (seeded through the inbound commit)', async () => {
    expect(await rows(e, 'SELECT count(*) AS n FROM events')).toEqual([{ n: EVENTS }]);
  });

  it('answers within LCP 1.0 s, CLS 0.05 and INP 100 ms (a real click), with no serious axe violation: embedded', async () => {
    for (const [name, path] of pages) {
      e.clock.advance(2_500);
      const url = new URL(`${server.url}/app${path}`);
      url.searchParams.set('shop', SHOP);
      url.searchParams.set('id_token', fake.idToken({ sub: '5' }));
      await measure(`embedded ${name}`, url.toString());
    }
  });

  it('answers within LCP 1.0 s, CLS 0.05 and INP 100 ms (a real click), with no serious axe violation: console', async () => {
    const link = await issueSignInLink(e.core, SHOP, 'Vitals Person');
    await tab.page.goto(link.url, { waitUntil: 'load' });
    for (const [name, path] of pages) {
      e.clock.advance(2_500);
      await measure(`console ${name}`, `${server.url}/console${path}`);
    }
  });
});

async function measure(name: string, url: string): Promise<void> {
  tab.clear();
  const res = await tab.page.goto(url, { waitUntil: 'load' });
  expect({ name, status: res?.status() }).toEqual({ name, status: 200 });
  const v = await vitals(tab.page, 'main h1');
  figures[name] = v;
  await checkPage(tab, `${name} (${EVENTS} events)`);
  expect({ name, lcpOk: v.lcp <= 1000, clsOk: v.cls <= 0.05, inpOk: v.inp <= 100, v }).toMatchObject({ name, lcpOk: true, clsOk: true, inpOk: true });
}
