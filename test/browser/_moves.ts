/**
 * A person's moves on the seat, for the browser journeys: follow a link, press a button, fill a labelled field
 * (each waits for the page it leads to and checks its status), and read a page's text or a table row's.
 */
import type { Page } from 'puppeteer-core';
import { nextFrames } from '../fixtures/browser.ts';

/**
 * Runs `act` and waits for the navigation it starts (a link or a form), then for the page to have painted; the
 * page reached must answer `status` (default: any 2xx).
 */
export async function navigating(page: Page, act: () => Promise<unknown>, status?: number): Promise<void> {
  const [res] = await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), act()]);
  await nextFrames(page);
  const got = res?.status() ?? 0;
  if (status === undefined ? got < 200 || got > 299 : got !== status) {
    const text = await page.$eval('body', (e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 800)).catch(() => '');
    throw new Error(`${page.url().replace(/id_token=[^&]+/, 'id_token=…')} answered ${got}, not ${status ?? '2xx'}: ${text}`);
  }
}

/** The element whose text is `text` (exactly, whitespace folded) or matches it; fails the test when none does. */
async function byText(page: Page, selector: string, text: string | RegExp) {
  const handles = await page.$$(selector);
  for (const h of handles) {
    const t = await h.evaluate((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim());
    if (typeof text === 'string' ? t === text : text.test(t)) return h;
  }
  const seen = await Promise.all(handles.map((h) => h.evaluate((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim())));
  const main = await page.$eval('body', (e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 1500)).catch(() => '');
  throw new Error(
    `no ${selector} reading "${text}" on ${page.url().replace(/id_token=[^&]+/, 'id_token=…')}; there are: ${JSON.stringify(seen)}; the page reads: ${main}`,
  );
}

/** Follows the link reading `text` (the embedded face's script adds a fresh ID token on the way). */
export async function follow(page: Page, text: string | RegExp, within = 'body', status?: number): Promise<void> {
  const a = await byText(page, `${within} a[href]`, text);
  await navigating(page, () => a.click(), status);
}

/** Presses the submit button reading `text` (the first such; `within` narrows it) and waits for the next page. */
export async function press(page: Page, text: string | RegExp, within = 'body', status?: number): Promise<void> {
  const b = await byText(page, `${within} button`, text);
  await navigating(page, () => b.click(), status);
}

/** Types `value` into the field labelled `label` (its <label> text, exactly, before any hint), replacing what it held. */
export async function fill(page: Page, label: string, value: string): Promise<void> {
  const id = await page.evaluate((text) => {
    const labels = Array.from((globalThis as any).document.querySelectorAll('label')) as any[];
    for (const l of labels) {
      const own = (l.childNodes[0]?.textContent ?? l.textContent ?? '').replace(/\s+/g, ' ').trim();
      if (own !== text && (l.textContent ?? '').replace(/\s+/g, ' ').trim() !== text) continue;
      const field = l.htmlFor ? (globalThis as any).document.getElementById(l.htmlFor) : l.querySelector('input,select,textarea');
      if (!field) return null;
      if (!field.id) field.id = `probe-${Math.random().toString(36).slice(2)}`;
      return field.id as string;
    }
    return null;
  }, label);
  if (!id) throw new Error(`no field labelled "${label}" on ${page.url()}`);
  const tag = await page.$eval(`#${id}`, (e) => e.tagName);
  if (tag === 'SELECT') await page.select(`#${id}`, value);
  else {
    await page.$eval(`#${id}`, (e) => {
      (e as unknown as { value: string }).value = '';
    });
    await page.type(`#${id}`, value);
  }
}

/** The text of the first table row that mentions `needle`, whitespace folded ('' when none does). */
export function rowText(page: Page, needle: string): Promise<string> {
  return page.$$eval(
    'main tr',
    (trs, n) => trs.map((tr) => (tr.textContent ?? '').replace(/\s+/g, ' ').trim()).find((t) => t.includes(n as string)) ?? '',
    needle,
  );
}

/** The page's main text, whitespace folded. */
export function mainText(page: Page): Promise<string> {
  return page.$eval('main', (e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim());
}
