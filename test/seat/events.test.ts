/**
 * The seat's Events page against a real app: the search (external event id, outcome, endpoint, trigger, window) and
 * its cursor pages go through listEvents; an event's detail shows attempts, confirmation and the replay's preview
 * form; never a body; every value a sender or an agent chose comes out escaped.
 */
import { afterEach, describe, expect, it } from 'bun:test';
import { CONFIRM_ACTION } from '../../src/contract/triggers.ts';
import { escapeHtml } from '../../src/lib/web.ts';
import { page as eventsPage } from '../../src/seat/pages/events.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { htmlOf, seatOf } from '../fixtures/seat.ts';
import { rows } from '../helpers.ts';
import { expectInert, SHOP_TOKEN, world, XSS } from './_world.ts';

const APP_SECRET = 'shpss_seat_events_app_secret';
const fake = fakeShopifyForFile({ token: SHOP_TOKEN, app: { clientId: 'client-id', clientSecret: APP_SECRET }, shop: { domain: 'demo.myshopify.com' } });

let running: RunningServer | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

/** The event ids linked from a page, in order. */
const linkedEvents = (page: string) => [...page.matchAll(/events\?event=(evt_[0-9a-z]+)/g)].map((m) => m[1]!);

describe('Events page', () => {
  it('lists events newest first, escaped, and finds one by its external event id, outcome, endpoint and trigger', async () => {
    const w = await world(fake);
    const ok = await w.send(XSS.externalId);
    const failed = await w.send(XSS.externalId2, { fail: true });
    const customer = await w.send('cust-1', { ep: w.customers });
    const seat = await seatOf(w.env);

    const all = htmlOf(await seat.get(eventsPage));
    expect(linkedEvents(all)).toEqual([customer, failed, ok]);
    expectInert(all, [XSS.externalId, XSS.externalId2, XSS.endpointName]);
    expect(all).toContain('Customer sync');

    const q = (query: Record<string, string>) => seat.get(eventsPage, `?${new URLSearchParams(query)}`).then(htmlOf);
    expect(linkedEvents(await q({ externalEventId: XSS.externalId }))).toEqual([ok]);
    expect(linkedEvents(await q({ outcome: 'failed' }))).toEqual([failed]);
    expect(linkedEvents(await q({ endpointId: w.customers.endpoint.id }))).toEqual([customer]);
    expect(linkedEvents(await q({ triggerVariant: 'order' }))).toEqual([failed, ok]);
    expect(linkedEvents(await q({ triggerVariant: 'customer', outcome: 'failed' }))).toEqual([]);
    // The form shows the search it ran, escaped.
    const searched = await q({ externalEventId: XSS.externalId2 });
    expect(searched).toContain(`value="${escapeHtml(XSS.externalId2)}"`);
    expectInert(searched, [XSS.externalId2]);
  });

  it('searches a receipt window given as the form sends it (UTC minutes)', async () => {
    const w = await world(fake);
    const early = await w.send('early');
    w.env.clock.advance(2 * 3600_000);
    const late = await w.send('late');
    const seat = await seatOf(w.env);
    const at = new Date(w.env.clock.now() - 3600_000).toISOString().slice(0, 16); // 2026-…T…:MM
    expect(linkedEvents(htmlOf(await seat.get(eventsPage, `?since=${at}`)))).toEqual([late]);
    expect(linkedEvents(htmlOf(await seat.get(eventsPage, `?until=${at}`)))).toEqual([early]);
  });

  it('pages by the contract cursor, 50 at a time, keeping the search', async () => {
    const w = await world(fake);
    const ids: string[] = [];
    for (let i = 0; i < 53; i++) ids.push(await w.send(`page-${i}`));
    const seat = await seatOf(w.env);
    const first = htmlOf(await seat.get(eventsPage, '?outcome=delivered'));
    expect(linkedEvents(first)).toEqual(ids.slice(3).reverse());
    const older = /href="([^"]+)" rel="next"/.exec(first)![1]!.replaceAll('&#38;', '&');
    expect(older).toContain('outcome=delivered');
    const second = htmlOf(await seat.get(eventsPage, older.slice(older.indexOf('?'))));
    expect(linkedEvents(second)).toEqual(ids.slice(0, 3).reverse());
    expect(second).not.toContain('rel="next"');
  });

  it('answers a search the contract refuses with its status and the field it names, not a 500', async () => {
    const w = await world(fake);
    const seat = await seatOf(w.env);
    const r = await seat.get(eventsPage, '?outcome=<b>nope</b>&since=yesterday');
    expect('status' in r && r.status).toBe(400);
    const page = htmlOf(r);
    expect(page).toContain('query.');
    expect(page).not.toContain('<b>nope</b>');
  });

  it("shows an event's attempts, its confirmation note escaped, the replay form with its CSRF field, and never its body", async () => {
    const w = await world(fake, {}, { HOOKRELAY_SHOPIFY_APP_SECRET: APP_SECRET });
    const failed = await w.send(XSS.externalId, { fail: true, canary: 'BODY-CANARY-7f3a' });
    const delivered = await w.send('confirmed-1');
    running = await startServer(w.env.core, { port: 0, host: '127.0.0.1', worker: false });
    const run = await fake.runFlowAction(`${running.url}${CONFIRM_ACTION.path}`, {
      handle: CONFIRM_ACTION.handle,
      properties: { event_id: delivered, outcome: '', note: XSS.note },
    });
    expect(run.status).toBe(200);
    const seat = await seatOf(w.env);

    const f = htmlOf(await seat.get(eventsPage, `?event=${failed}`));
    expectInert(f, [XSS.externalId, XSS.endpointName]);
    expect(f).toContain('Flow refused it'); // the attempt's message
    expect(f).toContain('<input type="hidden" name="action" value="replay-preview">');
    expect(f).toContain('<input type="hidden" name="csrf" value="csrf-test-token">');
    expect(f).toContain('action="/console/recovery"');
    const [body] = await rows(w.env, 'SELECT body_bytes AS n FROM events WHERE id = ?', failed);
    expect(f).toContain(`${body!.n} bytes`);
    expect(f).not.toContain('BODY-CANARY-7f3a');

    const d = htmlOf(await seat.get(eventsPage, `?event=${delivered}`));
    expectInert(d, [XSS.note]);
    expect(d).toContain('A workflow confirmed this event');

    const missing = await seat.get(eventsPage, '?event=evt_nosuch');
    expect('status' in missing && missing.status).toBe(404);
  });

  it('embedded, wraps its parts in Polaris sections and carries no CSRF field', async () => {
    const w = await world(fake);
    const failed = await w.send('emb-1', { fail: true });
    const seat = await seatOf(w.env, { embedded: true, csrf: null });
    const page = htmlOf(await seat.get(eventsPage, `?event=${failed}`));
    expect(page).toContain('<s-section><section><h2>Receipt</h2>');
    expect(page).toContain('action="/app/recovery"');
    expect(page).not.toContain('name="csrf"');
  });
});
