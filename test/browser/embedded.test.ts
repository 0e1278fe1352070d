/**
 * The merchant's journey in the Shopify admin, in Chromium, on the fake Shopify: the admin's first load installs
 * the app by token exchange and Home shows the setup state; an endpoint is created (its secret shown once); a signed
 * event arrives and shows in Events; the fake refuses it (failed); Recovery replays it in bulk (preview → confirm)
 * and it is delivered; an agent grant is issued, used and revoked; Audit shows the human's and the agent's rows.
 * Once with the CDN's App Bridge and Polaris answered by stand-ins, once with the CDN blocked (the first load's ID
 * token carries the pages). Every page visited: no serious or critical axe violation, nothing ran that the page did
 * not send, no request left loopback.
 */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { hmacHex } from '../../src/lib/crypto.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { type BrowserFixture, type CdnMode, launchBrowser, type Tab } from '../fixtures/browser.ts';
import { b } from '../fixtures/fake-shopify.ts';
import { rows } from '../helpers.ts';
import { fill, follow, mainText, press, rowText } from './_moves.ts';
import { checkPage, embeddedWorld } from './_seat.ts';

setDefaultTimeout(120_000);

/** Serious and critical axe violations per page visited (the checks fail on any; the report names the pages). */
const axeReport = new Map<string, number>();

const CLIENT = { clientId: 'browser-app-client-0001', clientSecret: 'browser-app-secret-canary-5c1e' };
const SHOP = 'browser-store.myshopify.com';
const { fake, server, start } = embeddedWorld(CLIENT, SHOP);

let browser: BrowserFixture;
beforeAll(async () => {
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server.stop();
  console.log(`axe serious+critical per page (embedded): ${JSON.stringify(Object.fromEntries(axeReport))}`);
});

