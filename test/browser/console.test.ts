/**
 * The self-hoster's journey, in Chromium, against a real `hookrelay serve` handing off to the fake Shopify:
 * `hookrelay console` prints a single-use sign-in link; it opens the console (and works once); Home shows the setup
 * state; an endpoint is created (its secret shown once); a signed event arrives and shows in Events; the fake
 * refuses it (failed); Recovery replays it in bulk (preview → confirm) and it is delivered; an agent grant is
 * issued, used and revoked; Audit shows the human's and the agent's rows; sign out ends the session. Once with the
 * CDN stand-ins answering (the console asks for nothing from it), once with the CDN blocked. Every page visited: no
 * serious or critical axe violation, nothing ran that the page did not send, no request left loopback.
 */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { hmacHex } from '../../src/lib/crypto.ts';
import { closedPort } from '../cli/harness.ts';
import { type BrowserFixture, type CdnMode, launchBrowser, type Tab } from '../fixtures/browser.ts';
import { b, fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { until } from '../fixtures/handoff.ts';
import { runToExit, serveScratch, spawnServe } from '../fixtures/serve-process.ts';
import { fill, follow, mainText, navigating, press, rowText } from './_moves.ts';
import { checkPage } from './_seat.ts';

setDefaultTimeout(120_000);

/** Serious and critical axe violations per page visited (the checks fail on any; the report names the pages). */
const axeReport = new Map<string, number>();

const SHOP = 'console-store.myshopify.com';
const TOKEN = 'shpat_console_browser_static_token';
const fake = fakeShopifyForFile({ token: TOKEN, shop: { domain: SHOP } });
const scratch = serveScratch('browser-console');

let browser: BrowserFixture;
beforeAll(async () => {
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  console.log(`axe serious+critical per page (console): ${JSON.stringify(Object.fromEntries(axeReport))}`);
});

async function journey(cdn: CdnMode): Promise<void> {
  const dir = scratch.dir(cdn);
  const port = closedPort();
  const url = `http://127.0.0.1:${port}`;
  const env = { HOOKRELAY_PUBLIC_URL: url, HOOKRELAY_SHOPIFY_ADMIN_URL: fake.url, SHOPIFY_ADMIN_TOKEN: TOKEN };
  const run = async (args: string[]) => {
    const r = await runToExit([...args, '--data-dir', 'data'], dir, 30_000, env);
    if (r.code !== 0) throw new Error(`hookrelay ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.json;
  };
  await run(['init', '--shop', SHOP]);
  await run(['store', 'set', '--shop', SHOP, '--destination', 'shopify', '--admin-token-env', 'SHOPIFY_ADMIN_TOKEN']);
  const serve = await spawnServe(`${dir}/data`, port, { env });
  scratch.running.push(serve);
  const tab: Tab = await browser.tab({ cdn });
  const { page } = tab;
  /** The checks of every visit; a screenshot (HOOKRELAY_SCREENSHOTS=1) of Home only: the other pages are the embedded ones'. */
  const check = (name: string, file: string) =>
    checkPage(tab, name, { ...(cdn === 'stand-in' && file === 'home' ? { screenshot: 'console-home' } : {}), onAxe: (n) => axeReport.set(name, n) });
  try {
    // The sign-in link from the terminal: it opens the console once.
    const link = (await run(['console', '--actor', 'Jane Ops'])).url as string;
    expect(link).toStartWith(`${url}/console/sign-in?token=`);
    await page.goto(link, { waitUntil: 'load' });
    await page.waitForSelector('nav a[href="/console/events"]');
    expect(await mainText(page)).toContain('Setup checklist');
    expect(tab.cdnRequests).toEqual([]);
    await check('Home', 'home');
    const again = await browser.tab({ cdn });
    expect((await again.page.goto(link, { waitUntil: 'load' }))?.status()).toBe(401);
    await again.page.close();

    // Endpoints: create one; the secret is on the answer page once.
    await follow(page, 'Endpoints', 'nav');
    await check('Endpoints', 'endpoints');
    await follow(page, 'Create an endpoint', 'main');
    await fill(page, 'Name', 'Warehouse orders');
    await fill(page, 'Flow trigger', 'order');
    await fill(page, 'Resource id path', 'order.id');
    await press(page, 'Create endpoint');
    const secret = await page.$eval('main input[readonly]', (i) => (i as unknown as { value: string }).value);
    const hook = await page.$eval('main code', (c) => c.textContent ?? '');
    expect(hook).toStartWith(`${url}/hooks/ep_`);
    await check('Endpoint created', 'endpoint-created');
    await follow(page, 'Endpoints', 'nav');
    expect(await page.content()).not.toContain(secret);

    // A signed event; the fake refuses it: failed.
    fake.script(b.userErrors({ field: ['payload'], message: 'Workflow refused the order' }));
    const ext = `console-${cdn}-1`;
    const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: ext, order: { id: 4502 } });
    const sent = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) }, body });
    expect(sent.status).toBe(202);
    await until(() => fake.requests.some((r) => r.behaviour === 'userErrors'));
    await follow(page, 'Events', 'nav');
    await until(async () => {
      await page.reload({ waitUntil: 'load' });
      return (await rowText(page, ext)).includes('failed');
    });
    await check('Events', 'events');

    // Recovery: bulk replay, previewed, confirmed, delivered.
    await follow(page, 'Recovery', 'nav');
    await check('Recovery', 'recovery');
    await press(page, 'Preview the bulk replay');
    await check('Recovery preview', 'recovery-preview');
    await press(page, /^Replay 1 events?$/);
    await until(() => fake.requests.at(-1)?.behaviour === 'ok');
    await follow(page, 'Events', 'nav');
    await until(async () => {
      await page.reload({ waitUntil: 'load' });
      return (await rowText(page, ext)).includes('delivered');
    });

    // Agents: issue, use, revoke.
    await follow(page, 'Agents', 'nav');
    await check('Agents', 'agents');
    await fill(page, 'Label: who or what it is for', `night agent (${cdn})`);
    await press(page, 'Issue grant');
    const token = await page.$eval('main input[readonly]', (i) => (i as unknown as { value: string }).value);
    await check('Grant issued', 'grant-issued');
    expect((await fetch(`${url}/agent/v1/setup-state`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    await follow(page, 'Agents', 'nav');
    await press(page, 'Revoke');
    expect((await fetch(`${url}/agent/v1/setup-state`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);

    // Audit: the human's rows and the agent's.
    await follow(page, 'Audit', 'nav');
    const audit = await mainText(page);
    expect(audit).toContain('Jane Ops');
    expect(audit).toContain(`night agent (${cdn})`);
    await check('Audit', 'audit');
    await follow(page, 'Plan', 'nav');
    await check('Plan', 'plan');

    // Sign out: the session ends.
    await press(page, 'Sign out');
    await navigating(page, () => page.goto(`${url}/console`), 401);
  } finally {
    await page.close();
  }
}

describe('the self-hoster in the console', () => {
  it('signs in with hookrelay console, creates an endpoint, sees a failed event, replays it in bulk, issues and revokes a grant, reads the audit, signs out', async () => {
    await journey('stand-in');
  });

  it('does the same with the CDN blocked', async () => {
    await journey('blocked');
  });
});
