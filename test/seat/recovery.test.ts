/**
 * The seat's Recovery page against a real app: failed and unconfirmed events listed; a bulk replay previewed,
 * confirmed and executed through the page's POSTs queues exactly the previewed events, and the same confirm form
 * submitted again changes nothing; a single replay likewise; refusals (a plan's cap, a filter matching nothing)
 * are shown with the contract's recommended action; every value a sender or an agent chose comes out escaped.
 */
import { describe, expect, it } from 'bun:test';
import { BULK_REPLAY_MAX_EVENTS } from '../../src/contract/limits.ts';
import { page as recoveryPage } from '../../src/seat/pages/recovery.ts';
import { issueSignInLink } from '../../src/seat/session.ts';
import type { PageResult } from '../../src/seat/types.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { htmlOf, seatOf } from '../fixtures/seat.ts';
import { BASE, call, count, eventRow, execSql, rows } from '../helpers.ts';
import { expectInert, SHOP_TOKEN, world, type World, XSS } from './_world.ts';

const fake = fakeShopifyForFile({ token: SHOP_TOKEN });

/** A form's hidden fields (the confirm form of a preview page), entities decoded. */
function hiddenFields(page: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    out[m[1]!] = m[2]!.replace(/&#(\d+);/g, (_s, n: string) => String.fromCharCode(Number(n)));
  }
  return out;
}

const redirectOf = (r: PageResult) => {
  if (!('redirect' in r)) throw new Error(`expected a redirect, got a page: ${r.html.slice(0, 500)}`);
  return r.redirect;
};
const statusOf = (r: PageResult) => ('status' in r ? r.status : undefined);

const outcomes = async (w: World, ids: string[]) =>
  Object.fromEntries(
    await Promise.all(ids.map(async (id) => [id, (await call(w.env, 'GET', `/agent/v1/events/${id}`, { token: w.token })).json.data.event.outcome])),
  );
const replayExecutions = async (w: World) =>
  (await call(w.env, 'GET', '/agent/v1/plan-usage', { token: w.token })).json.data.meters.find((m: { meter: string }) => m.meter === 'replay_executions')
    .used as number;