async function journey(cdn: CdnMode): Promise<void> {
  const e = await start();
  const worker = new HandoffWorker(e.core);
  const tab: Tab = await browser.tab({ cdn, idToken: () => fake.idToken({ sub: '77' }) });
  const { page } = tab;
  // Every HTML answer of /app the browser got: its frame-ancestors (per shop, never a wildcard or missing).
  const framing = new Set<string>();
  page.on('response', (r) => {
    if (r.request().resourceType() !== 'document' || !new URL(r.url()).pathname.startsWith('/app')) return;
    const csp = r.headers()['content-security-policy'] ?? '';
    framing.add(
      csp
        .split(';')
        .map((d) => d.trim())
        .find((d) => d.startsWith('frame-ancestors')) ?? 'none',
    );
  });
  /** The checks of every visit; the screenshot (HOOKRELAY_SCREENSHOTS=1) from the run with the CDN stand-ins. */
  const check = (name: string, file: string) =>
    checkPage(tab, name, { ...(cdn === 'stand-in' ? { screenshot: `embedded-${file}` } : {}), onAxe: (n) => axeReport.set(name, n) });
  try {
    // The admin's first load: token exchange, the store made, Home in place.
    await page.goto(fake.embeddedAppUrl(`${server.url}/app`, { sub: '77' }), { waitUntil: 'load' });
    expect(fake.tokenRequests.filter((r) => r.grantType === 'token_exchange' && r.outcome === 'issued').length).toBeGreaterThanOrEqual(1);
    const store = (await e.core.repo.getStoreByShop(SHOP))!;
    expect(store).toMatchObject({ shopDomain: SHOP, uninstalledAt: null });
    expect(await mainText(page)).toContain('Setup checklist');
    expect(tab.cdnRequests.sort()).toEqual(
      cdn === 'stand-in'
        ? ['answered /shopifycloud/app-bridge.js', 'answered /shopifycloud/polaris.js']
        : ['blocked /shopifycloud/app-bridge.js', 'blocked /shopifycloud/polaris.js'],
    );
    await check('Home', 'home');

    // Endpoints: create one; the secret is on the answer page once.
    await follow(page, 'Endpoints', 'nav');
    await check('Endpoints', 'endpoints');
    await follow(page, 'Create an endpoint', 'main');
    await fill(page, 'Name', 'Storefront orders');
    await fill(page, 'Flow trigger', 'order');
    await fill(page, 'Resource id path', 'order.id');
    await press(page, 'Create endpoint');
    expect(await mainText(page)).toContain('Endpoint created');
    const secret = await page.$eval('main input[readonly]', (i) => (i as unknown as { value: string }).value);
    expect(secret.length).toBeGreaterThan(20);
    await check('Endpoint created', 'endpoint-created');
    const [endpoint] = await e.core.repo.listEndpoints(store.id);
    expect(endpoint).toBeDefined();
    await follow(page, 'Endpoints', 'nav');
    expect(await page.content()).not.toContain(secret);

    // A signed event arrives; the fake refuses it: failed, and Events shows it.
    fake.script(b.userErrors({ field: ['payload'], message: 'Workflow refused the order' }));
    const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: `browser-${cdn}-1`, order: { id: 4501 } });
    const sent = await fetch(`${server.url}/hooks/${endpoint!.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [endpoint!.headerName]: hmacHex(secret, body) },
      body,
    });
    expect(sent.status).toBe(202);
    await worker.drain();
    await follow(page, 'Events', 'nav');
    expect(await rowText(page, `browser-${cdn}-1`)).toContain('failed');
    await check('Events', 'events');

    // Recovery: a bulk replay of the failed events, previewed, confirmed, delivered.
    await follow(page, 'Recovery', 'nav');
    await check('Recovery', 'recovery');
    await press(page, 'Preview the bulk replay');
    await check('Recovery preview', 'recovery-preview');
    await press(page, /^Replay 1 events?$/);
    await worker.drain();
    expect(fake.requests.at(-1)?.behaviour).toBe('ok');
    await follow(page, 'Events', 'nav');
    expect(await rowText(page, `browser-${cdn}-1`)).toContain('delivered');
    expect(await rows(e, 'SELECT outcome FROM events WHERE external_event_id = ?', `browser-${cdn}-1`)).toEqual([{ outcome: 'delivered' }]);

    // Agents: a grant issued (its token once), used by the agent, revoked.
    await follow(page, 'Agents', 'nav');
    await check('Agents', 'agents');
    await fill(page, 'Label: who or what it is for', `support agent (${cdn})`);
    await press(page, 'Issue grant');
    const token = await page.$eval('main input[readonly]', (i) => (i as unknown as { value: string }).value);
    expect(token.length).toBeGreaterThan(20);
    await check('Grant issued', 'grant-issued');
    const read = await fetch(`${server.url}/agent/v1/setup-state`, { headers: { authorization: `Bearer ${token}` } });
    expect(read.status).toBe(200);
    await follow(page, 'Agents', 'nav');
    await press(page, 'Revoke');
    const after = await fetch(`${server.url}/agent/v1/setup-state`, { headers: { authorization: `Bearer ${token}` } });
    expect(after.status).toBe(401);

    // Audit: the human's rows and the agent's.
    await follow(page, 'Audit', 'nav');
    const audit = await mainText(page);
    expect(audit).toContain('shopify-staff:77');
    expect(audit).toContain(`support agent (${cdn})`);
    await check('Audit', 'audit');
    const kinds = await rows(e, 'SELECT DISTINCT actor_kind FROM audit_log WHERE store_id = ?', store.id);
    expect(kinds.map((r) => r.actor_kind).sort()).toEqual(['agent', 'human']);

    await follow(page, 'Plan', 'nav');
    await check('Plan', 'plan');
    expect([...framing]).toEqual([`frame-ancestors https://${SHOP} https://admin.shopify.com`]);
  } finally {
    await page.close();
  }
}

describe('the merchant in the Shopify admin', () => {
  it('installs, creates an endpoint, sees a failed event, replays it in bulk, issues and revokes a grant, reads the audit (CDN stand-ins)', async () => {
    await journey('stand-in');
  });

  it('does the same with the CDN blocked: the pages are plain HTML that work without App Bridge and Polaris', async () => {
    await journey('blocked');
  });
});
