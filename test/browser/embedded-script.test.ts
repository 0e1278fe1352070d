/**
 * The embedded layout's one script (src/seat/layout.ts), in Chromium: a navigation inside the admin's frame carries
 * no Authorization header, so every link and form of /app carries an ID token — a fresh one from App Bridge, or the
 * first load's while the CDN is blocked. Pages' forms name their fields `action` (and might name one `submit`),
 * which a form element exposes as properties over its own `action` and `submit()`; the script must not read those.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { renderLayout, seatHeaders } from '../../src/seat/layout.ts';
import type { SeatContext } from '../../src/seat/types.ts';
import { type BrowserFixture, launchBrowser, loopbackServer, nextFrames, type Tab } from '../fixtures/browser.ts';
import { storeRow } from '../helpers.ts';

const SHOP = 'script-store.myshopify.com';
const ADMIN_QUERY = `embedded=1&shop=${SHOP}&host=YWRtaW4uc2hvcGlmeS5jb20vc3RvcmUvc2NyaXB0LXN0b3Jl`;

/** What reached the server after the page's start: method, path, query and form fields. */
const seen: { method: string; path: string; query: Record<string, string>; form: Record<string, string> }[] = [];

function layout(url: URL, main: string): Response {
  const nonce = `n${Math.random().toString(36).slice(2)}`;
  const ctx = {
    url,
    base: '/app',
    embedded: true,
    nonce,
    csrf: null,
    human: { face: 'embedded', store: storeRow({ shopDomain: SHOP }), actor: 'shopify-staff:1', sessionId: 'sid-1' },
  } as unknown as SeatContext;
  const body = renderLayout({ ctx, title: 'Script', main, nav: [{ path: '/next', title: 'Next' }], clientId: 'script-client' });
  return new Response(body, { headers: seatHeaders({ nonce, embedded: true, embeddedShop: SHOP }) });
}

const FORMS = `<section><h2>Forms</h2>
<form method="post" action="/app/endpoints"><input type="hidden" name="action" value="create"><input type="hidden" name="kind" value="edit"><button type="submit">Create</button></form>
<form method="post" action="/app/recovery"><input type="hidden" name="submit" value="yes"><button type="submit" name="stage" value="confirm">Confirm</button></form>
</section>`;

const server = loopbackServer();
server.use(async (req) => {
  const url = new URL(req.url);
  const form = req.method === 'POST' ? Object.fromEntries(new URLSearchParams(await req.text())) : {};
  if (url.pathname.startsWith('/app/') && url.pathname !== '/app/start')
    seen.push({ method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), form });
  if (url.pathname === '/app/start') return layout(url, FORMS);
  return layout(url, '<section><h2>Done</h2><p>Answered.</p></section>');
});

let browser: BrowserFixture;
let tab: Tab;
let minted = 0;
beforeAll(async () => {
  browser = await launchBrowser();
  tab = await browser.tab({ idToken: () => `fresh-${++minted}` });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server.stop();
});

async function start(): Promise<void> {
  seen.length = 0;
  tab.clear();
  await tab.page.goto(`${server.url}/app/start?${ADMIN_QUERY}&id_token=first-load`, { waitUntil: 'load' });
}

async function submit(button: string): Promise<void> {
  const [b] = await tab.page.$$(`xpath/.//button[normalize-space(.)="${button}"]`);
  // A script that throws never navigates: the wait ends at 10 s and the test fails on what reached the server.
  await Promise.all([tab.page.waitForNavigation({ waitUntil: 'load', timeout: 10_000 }).catch(() => null), (b as { click(): Promise<void> }).click()]);
  await nextFrames(tab.page);
}

describe('the embedded script', () => {
  it("posts a form with a field named action to the form's own action, with a fresh ID token and the admin's query", async () => {
    tab.cdn = 'stand-in';
    await start();
    await submit('Create');
    expect(tab.spy.errors).toEqual([]);
    expect(seen).toHaveLength(1);
    const post = seen[0]!;
    expect(post).toMatchObject({ method: 'POST', path: '/app/endpoints', form: { action: 'create', kind: 'edit' } });
    expect(post.form.id_token).toMatch(/^fresh-\d+$/);
    expect(post.query).toMatchObject({ embedded: '1', shop: SHOP });
  });

  it('posts a form with a field named submit, and the button that was pressed', async () => {
    tab.cdn = 'stand-in';
    await start();
    await submit('Confirm');
    expect(tab.spy.errors).toEqual([]);
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/app/recovery', form: { submit: 'yes', stage: 'confirm' } });
  });

  it('with the CDN blocked, a link on the page a form answered still carries the first load’s token', async () => {
    tab.cdn = 'blocked';
    await start();
    await submit('Create');
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/app/endpoints', form: { action: 'create', id_token: 'first-load' } });
    const [next] = await tab.page.$$('xpath/.//nav//a[normalize-space(.)="Next"]');
    await Promise.all([tab.page.waitForNavigation({ waitUntil: 'load', timeout: 10_000 }).catch(() => null), (next as { click(): Promise<void> }).click()]);
    expect(seen[1]).toMatchObject({ method: 'GET', path: '/app/next', query: { id_token: 'first-load', shop: SHOP } });
    tab.cdn = 'stand-in';
  });
});
