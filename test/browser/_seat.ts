/**
 * The checks every page visit of the browser suite makes on the merchant's seat: axe-core with no serious or critical
 * violation, no script of a payload ran or was stopped, no live markup, no request off loopback, and (with
 * HOOKRELAY_SCREENSHOTS=1) a screenshot for docs/screenshots/.
 */
import { expect } from 'bun:test';
import { mkdirSync } from 'node:fs';
import type { Config } from '../../src/core.ts';
import { axeViolations, loopbackServer, type Tab } from '../fixtures/browser.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { createTestEnv, type TestEnv } from '../helpers.ts';
import { liveMarkup } from '../fixtures/xss-payloads.ts';

/**
 * A file's embedded world: the app (its client id and secret, a canary), one shop on the fake Shopify on the test
 * env's clock, and the loopback server the browser opens. `start()` makes a test env served there (again for each
 * journey that wants a fresh one), with `config` over the defaults.
 */
export function embeddedWorld(app: { clientId: string; clientSecret: string }, shop: string, config: Partial<Omit<Config, 'handoff'>> = {}) {
  let env: TestEnv | null = null;
  const fake = fakeShopifyForFile({ app, shop: { domain: shop }, now: () => (env ? env.clock.now() : Date.now()) });
  const vars: Record<string, string> = { HOOKRELAY_SHOPIFY_CLIENT_ID: app.clientId, HOOKRELAY_SHOPIFY_APP_SECRET: app.clientSecret };
  const server = loopbackServer();
  return {
    fake,
    server,
    async start(): Promise<TestEnv> {
      const e = (env = await createTestEnv({ ...config, shopifyAdminUrl: fake.url, env: (n) => vars[n], publicUrl: server.url }));
      server.use((req, peer) => e.app.fetch(req, peer));
      return e;
    },
  };
}

const SCREENSHOTS = new URL('../../docs/screenshots/', import.meta.url).pathname;

/**
 * What every visit checks: a 2xx document, axe-core finds no serious or critical violation, no payload ran, was
 * stopped by the CSP or left live markup, no request left loopback; with HOOKRELAY_SCREENSHOTS=1, a PNG of it (of the
 * whole page with `fullPage`, else of the viewport).
 */
export async function checkPage(
  tab: Tab,
  name: string,
  opts: { screenshot?: string; fullPage?: boolean; onAxe?: (count: number) => void } = {},
): Promise<void> {
  const violations = await axeViolations(tab.page);
  opts.onAxe?.(violations.length);
  expect({ page: name, violations }).toEqual({ page: name, violations: [] });
  expect({ page: name, spy: tab.spy }).toEqual({ page: name, spy: { xss: [], dialogs: [], errors: [], csp: [] } });
  expect({ page: name, live: await tab.page.evaluate(liveMarkup) }).toEqual({ page: name, live: [] });
  expect({ page: name, refused: tab.refused }).toEqual({ page: name, refused: [] });
  if (opts.screenshot && process.env.HOOKRELAY_SCREENSHOTS === '1') {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await tab.page.screenshot({ path: `${SCREENSHOTS}${opts.screenshot}.png`, type: 'png', fullPage: opts.fullPage === true });
  }
}
