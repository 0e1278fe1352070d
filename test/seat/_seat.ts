/**
 * A seat page driven as the router will drive it, over a real deployment: the SeatContext's `call` is the app's
 * `invoke` (src/server/pipeline.ts) with the human's principal. Until the human principal lands on main, that
 * principal is an admin_assistant grant's, acting under the human's actor label.
 */
import { expect } from 'bun:test';
import { operations, type Operation } from '../../src/contract/operations.ts';
import { AuthFailureLimiter } from '../../src/lib/auth-failures.ts';
import { authenticateBearer, type Principal } from '../../src/ops/grants.ts';
import { createInvoke } from '../../src/server/pipeline.ts';
import { RateLimiter } from '../../src/server/rate-limit.ts';
import type { Human, PageResult, SeatAnswer, SeatContext, SeatPage } from '../../src/seat/types.ts';
import { addGrant, addStore, createTestEnv, type TestEnv } from '../helpers.ts';

export interface Seat {
  env: TestEnv;
  human: Human;
  principal: Principal;
  /** The CSRF token forms must carry (the router checks it; here it must simply be in every POST form). */
  csrf: string | null;
  get(page: SeatPage, query?: string): Promise<PageResult>;
  post(page: SeatPage, form: Record<string, string> | URLSearchParams, query?: string): Promise<PageResult>;
}

let requests = 0;

/** A deployment with one store and its human, signed in on the console face. */
export async function seat(opts: { shop?: string; actor?: string; embedded?: boolean } = {}): Promise<Seat> {
  const env = await createTestEnv();
  const shopDomain = opts.shop ?? 'demo.myshopify.com';
  await addStore(env, { shopDomain });
  const token = await addGrant(env, 'admin_assistant', { shop: shopDomain });
  const principal = await authenticateBearer(env.core, `Bearer ${token}`);
  const human: Human = { face: 'console', store: principal.store, actor: opts.actor ?? 'jane@example.test', sessionId: 'ses_test' };
  principal.actor = { kind: 'human', grantId: principal.grant.id, label: human.actor };
  const { core } = env;
  const invoke = createInvoke({
    core,
    endpointChanged: (id) => env.app.endpoints.invalidate(id),
    limiter: new RateLimiter(core.repo, core.clock, core.config.rateLimits),
    authFailures: new AuthFailureLimiter(core.clock),
    inflight: new Map(),
  });
  // Embedded pages prove the request with the ID token instead: no CSRF field.
  const csrf = opts.embedded ? null : 'csrf-test-token';
  const ctxFor = (path: string, query: string, form: URLSearchParams | null): SeatContext => ({
    core,
    human,
    url: new URL(`http://local/console/${path}${query ? `?${query}` : ''}`),
    form,
    base: opts.embedded ? '/app' : '/console',
    csrf,
    nonce: 'nonce-test',
    publicUrl: 'http://local',
    embedded: opts.embedded === true,
    async call(c): Promise<SeatAnswer> {
      const a = await invoke(operations[c.operationId as keyof typeof operations] as Operation, {
        principal,
        expected: new Headers(),
        params: c.params ?? {},
        query: c.query,
        body: c.body,
        idempotencyKey: c.idempotencyKey ?? null,
        requestId: `req_seat_${++requests}`,
        client: () => null,
        surface: 'http',
      });
      return { status: a.status, body: a.body, ...(a.replayed ? { replayed: true } : {}) };
    },
  });
  return {
    env,
    human,
    principal,
    csrf,
    get: (page, query = '') => page.get(ctxFor(page.path, query, null)),
    post: (page, form, query = '') => page.post!(ctxFor(page.path, query, form instanceof URLSearchParams ? form : new URLSearchParams(form))),
  };
}

/** The HTML of a page answer (fails the test on a redirect). */
export function htmlOf(r: PageResult): string {
  if (!('html' in r)) throw new Error(`expected a page, got a redirect to ${r.redirect}`);
  return r.html;
}

/** The location of a redirect answer (fails the test on a page). */
export function redirectOf(r: PageResult): string {
  if (!('redirect' in r)) throw new Error(`expected a redirect, got a page: ${r.html.slice(0, 500)}`);
  return r.redirect;
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
  throw new Error(`no form with a "${button}" button`);
}

const fromHtml = (s: string) => s.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)));

/** Every POST form of the page carries the CSRF field (console), or none does (embedded: `csrf` null). */
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
