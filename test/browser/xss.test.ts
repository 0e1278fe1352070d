/**
 * Thirty XSS payloads planted where agents and senders write — endpoint names and source labels, grant labels (the
 * audit's actor), replay notes and reasons, support request text, external event ids — and sent back in the Events
 * search: in Chromium, on every page of the embedded seat (its CSP on, App Bridge's stand-in loaded) nothing ran,
 * nothing was stopped by the CSP, no live markup is in the DOM, and the payloads read as text where they are shown.
 */
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import type { Tier } from '../../src/contract/scopes.ts';
import { hmacHex } from '../../src/lib/crypto.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { type BrowserFixture, launchBrowser, nextFrames, type Tab } from '../fixtures/browser.ts';
import { b } from '../fixtures/fake-shopify.ts';
import { liveMarkup, XSS_PAYLOADS } from '../fixtures/xss-payloads.ts';
import type { TestEnv } from '../helpers.ts';
import { embeddedWorld } from './_seat.ts';

setDefaultTimeout(180_000);

const CLIENT = { clientId: 'xss-app-client-0001', clientSecret: 'xss-app-secret-canary-0b7d' };
const SHOP = 'xss-store.myshopify.com';
const { fake, server, start } = embeddedWorld(CLIENT, SHOP);

let browser: BrowserFixture;
let tab: Tab;
let e: TestEnv;
/** Where each payload was accepted (field → payload numbers), for the report and the text checks. */
const planted = new Map<string, number[]>();
const eventIds: string[] = [];
const endpointIds: string[] = [];
const grantIds: string[] = [];

const plant = (field: string, n: number) => planted.set(field, [...(planted.get(field) ?? []), n]);

async function api(token: string, method: string, path: string, body?: unknown, key?: string) {
  const res = await fetch(`${server.url}/agent/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

beforeAll(async () => {
  e = await start();
  browser = await launchBrowser();
  tab = await browser.tab({ cdn: 'stand-in', idToken: () => fake.idToken({ sub: '91' }) });
  // The merchant installs (token exchange); then agents and senders write what they like.
  await tab.page.goto(fake.embeddedAppUrl(`${server.url}/app`, { sub: '91' }), { waitUntil: 'load' });
  const store = (await e.core.repo.getStoreByShop(SHOP))!;
  const grant = (tier: Tier, label?: string) => issueGrant(e.core, { shopDomain: SHOP, tier, ttlMs: 86_400_000, label });
  const admin = (await grant('admin_assistant', 'planter')).token;

  const ep = await api(admin, 'POST', '/endpoints', { name: 'plain', triggerVariant: 'order', resourceIdPath: 'order.id' });
  expect(ep.status).toBe(201);
  const secret = ep.json.data.secret as string;
  const endpoint = ep.json.data.endpoint as { id: string; auth: { headerName: string } };
  endpointIds.push(endpoint.id);
  for (const p of XSS_PAYLOADS) {
    // Within the previews' per-minute limits.
    e.clock.advance(3_000);
    // Endpoint names and source labels (as long as the plan lets endpoints be made).
    const made = await api(admin, 'POST', '/endpoints', { name: p.text, sourceLabel: p.text, triggerVariant: 'order', resourceIdPath: 'order.id' });
    if (made.status === 201) {
      plant('endpoint name', p.n);
      endpointIds.push(made.json.data.endpoint.id);
    }
    // Grant labels: the Agents page and the audit's actor.
    const g = await grant('observer', p.text).catch(() => null);
    if (g) {
      plant('grant label', p.n);
      grantIds.push(g.grantId);
      await fetch(`${server.url}/agent/v1/grant`, { headers: { authorization: `Bearer ${g.token}` } });
    }
    // External event ids, from a signed sender.
    const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: p.text, order: { id: 7000 + p.n } });
    const sent = await fetch(`${server.url}/hooks/${endpoint.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [endpoint.auth.headerName]: hmacHex(secret, body) },
      body,
    });
    const receipt = (await sent.json()) as { eventId?: string };
    if (sent.status === 202 && receipt.eventId) {
      plant('external event id', p.n);
      eventIds.push(receipt.eventId);
    }
    // Support text.
    const support = await api(
      admin,
      'POST',
      '/support-request-intents',
      { mode: 'preview', input: { category: 'other', urgency: 'low', summary: p.text } },
      `xss-support-${p.n}`,
    );
    if (support.status < 300) plant('support text', p.n);
  }
  // The fake refuses every one (failed), and a replay of each is previewed with a reason (the audit's free text).
  fake.script(...eventIds.map(() => b.userErrors({ field: null, message: 'refused' })));
  await new HandoffWorker(e.core).drain();
  for (const [i, id] of eventIds.entries()) {
    e.clock.advance(3_000);
    const p = XSS_PAYLOADS[i]!;
    const reason = await api(admin, 'POST', `/events/${id}/replay-intents`, { mode: 'preview', input: { reason: p.text } }, `xss-reason-${p.n}`);
    if (reason.status < 300) plant('replay reason', p.n);
  }
  expect(store.id).toBeString();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server.stop();
  console.log(`XSS payloads planted per field: ${JSON.stringify(Object.fromEntries([...planted].map(([k, v]) => [k, v.length])))}`);
});

