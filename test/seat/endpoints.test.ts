/**
 * The Endpoints page (src/seat/pages/endpoints.ts) as a person uses it: create (the secret once), edit, rotate and
 * delete as preview → confirm → execute through the contract's intents, over a real deployment.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { page as endpointsPage } from '../../src/seat/pages/endpoints.ts';
import { count, orderEvent, rows, sendHook } from '../helpers.ts';
import { dumpDatabase } from '../security/dump.ts';
import { direct, expectCsrfOnEveryPostForm, formOf, htmlOf, occurrences, redirectOf, seat, type Answer, type Seat } from './_seat.ts';

let s: Seat;
beforeEach(async () => {
  s = await seat();
});

const secretIn = (page: string) => /value="(whsec_[A-Za-z0-9]+)"/.exec(page)?.[1];

/** Creates an endpoint through the page's form; answers the result page and the form sent. */
async function createThroughPage(fields: Record<string, string> = { name: 'Orders', triggerVariant: 'order', resourceIdPath: 'order.id' }) {
  const form = { ...formOf(htmlOf(await s.get(endpointsPage, 'new=1')), 'Create endpoint'), ...fields };
  return { result: await s.post(endpointsPage, form), form };
}

const endpointId = async () => (await rows<{ id: string }>(s.env, 'SELECT id FROM endpoints'))[0]!.id;
const endpoint = async (id: string) => (await s.env.core.repo.getEndpoint(s.store.id, id))!;

/** Every trace a secret could leave outside the one page: the whole database (audit rows included) and the log. */
async function expectNowhereStored(secret: string) {
  for (const [table, text] of Object.entries(await dumpDatabase(s.env))) expect(text.includes(secret), table).toBe(false);
  expect(s.env.log.lines.join('\n')).not.toContain(secret);
}

/** Previews `kind` from the endpoint's page with `fields`, then answers the confirmation page. */
async function previewThroughPage(id: string, button: string, fields: Record<string, string> = {}) {
  const form = { ...formOf(htmlOf(await s.get(endpointsPage, `id=${id}`)), button), ...fields };
  return s.post(endpointsPage, form);
}