describe('Recovery page', () => {
  it('lists failed events with a replay button each, and delivered events no workflow confirmed, escaped', async () => {
    const w = await world(fake);
    const failed = await w.send(XSS.externalId, { fail: true });
    const delivered = await w.send(XSS.externalId2);
    const seat = await seatOf(w.env);
    w.env.clock.advance(2 * 3600_000);
    const page = htmlOf(await seat.get(recoveryPage));
    expectInert(page, [XSS.externalId, XSS.externalId2, XSS.endpointName]);
    const failedPart = page.slice(page.indexOf('<h2>Failed events'), page.indexOf('<h2>Delivered, never confirmed'));
    expect(failedPart).toContain(failed);
    expect(failedPart).not.toContain(delivered);
    const unconfirmedPart = page.slice(page.indexOf('<h2>Delivered, never confirmed'), page.indexOf('<h2>Bulk replay'));
    expect(unconfirmedPart).toContain(delivered);
    expect(unconfirmedPart).not.toContain(failed);
    // Three hours unconfirmed is asked for: the delivery two hours ago is not yet one.
    const later = htmlOf(await seat.get(recoveryPage, '?unconfirmedFor=180'));
    expect(later.slice(later.indexOf('<h2>Delivered, never confirmed'), later.indexOf('<h2>Bulk replay'))).not.toContain(delivered);
    expect(page).toContain('<input type="hidden" name="csrf" value="csrf-test-token">');
    // Minutes the contract refuses: said in that list, and by the page's status.
    const bad = await seat.get(recoveryPage, '?unconfirmedFor=0');
    expect(statusOf(bad)).toBe(400);
    expect(htmlOf(bad)).toContain('query.unconfirmedFor');
  });

  it('bulk replay: preview shows count, sample and cost; confirm queues exactly the previewed events; the same submit again changes nothing', async () => {
    const w = await world(fake, { plan: 'free' });
    const previewed = [await w.send('bulk-1', { fail: true }), await w.send(XSS.externalId, { fail: true }), await w.send('bulk-3', { fail: true })];
    const other = await w.send('bulk-other', { fail: true, ep: w.customers });
    const seat = await seatOf(w.env);

    const preview = await seat.post(recoveryPage, { action: 'bulk-preview', outcome: 'failed', endpointId: w.orders.endpoint.id, reason: XSS.note });
    const page = htmlOf(preview);
    expectInert(page, [XSS.endpointName]);
    expect(page).toContain('<th scope="row">Events to replay</th><td><strong>3</strong></td>');
    for (const id of previewed) expect(page).toContain(id);
    expect(page).not.toContain(other);
    expect(page).toContain('1 × replay executions');
    const form = hiddenFields(page);
    expect(form).toMatchObject({ action: 'bulk-execute', csrf: 'csrf-test-token' });
    expect(form.intentId).toMatch(/^int_/);
    expect(form.idempotencyKey).toMatch(/^seat-/);
    // A failure after the preview is left out: the preview bound its events.
    const late = await w.send('bulk-late', { fail: true });
    expect(await count(w.env, 'events', "outcome = 'queued'")).toBe(0);

    const done = redirectOf(await seat.post(recoveryPage, form));
    expect(done).toBe(`/console/recovery?done=bulk&intent=${form.intentId}&queued=3&skipped=0`);
    expect(await outcomes(w, [...previewed, other, late])).toEqual({
      ...Object.fromEntries(previewed.map((id) => [id, 'queued'])),
      [other]: 'failed',
      [late]: 'failed',
    });
    expect(await replayExecutions(w)).toBe(1);
    const attempts = await rows(w.env, 'SELECT id, attempts FROM events ORDER BY id');

    // The same confirm form again (a double submit, a reload): the same answer, no second change.
    expect(redirectOf(await seat.post(recoveryPage, form))).toBe(done);
    expect(await replayExecutions(w)).toBe(1);
    expect(await rows(w.env, 'SELECT id, attempts FROM events ORDER BY id')).toEqual(attempts);
    expect(await count(w.env, 'events', "outcome = 'queued'")).toBe(3);

    const result = htmlOf(await seat.get(recoveryPage, done.slice(done.indexOf('?'))));
    expect(result).toContain('3 events queued for another handoff');
  });

  it('single replay: the event detail form previews, the confirm form executes once', async () => {
    const w = await world(fake);
    const failed = await w.send('single-1', { fail: true });
    const seat = await seatOf(w.env);
    const page = htmlOf(await seat.post(recoveryPage, { action: 'replay-preview', eventId: failed, reason: 'sender fixed' }));
    expect(page).toContain('Confirm');
    const form = hiddenFields(page);
    expect(form).toMatchObject({ action: 'replay-execute', eventId: failed });
    const done = redirectOf(await seat.post(recoveryPage, form));
    expect(done).toBe(`/console/recovery?done=replay&intent=${form.intentId}&event=${failed}`);
    expect(redirectOf(await seat.post(recoveryPage, form))).toBe(done);
    expect(await outcomes(w, [failed])).toEqual({ [failed]: 'queued' });
    expect(await replayExecutions(w)).toBe(1);
    expect(htmlOf(await seat.get(recoveryPage, done.slice(done.indexOf('?'))))).toContain(`is queued for another handoff`);
  });

  it('shows a plan cap (402) plainly with the recommended action, and a filter that matches nothing', async () => {
    const w = await world(fake, { plan: 'free' });
    const failed = await w.send('capped-1', { fail: true });
    const seat = await seatOf(w.env);
    // The free plan's 25 replays this period are used up.
    await execSql(w.env, "INSERT INTO usage_counters (store_id, meter, period_start, used) SELECT id, 'replay_executions', created_at, 25 FROM stores");
    const capped = await seat.post(recoveryPage, { action: 'replay-preview', eventId: failed });
    expect(statusOf(capped)).toBe(402);
    const page = htmlOf(capped);
    expect(page).toContain('The replay was not previewed');
    expect(page).toContain('What to do:');
    expect(page).toContain('(402 ');

    const none = await seat.post(recoveryPage, { action: 'bulk-preview', outcome: 'failed', code: '<b>NO_SUCH_CODE</b>' });
    expect(statusOf(none)).toBe(403);
    const nonePage = htmlOf(none);
    expect(nonePage).toContain('nothing_to_replay');
    // The form comes back with what was asked, escaped.
    expect(nonePage).toContain('value="&#60;b&#62;NO_SUCH_CODE&#60;/b&#62;"');
  });

  it(`a filter matching more than ${BULK_REPLAY_MAX_EVENTS} events: the refusal said plainly, and a button that previews the oldest share`, async () => {
    const w = await world(fake);
    const store = (await w.env.repo.listStores())[0]!;
    const t0 = w.env.clock.now() - 3600_000;
    const receipts = Array.from({ length: BULK_REPLAY_MAX_EVENTS + 1 }, (_, i) => ({
      event: eventRow({
        id: `evt_${(t0 + i).toString(32).padStart(10, '0')}${'0'.repeat(16)}`,
        storeId: store.id,
        endpointId: w.orders.endpoint.id,
        receivedAt: t0 + i,
        outcome: 'failed',
        code: 'SVC_HANDOFF_RETRY_EXHAUSTED',
        attempts: 1,
        lastAttemptAt: t0 + i,
        nextAttemptAt: null,
      }),
      body: null,
      bodyExpiresAt: t0 + i + 30 * 86400_000,
      dedupeSince: null,
    }));
    await w.env.repo.commitIngest(receipts, []);
    const seat = await seatOf(w.env);
    const r = await seat.post(recoveryPage, { action: 'bulk-preview', outcome: 'failed', endpointId: w.orders.endpoint.id });
    expect(statusOf(r)).toBe(403);
    const page = htmlOf(r);
    expect(page).toContain(`The filter matches ${BULK_REPLAY_MAX_EVENTS + 1} events; one bulk replay hands off at most ${BULK_REPLAY_MAX_EVENTS}.`);
    expect(page).toContain('What to do: Narrow the filter');
    const until = new Date(t0 + BULK_REPLAY_MAX_EVENTS).toISOString();
    const split = page.slice(page.indexOf('<form', page.indexOf('not previewed')));
    const fields = hiddenFields(split.slice(0, split.indexOf('</form>')));
    expect(fields).toMatchObject({ action: 'bulk-preview', outcome: 'failed', endpointId: w.orders.endpoint.id, until });
    const narrowed = htmlOf(await seat.post(recoveryPage, fields));
    expect(narrowed).toContain(`<th scope="row">Events to replay</th><td><strong>${BULK_REPLAY_MAX_EVENTS}</strong></td>`);
  });

  it('through the console (the router, its session and CSRF): the human previews, confirms once, and is audited as the human', async () => {
    const w = await world(fake, { plan: 'free' });
    const failed = [await w.send('console-1', { fail: true }), await w.send(XSS.externalId, { fail: true })];
    const link = new URL((await issueSignInLink(w.env.core, 'demo.myshopify.com', 'jane@laptop')).url);
    const signedIn = await w.env.app.fetch(new Request(`${BASE}${link.pathname}${link.search}`));
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
    const get = (path: string) => w.env.app.fetch(new Request(`${BASE}${path}`, { headers: { cookie } }));
    const post = (form: Record<string, string>) =>
      w.env.app.fetch(
        new Request(`${BASE}/console/recovery`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(form).toString(),
        }),
      );
    for (const path of ['/console/events', `/console/events?event=${failed[0]}`, '/console/recovery', '/console/plan']) {
      const r = await get(path);
      expect([path, r.status]).toEqual([path, 200]);
      const page = await r.text();
      expect(page).toContain('<a href="/console/recovery"');
      expectInert(page.slice(page.indexOf('<main')), []);
    }
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await get('/console/recovery')).text())![1]!;
    const preview = await post({ csrf, action: 'bulk-preview', outcome: 'failed' });
    expect(preview.status).toBe(200);
    const page = await preview.text();
    const form = hiddenFields(page.slice(page.lastIndexOf('<form')));
    const done = await post(form);
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`/console/recovery?done=bulk&intent=${form.intentId}&queued=2&skipped=0`);
    const again = await post(form);
    expect([again.status, again.headers.get('location')]).toEqual([303, done.headers.get('location')]);
    expect(await count(w.env, 'events', "outcome = 'queued'")).toBe(2);
    expect(await replayExecutions(w)).toBe(1);
    expect(
      await rows(
        w.env,
        "SELECT actor_kind AS kind, actor_label AS label, transition FROM audit_log WHERE operation_id = 'createBulkReplayIntent' ORDER BY at, id",
      ),
    ).toEqual([
      { kind: 'human', label: 'jane@laptop', transition: 'previewed' },
      { kind: 'human', label: 'jane@laptop', transition: 'executed' },
      { kind: 'human', label: 'jane@laptop', transition: 'executed (idempotent replay)' },
    ]);
  });

  it('refuses a confirm form whose token was tampered with, changing nothing', async () => {
    const w = await world(fake);
    const failed = await w.send('tamper-1', { fail: true });
    const seat = await seatOf(w.env);
    const form = hiddenFields(htmlOf(await seat.post(recoveryPage, { action: 'bulk-preview', outcome: 'failed' })));
    const r = await seat.post(recoveryPage, { ...form, confirmationToken: `${form.confirmationToken}x` });
    expect(statusOf(r)).toBe(409);
    expect(htmlOf(r)).toContain('confirmation_mismatch');
    expect(await outcomes(w, [failed])).toEqual({ [failed]: 'failed' });
    const unknown = await seat.post(recoveryPage, { action: 'nope' });
    expect(statusOf(unknown)).toBe(400);
  });
});
