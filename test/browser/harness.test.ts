/**
 * The browser suite's own instruments, on pages made here: the CDN stand-ins (App Bridge's bearer on same-origin
 * fetches) and the blocked CDN, no request leaving loopback, axe-core finding what it must, the XSS spy seeing every
 * raw payload run (so an escaping slip in a real page cannot pass unseen) and none when escaped, and Web Vitals
 * read from a real click. Each check here fails if its instrument is blind.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { escapeHtml } from '../../src/lib/web.ts';
import { axeViolations, type BrowserFixture, launchBrowser, loopbackServer, nextFrames, type Tab, vitals } from '../fixtures/browser.ts';
import { liveMarkup, XSS_PAYLOADS } from '../fixtures/xss-payloads.ts';

const NONCE = 'n0nce-harness-1';
const CSP = `default-src 'self'; script-src 'nonce-${NONCE}' https://cdn.shopify.com; style-src 'self' 'unsafe-inline'; img-src 'self' data:`;

const head = (title: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title><meta name="shopify-api-key" content="client-harness">` +
  '<script src="https://cdn.shopify.com/shopifycloud/app-bridge.js"></script><script src="https://cdn.shopify.com/shopifycloud/polaris.js" type="module"></script></head>';

const planted = (encode: (s: string) => string) => XSS_PAYLOADS.map((p) => `<li title="${encode(p.text)}">${encode(p.text)}</li>`).join('');

const pages: Record<string, (url: URL, req: Request) => Response> = {
  '/good': () =>
    new Response(
      `${head('Good')}<body><main><h1>Events</h1><p>Ready.</p><button id="ask" type="button">Ask</button><output id="auth"></output></main>` +
        `<script nonce="${NONCE}">document.getElementById('ask').addEventListener('click', async () => { const r = await fetch('/echo'); document.getElementById('auth').textContent = await r.text(); });</script></body></html>`,
      { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP } },
    ),
  '/echo': (_u, req) => new Response(req.headers.get('authorization') ?? 'none'),
  '/bad': () =>
    new Response(`${head('Bad')}<body><main><h1>Bad</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><input type="text"></main></body></html>`, {
      headers: { 'content-type': 'text/html' },
    }),
  '/raw': () =>
    new Response(`${head('Raw')}<body><main><h1>Raw</h1><ul>${planted((s) => s)}</ul></main></body></html>`, { headers: { 'content-type': 'text/html' } }),
  '/raw-csp': () =>
    new Response(`${head('Raw under CSP')}<body><main><h1>Raw</h1><ul>${planted((s) => s)}</ul></main></body></html>`, {
      headers: { 'content-type': 'text/html', 'content-security-policy': CSP },
    }),
  '/escaped': () =>
    new Response(`${head('Escaped')}<body><main><h1>Escaped</h1><ul>${planted(escapeHtml)}</ul></main></body></html>`, {
      headers: { 'content-type': 'text/html', 'content-security-policy': CSP },
    }),
  '/offsite': () =>
    new Response(`${head('Offsite')}<body><main><h1>Offsite</h1><img alt="x" src="http://example.com/pixel.png"></main></body></html>`, {
      headers: { 'content-type': 'text/html' },
    }),
};

let browser: BrowserFixture;
let tab: Tab;
let minted = 0;
const server = loopbackServer();
server.use((req) => {
  const url = new URL(req.url);
  return pages[url.pathname]?.(url, req) ?? new Response('not found', { status: 404 });
});

beforeAll(async () => {
  browser = await launchBrowser();
  tab = await browser.tab({ idToken: () => `header.claims.${++minted}` });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server.stop();
});

describe('the CDN stand-ins and the network', () => {
  it("answers the two CDN scripts locally; App Bridge's stand-in puts the test's ID token on same-origin fetches", async () => {
    tab.clear();
    tab.cdn = 'stand-in';
    await tab.page.goto(`${server.url}/good`);
    expect(tab.cdnRequests.sort()).toEqual(['answered /shopifycloud/app-bridge.js', 'answered /shopifycloud/polaris.js']);
    expect(await tab.page.evaluate(() => (globalThis as unknown as { shopify: { config: { apiKey: string } } }).shopify.config.apiKey)).toBe('client-harness');
    await tab.page.click('#ask');
    await tab.page.waitForSelector('#auth:not(:empty)');
    expect(await tab.page.$eval('#auth', (e) => e.textContent)).toMatch(/^Bearer header\.claims\.\d+$/);
    // A fresh token on each call, as App Bridge gives.
    const [a, b] = await tab.page.evaluate(async () => {
      const s = (globalThis as unknown as { shopify: { idToken(): Promise<string> } }).shopify;
      return [await s.idToken(), await s.idToken()];
    });
    expect(a).not.toBe(b);
    expect(tab.spy).toEqual({ xss: [], dialogs: [], errors: [], csp: [] });
  });

  it('blocked: the CDN scripts are refused, no shopify global, and a fetch carries no bearer', async () => {
    tab.clear();
    tab.cdn = 'blocked';
    await tab.page.goto(`${server.url}/good`);
    expect(tab.cdnRequests.sort()).toEqual(['blocked /shopifycloud/app-bridge.js', 'blocked /shopifycloud/polaris.js']);
    expect(await tab.page.evaluate(() => 'shopify' in globalThis)).toBe(false);
    await tab.page.click('#ask');
    await tab.page.waitForSelector('#auth:not(:empty)');
    expect(await tab.page.$eval('#auth', (e) => e.textContent)).toBe('none');
    tab.cdn = 'stand-in';
  });

  it('refuses and records a request to any host but loopback', async () => {
    tab.clear();
    await tab.page.goto(`${server.url}/offsite`);
    expect(tab.refused).toEqual(['http://example.com/pixel.png']);
  });
});

describe('axe-core', () => {
  it('finds the missing alt text and the unlabelled field, and nothing serious on a plain page', async () => {
    await tab.page.goto(`${server.url}/bad`);
    expect((await axeViolations(tab.page)).map((v) => v.id).sort()).toEqual(['image-alt', 'label']);
    await tab.page.goto(`${server.url}/good`);
    expect(await axeViolations(tab.page)).toEqual([]);
  });
});

describe('the XSS spy', () => {
  it('sees every raw payload run when the page has no CSP, and finds their live markup', async () => {
    tab.clear();
    await tab.page.goto(`${server.url}/raw`, { waitUntil: 'load' });
    const expected = XSS_PAYLOADS.filter((p) => p.raw).map((p) => String(p.n));
    for (let i = 0; i < 50 && expected.some((n) => !tab.spy.xss.includes(n)); i++) await nextFrames(tab.page);
    // Every payload marked raw ran (one needing focus may run too, as autofocus allows).
    expect(expected.filter((n) => !tab.spy.xss.includes(n))).toEqual([]);
    expect((await tab.page.evaluate(liveMarkup)).length).toBeGreaterThan(30);
  });

  it('under a nonce CSP the raw payloads are stopped, and the spy sees the violations', async () => {
    tab.clear();
    await tab.page.goto(`${server.url}/raw-csp`, { waitUntil: 'load' });
    await nextFrames(tab.page);
    expect(tab.spy.xss).toEqual([]);
    expect(tab.spy.csp.length).toBeGreaterThan(0);
  });

  it('escaped with escapeHtml, all thirty stay text: nothing ran, nothing was stopped, no live markup', async () => {
    tab.clear();
    await tab.page.goto(`${server.url}/escaped`, { waitUntil: 'load' });
    await nextFrames(tab.page);
    expect(tab.spy).toEqual({ xss: [], dialogs: [], errors: [], csp: [] });
    expect(await tab.page.evaluate(liveMarkup)).toEqual([]);
    const texts = await tab.page.$$eval('li', (lis) => lis.map((li) => li.textContent));
    expect(texts).toEqual(XSS_PAYLOADS.map((p) => p.text));
  });
});

describe('Web Vitals', () => {
  it('reads LCP, CLS and INP (from a real click) on a page', async () => {
    await tab.page.goto(`${server.url}/good`);
    const v = await vitals(tab.page);
    expect(v.lcp).toBeGreaterThan(0);
    expect(v.cls).toBe(0);
    expect(v.inp).toBeGreaterThanOrEqual(0);
    expect(await tab.page.evaluate(() => (globalThis as unknown as { __vitals: { firstInput: number | null } }).__vitals.firstInput)).not.toBeNull();
  });
});