/** Visits `path` of the embedded seat with a fresh ID token; asserts nothing ran and no markup is live. */
async function inert(path: string): Promise<string> {
  tab.clear();
  // A person's pace: within the reads' per-minute limits.
  e.clock.advance(2_500);
  const url = new URL(`${server.url}${path}`);
  url.searchParams.set('shop', SHOP);
  url.searchParams.set('id_token', fake.idToken({ sub: '91' }));
  const res = await tab.page.goto(url.toString(), { waitUntil: 'load' });
  await nextFrames(tab.page);
  expect({ path, status: res?.status() }).toEqual({ path, status: 200 });
  expect({ path, spy: tab.spy }).toEqual({ path, spy: { xss: [], dialogs: [], errors: [], csp: [] } });
  expect({ path, live: await tab.page.evaluate(liveMarkup) }).toEqual({ path, live: [] });
  return tab.page.$eval('body', (b) => b.textContent ?? '');
}

const shown = (text: string, field: string) => (planted.get(field) ?? []).filter((n) => !text.includes(XSS_PAYLOADS[n - 1]!.text));

describe('thirty XSS payloads where agents and senders write', () => {
  it('were accepted by the contract in every field that takes free text', () => {
    expect(planted.get('external event id')).toHaveLength(30);
    expect(planted.get('grant label')).toHaveLength(30);
    expect(planted.get('replay reason')).toHaveLength(30);
    expect(planted.get('support text')).toHaveLength(30);
    // As many endpoints as the plan allows.
    expect(planted.get('endpoint name')?.length).toBeGreaterThan(10);
  });

  it('are inert on the list pages, and read as text there', async () => {
    expect(shown(await inert('/app/events'), 'external event id')).toEqual([]);
    expect(shown(await inert('/app/agents'), 'grant label')).toEqual([]);
    expect(shown(await inert('/app/endpoints'), 'endpoint name')).toEqual([]);
    await inert('/app');
    await inert('/app/recovery');
    await inert('/app/audit');
    await inert('/app/plan');
  });

  it('are inert on each event, endpoint and grant page', async () => {
    for (const id of eventIds) await inert(`/app/events?event=${encodeURIComponent(id)}`);
    for (const id of endpointIds) await inert(`/app/endpoints?id=${encodeURIComponent(id)}`);
    for (const id of grantIds.slice(0, 10)) await inert(`/app/agents?grant=${encodeURIComponent(id)}`);
  });

  it('are inert when sent back in the Events search and the Audit filter', async () => {
    for (const p of XSS_PAYLOADS) {
      const q = encodeURIComponent(p.text);
      await inert(`/app/events?externalEventId=${q}`);
      await inert(`/app/audit?operationId=${q}&grantId=${q}`);
    }
  });
});
