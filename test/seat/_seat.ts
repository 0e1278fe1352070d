/**
 * A seat page driven as a person drives it, over a real deployment: signed in on the console by a `hookrelay
 * console` link (session cookie), each GET and form POST through the app and the seat's router (CSRF, layout,
 * headers), the page acting through invoke as the human. `direct` builds a page's context by hand for the embedded
 * face (its ID token is another suite's matter), its `call` the same invoke as the human.
 */
import { expect } from 'bun:test';
import type { StoreRow } from '../../db/types.ts';
import { seatCall } from '../../src/seat/call.ts';
import { issueSignInLink } from '../../src/seat/session.ts';
import type { Human, PageResult, SeatContext, SeatPage } from '../../src/seat/types.ts';
import { addStore, BASE, createTestEnv, type TestEnv, testInvoke } from '../helpers.ts';

/** An answer of the seat as the browser gets it. */
export interface Answer {
  status: number;
  html: string;
  headers: Headers;
  location: string | null;
}

export interface Seat {
  env: TestEnv;
  store: StoreRow;
  /** The session's CSRF token, as its pages' forms carry it. */
  csrf: string;
  get(page: SeatPage, query?: string, under?: string): Promise<Answer>;
  post(page: SeatPage, form: Record<string, string>): Promise<Answer>;
}

const SHOP = 'demo.myshopify.com';

/** A deployment with one store, and its human signed in on the console. */
export async function seat(opts: { actor?: string } = {}): Promise<Seat> {
  const env = await createTestEnv();
  await addStore(env, { shopDomain: SHOP });
  const store = (await env.core.repo.getStoreByShop(SHOP))!;
  const link = new URL((await issueSignInLink(env.core, SHOP, opts.actor ?? 'jane@example.test')).url);
  const signIn = await env.app.fetch(new Request(`${BASE}${link.pathname}${link.search}`));
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
  const answer = async (res: Response): Promise<Answer> => ({
    status: res.status,
    html: await res.text(),
    headers: res.headers,
    location: res.headers.get('location'),
  });
  const home = await answer(await env.app.fetch(new Request(`${BASE}/console`, { headers: { cookie } })));
  const csrf = /name="csrf" value="([^"]+)"/.exec(home.html)![1]!;
  return {
    env,
    store,
    csrf,
    get: async (page, query = '', under = '') =>
      answer(await env.app.fetch(new Request(`${BASE}/console${page.path}${under}${query ? `?${query}` : ''}`, { headers: { cookie } }))),
    post: async (page, form) =>
      answer(
        await env.app.fetch(
          new Request(`${BASE}/console${page.path}`, {
            method: 'POST',
            headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams(form).toString(),
          }),
        ),
      ),
  };
}

/** A page's context built by hand on the embedded face (no router), acting through invoke as the human; `config` over the defaults. */
export async function direct(config: Parameters<typeof createTestEnv>[0] = {}): Promise<{
  env: TestEnv;
  get(page: SeatPage, path?: string): Promise<PageResult>;
  post(page: SeatPage, form: Record<string, string>): Promise<PageResult>;
}> {
  const env = await createTestEnv(config);
  await addStore(env, { shopDomain: SHOP });
  const store = (await env.core.repo.getStoreByShop(SHOP))!;
  const human: Human = { face: 'embedded', store, actor: 'shopify-staff:42', sessionId: 'sid-test' };
  const { core } = env;
  const invoke = testInvoke(env, (id) => env.app.endpoints.invalidate(id));
  const ctx = (path: string, form: URLSearchParams | null): SeatContext => ({
    core,
    human,
    url: new URL(`${BASE}/app${path}`),
    form,
    call: seatCall(invoke, human, 'req_seat_direct', () => null),
    base: '/app',
    csrf: null,
    nonce: 'nonce-test',
    publicUrl: BASE,
    embedded: true,
  });
  return {
    env,
    get: (page, path = page.path) => page.get(ctx(path, null)),
    post: (page, form) => page.post!(ctx(page.path, new URLSearchParams(form))),
  };
}

/** The page of an answer (fails the test on a redirect). */
export function htmlOf(r: Answer | PageResult): string {
  if ('headers' in r) {
    if (r.status === 303) throw new Error(`expected a page, got a redirect to ${r.location}`);
    return r.html;
  }
  if (!('html' in r)) throw new Error(`expected a page, got a redirect to ${r.redirect}`);
  return r.html;
}

/** The location of a redirect answer (fails the test on a page). */
export function redirectOf(r: Answer): string {
  if (r.status !== 303) throw new Error(`expected a redirect, got ${r.status}: ${r.html.slice(0, 2000)}`);
  return r.location!;
}

/** The hidden fields of the POST form whose submit button says `button`, as a browser would send them. */
export function formOf(page: string, button: string): Record<string, string> {
  for (const m of page.matchAll(/<form method="post"[^>]*>([\s\S]*?)<\/form>/g)) {
    const inner = m[1]!;
    if (!inner.includes(`>${button}</button>`)) continue;
    const fields: Record<string, string> = {};
    for (const i of inner.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[fromHtml(i[1]!)] = fromHtml(i[2]!);
    return fields;
  }
  throw new Error(`no form with a "${button}" button in ${page.slice(0, 3000)}`);
}

const fromHtml = (s: string) => s.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)));

/** Every POST form of the page carries the CSRF field (console), or none does (embedded: `csrf` null); how many. */
export function expectCsrfOnEveryPostForm(page: string, csrf: string | null) {
  const forms = [...page.matchAll(/<form method="post"[^>]*>([\s\S]*?)<\/form>/g)].map((m) => m[1]!);
  for (const f of forms) {
    if (csrf === null) expect(f).not.toContain('name="csrf"');
    else expect(f).toContain(`<input type="hidden" name="csrf" value="${csrf}">`);
  }
  return forms.length;
}

/** How many times `needle` occurs in `hay`. */
export const occurrences = (hay: string, needle: string) => hay.split(needle).length - 1;
