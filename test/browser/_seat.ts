/**
 * The checks every page visit of the browser suite makes on the merchant's seat: axe-core with no serious or critical
 * violation, no script of a payload ran or was stopped, no live markup, no request off loopback, and (with
 * HOOKRELAY_SCREENSHOTS=1) a screenshot for docs/screenshots/.
 */
import { expect } from 'bun:test';
import { mkdirSync } from 'node:fs';
import { axeViolations, type Tab } from '../fixtures/browser.ts';
import { liveMarkup } from '../fixtures/xss-payloads.ts';

const SCREENSHOTS = new URL('../../docs/screenshots/', import.meta.url).pathname;

/**
 * What every visit checks: a 2xx document, axe-core finds no serious or critical violation, no payload ran, was
 * stopped by the CSP or left live markup, no request left loopback; with HOOKRELAY_SCREENSHOTS=1, a PNG of it.
 */
export async function checkPage(tab: Tab, name: string, opts: { screenshot?: string; onAxe?: (count: number) => void } = {}): Promise<void> {
  const violations = await axeViolations(tab.page);
  opts.onAxe?.(violations.length);
  expect({ page: name, violations }).toEqual({ page: name, violations: [] });
  expect({ page: name, spy: tab.spy }).toEqual({ page: name, spy: { xss: [], dialogs: [], errors: [], csp: [] } });
  expect({ page: name, live: await tab.page.evaluate(liveMarkup) }).toEqual({ page: name, live: [] });
  expect({ page: name, refused: tab.refused }).toEqual({ page: name, refused: [] });
  if (opts.screenshot && process.env.HOOKRELAY_SCREENSHOTS === '1') {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await tab.page.screenshot({ path: `${SCREENSHOTS}${opts.screenshot}.png`, type: 'png' });
  }
}