describe('Endpoints page: create', () => {
  it('shows the new secret exactly once, not cached, with the sender preset instructions; the secret works and is stored nowhere in clear', async () => {
    const form = htmlOf(await s.get(endpointsPage, 'new=1'));
    expect(form).toContain(`name="csrf" value="${s.csrf}"`);
    expect(form).toMatch(/name="idempotencyKey" value="seat-[0-9a-f-]{36}"/);
    const { result } = await createThroughPage({ name: 'Zaps', triggerVariant: 'order', resourceIdPath: 'order.id', senderProfile: 'zapier' });
    const page = htmlOf(result);
    expect(result.headers.get('cache-control')).toBe('no-store');
    const secret = secretIn(page)!;
    expect(secret).toBeDefined();
    expect(occurrences(page, secret)).toBe(1);
    expect(page).toContain('Webhooks by Zapier');
    expect(page).toContain('X-Hookrelay-Token');
    expect(page).toMatch(/<script nonce="[A-Za-z0-9+/=]+">\(function\(\)\{var i=document\.getElementById\("secret"\)/);
    const id = await endpointId();
    expect(page).toContain(`http://local/hooks/${id}`);
    const e = await endpoint(id);
    expect((await sendHook(s.env, { id, auth: { headerName: e.headerName, mode: e.authMode } }, secret, orderEvent('x-1'))).status).toBe(202);
    await expectNowhereStored(secret);
    // The list and the endpoint's own page show its last four characters only.
    expect(htmlOf(await s.get(endpointsPage))).not.toContain(secret);
    expect(htmlOf(await s.get(endpointsPage, `id=${id}`))).not.toContain(secret);
  });

  it('makes a double submit of the form one endpoint, and does not show its secret again', async () => {
    const { result, form } = await createThroughPage();
    const again = await s.post(endpointsPage, form);
    expect(await count(s.env, 'endpoints')).toBe(1);
    expect(secretIn(htmlOf(result))).toBeDefined();
    expect(secretIn(htmlOf(again))).toBeUndefined();
    expect(htmlOf(again)).toContain('already sent');
  });

  it('answers bad input with the form again, the error named, what was typed kept and escaped; corrected, it creates', async () => {
    const { result } = await createThroughPage({ name: '"><script>alert(1)</script>', triggerVariant: 'order', resourceIdPath: 'not a path' });
    expect(result.status).toBe(400);
    const page = htmlOf(result);
    expect(page).toContain('invalid_input');
    expect(page).toContain('&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(page).not.toContain('<script>alert');
    expect(await count(s.env, 'endpoints')).toBe(0);
    const again = await s.post(endpointsPage, { ...formOf(page, 'Create endpoint'), name: 'Fixed', triggerVariant: 'order', resourceIdPath: 'order.id' });
    expect(again.status).toBe(201);
    expect(await count(s.env, 'endpoints')).toBe(1);
  });
});

describe('Endpoints page: changes as preview → confirm → execute', () => {
  let id: string;
  let secret0: string;
  beforeEach(async () => {
    secret0 = secretIn(htmlOf((await createThroughPage()).result))!;
    id = await endpointId();
  });

  it('edits: the preview shows the change and changes nothing; the execute redirects to the endpoint; a double submit is one change', async () => {
    const confirm = await previewThroughPage(id, 'Preview the change', { name: 'Orders (EU)', eventType: 'order.flagged' });
    const page = htmlOf(confirm);
    expect(confirm.headers.get('cache-control')).toBe('no-store');
    expect(page).toContain('Orders (EU)');
    expect((await endpoint(id)).configVersion).toBe(1);
    const execute = formOf(page, 'Change the endpoint');
    expect(execute.csrf).toBe(s.csrf!);
    expect(execute.idempotencyKey).toMatch(/^seat-/);
    const first = redirectOf(await s.post(endpointsPage, execute));
    expect(first).toBe(`/console/endpoints/${id}?done=edit`);
    expect(redirectOf(await s.post(endpointsPage, execute))).toBe(first);
    const e = await endpoint(id);
    expect([e.name, e.eventType, e.configVersion]).toEqual(['Orders (EU)', 'order.flagged', 2]);
    expect(htmlOf(await s.get(endpointsPage, `id=${id}&done=edit`))).toContain('new config version');
  });

  it('rotates: the new secret is shown once on the execute answer, works, is stored nowhere in clear; a double submit rotates once', async () => {
    const before = (await endpoint(id)).secretLast4;
    const confirm = htmlOf(await previewThroughPage(id, 'Preview the rotation', { overlapHours: '0' }));
    expect(confirm).toContain('stops working immediately');
    const execute = formOf(confirm, 'Rotate the secret');
    const result = await s.post(endpointsPage, execute);
    expect(result.headers.get('cache-control')).toBe('no-store');
    const secret = secretIn(htmlOf(result))!;
    expect(occurrences(htmlOf(result), secret)).toBe(1);
    const e = await endpoint(id);
    expect(e.secretLast4).not.toBe(before);
    expect(secret.endsWith(e.secretLast4)).toBe(true);
    expect((await sendHook(s.env, { id, auth: { headerName: e.headerName, mode: e.authMode } }, secret, orderEvent('x-2'))).status).toBe(202);
    const again = htmlOf(await s.post(endpointsPage, execute));
    expect(secretIn(again)).toBeUndefined();
    expect(again).toContain('already sent');
    expect((await endpoint(id)).secretLast4).toBe(e.secretLast4);
    await expectNowhereStored(secret);
  });

  it('archives, then deletes permanently, each after its own confirmation', async () => {
    const archive = formOf(htmlOf(await previewThroughPage(id, 'Preview archiving')), 'Archive');
    expect(redirectOf(await s.post(endpointsPage, archive))).toBe(`/console/endpoints/${id}?done=archive`);
    expect((await endpoint(id)).status).toBe('archived');
    const detail = htmlOf(await s.get(endpointsPage, `id=${id}&done=archive`));
    expect(detail).not.toContain('Preview the change');
    const permanent = formOf(htmlOf(await previewThroughPage(id, 'Preview permanent delete')), 'Delete permanently');
    expect(redirectOf(await s.post(endpointsPage, permanent))).toBe('/console/endpoints?done=permanent');
    expect(await count(s.env, 'endpoints')).toBe(0);
  });

  it('prepares a test event the sender sends (never the secret), and the receipt it brings is a test', async () => {
    const test = htmlOf(await s.post(endpointsPage, formOf(htmlOf(await s.get(endpointsPage, '', `/${id}`)), 'Prepare a test event')));
    expect(test).toContain(`<code>POST http://local/hooks/${id}</code>`);
    const body = /<pre>([^<]+)<\/pre>/.exec(test)![1]!.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)));
    expect(test).not.toContain(secret0);
    const e = await endpoint(id);
    // The sender signs those bytes with the secret it was given once: the receipt is a test, not handed off.
    const sent = await sendHook(s.env, { id, auth: { headerName: e.headerName, mode: e.authMode } }, secret0, body);
    expect([sent.status, sent.json.status]).toEqual([202, 'test']);
  });

  it('says why an execute is refused (a confirmation token that is not the preview’s), and changes nothing', async () => {
    const execute = formOf(htmlOf(await previewThroughPage(id, 'Preview the change', { name: 'Other' })), 'Change the endpoint');
    const r: Answer = await s.post(endpointsPage, { ...execute, confirmationToken: 'wrong' });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(htmlOf(r)).toContain('Not done');
    expect((await endpoint(id)).configVersion).toBe(1);
  });
});

describe('Endpoints page: values from agents and senders', () => {
  it('escapes an endpoint name on the list, the endpoint and the confirmation', async () => {
    const payloads = ['<script>alert(1)</script>', '"><img src=x onerror=alert(2)>', "'><svg onload=alert(3)>"];
    for (const name of payloads) await createThroughPage({ name, triggerVariant: 'order', resourceIdPath: 'order.id' });
    const ids = (await rows<{ id: string }>(s.env, 'SELECT id FROM endpoints')).map((r) => r.id);
    const pages = [htmlOf(await s.get(endpointsPage))];
    for (const id of ids) {
      pages.push(htmlOf(await s.get(endpointsPage, `id=${id}`)));
      pages.push(htmlOf(await previewThroughPage(id, 'Preview the change', { name: `${payloads[0]} 2` })));
    }
    for (const page of pages) {
      expect(page).not.toMatch(/<script>|<img|<svg/);
    }
    expect(pages[0]).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
  });
});

describe('Endpoints page: forms and faces', () => {
  it('puts the CSRF field in every POST form of the console (the layout’s sign-out too), and opens an endpoint at its own path as Home links it', async () => {
    await createThroughPage();
    const id = await endpointId();
    const onConsole = [htmlOf(await s.get(endpointsPage, 'new=1')), htmlOf(await s.get(endpointsPage, '', `/${id}`))];
    onConsole.push(htmlOf(await previewThroughPage(id, 'Preview the change', { name: 'Renamed' })));
    expect(onConsole.map((p) => expectCsrfOnEveryPostForm(p, s.csrf))).toEqual([2, 5, 2]);
    expect(onConsole[1]).toContain(`<code>http://local/hooks/${id}</code>`);
  });

  it('embedded: no CSRF field (the ID token proves the form), Polaris sections around the plain headings and buttons', async () => {
    const d = await direct();
    const form = formOf(htmlOf(await d.get(endpointsPage, '/endpoints?new=1')), 'Create endpoint');
    expect(form.csrf).toBeUndefined();
    const created = htmlOf(await d.post(endpointsPage, { ...form, name: 'Orders', triggerVariant: 'order', resourceIdPath: 'order.id' }));
    expect(created).toContain('<s-section><section><h2>Orders</h2>');
    const id = (await rows<{ id: string }>(d.env, 'SELECT id FROM endpoints'))[0]!.id;
    const detail = htmlOf(await d.get(endpointsPage, `/endpoints/${id}`));
    expect(expectCsrfOnEveryPostForm(detail, null)).toBe(4);
    expect(detail).toContain('action="/app/endpoints"');
    expect(detail).toContain('<button type="submit">Preview the change</button>');
  });
});
