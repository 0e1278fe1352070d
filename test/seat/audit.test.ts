/**
 * The Audit page (src/seat/pages/audit.ts) and the contract read under it (listAuditEntries): who did what, humans
 * and agents, filtered and paginated, scoped to the store, escaped, never a secret.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { page as agentsPage } from '../../src/seat/pages/agents.ts';
import { page as auditPage } from '../../src/seat/pages/audit.ts';
import { page as endpointsPage } from '../../src/seat/pages/endpoints.ts';
import { addGrant, addStore, call } from '../helpers.ts';
import { formOf, htmlOf, seat, type Seat } from './_seat.ts';

let s: Seat;
let agentToken: string;
beforeEach(async () => {
  s = await seat({ actor: 'jane@example.test' });
  // The human issues a grant; the agent uses it (one read, one refused write); the human creates an endpoint.
  const issued = htmlOf(await s.post(agentsPage, { ...formOf(htmlOf(await s.get(agentsPage)), 'Issue grant'), tier: 'observer', ttl: '1h', label: 'watcher' }));
  agentToken = /value="(hrg_[A-Za-z0-9]+)"/.exec(issued)![1]!;
  expect((await call(s.env, 'GET', '/agent/v1/setup-state', { token: agentToken })).status).toBe(200);
  expect((await call(s.env, 'POST', '/agent/v1/endpoints', { token: agentToken, body: { triggerVariant: 'generic' } })).status).toBe(403);
  const created = await s.post(endpointsPage, {
    ...formOf(htmlOf(await s.get(endpointsPage, 'new=1')), 'Create endpoint'),
    name: 'Orders',
    triggerVariant: 'order',
    resourceIdPath: 'order.id',
  });
  expect(created.status).toBe(201);
});

const list = async (query: Record<string, string>) => {
  const r = await call(s.env, 'GET', `/agent/v1/audit?${new URLSearchParams(query)}`, { token: agentToken });
  expect(r.status).toBe(200);
  return r.json.data as { entries: { operationId: string; actorKind: string; actorLabel: string; grantId: string | null }[]; nextCursor: string | null };
};

describe('Audit page', () => {
  it('shows the human’s and the agent’s rows, newest first, with the refusal', async () => {
    const page = htmlOf(await s.get(auditPage));
    const cell = (op: string) => `<td>${op}</td>`;
    for (const needle of ['human: jane@example.test', cell('issueGrant'), 'agent: watcher', cell('getSetupState'), cell('createEndpoint'), 'missing_scope']) {
      expect(page, needle).toContain(needle);
    }
    expect(page.indexOf(cell('issueGrant'))).toBeGreaterThan(page.indexOf(cell('createEndpoint')));
    // The page's own write is the human's, through the contract, on the console: no grant.
    expect(page).toMatch(/<td>human: jane@example\.test<\/td><td>—<\/td><td>createEndpoint<\/td><td>—<\/td><td>ok · 201<\/td><td>console<\/td>/);
    expect(page).toMatch(
      /<td>human: jane@example\.test<\/td><td>—<\/td><td>issueGrant<\/td><td><code>gr_[0-9a-z]+<\/code><\/td><td>ok · 200 · issued observer/,
    );
  });

  it('filters by actor kind, operation and grant, and by time', async () => {
    const agentOnly = htmlOf(await s.get(auditPage, 'actorKind=agent'));
    expect(agentOnly).toContain('agent: watcher');
    expect(agentOnly).not.toContain('human: jane');
    const byOp = htmlOf(await s.get(auditPage, 'operationId=issueGrant'));
    expect(byOp).toContain('<td>issueGrant</td>');
    expect(byOp).not.toContain('<td>getSetupState</td>');
    const grantId = (await list({ actorKind: 'agent' })).entries.find((e) => e.actorLabel === 'watcher')!.grantId!;
    const byGrant = htmlOf(await s.get(auditPage, `grantId=${grantId}`));
    expect(byGrant).toContain('<td>getSetupState</td>');
    expect(byGrant).not.toContain('<td>issueGrant</td>');
    const future = new Date(s.env.clock.now() + 60_000).toISOString().slice(0, 16);
    expect(htmlOf(await s.get(auditPage, `since=${future}`))).toContain('none.');
    expect(htmlOf(await s.get(auditPage, `until=${future}`))).toContain('<td>issueGrant</td>');
  });

  it('pages through the rows with the cursor, each row once', async () => {
    for (let i = 0; i < 6; i++) await call(s.env, 'GET', '/agent/v1/grant', { token: agentToken });
    const all = (await list({ limit: '100' })).entries.map((e) => JSON.stringify(e));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof list>> = await list({ limit: '4', ...(cursor ? { cursor } : {}) });
      seen.push(...page.entries.map((e) => JSON.stringify(e)));
      cursor = page.nextCursor;
    } while (cursor);
    // Each read of the loop adds its own row, newer than any page: only the first page sees one (the read of `all`).
    expect(seen.slice(1)).toEqual(all);
    // The page's size is the contract's default (50): past it, the page links to the older rows, filters kept.
    for (let i = 0; i < 50; i++) await call(s.env, 'GET', '/agent/v1/grant', { token: agentToken });
    const first = htmlOf(await s.get(auditPage, 'actorKind=agent'));
    const next = /href="([^"]+)" rel="next"/.exec(first)?.[1]?.replace(/&#38;/g, '&');
    expect(next).toMatch(/^\/console\/audit\?actorKind=agent&cursor=cur_[0-9a-z_]+$/);
    const older = htmlOf(await s.get(auditPage, next!.split('?')[1]));
    expect(older).toContain('agent: watcher');
    expect(older).not.toContain('human: jane');
  });

  it('reads only the store’s own rows', async () => {
    await addStore(s.env, { shopDomain: 'other.myshopify.com' });
    const other = await addGrant(s.env, 'observer', { shop: 'other.myshopify.com' });
    await call(s.env, 'GET', '/agent/v1/setup-state', { token: other });
    const r = await call(s.env, 'GET', '/agent/v1/audit', { token: other });
    expect(r.json.data.entries.map((e: { operationId: string }) => e.operationId)).toEqual(['getSetupState']);
    expect(htmlOf(await s.get(auditPage))).not.toContain('other.myshopify.com');
  });

  it('answers a bad filter as the contract’s invalid_input, on the page', async () => {
    const r = await s.get(auditPage, 'actorKind=robot');
    expect(r.status).toBe(400);
    expect(htmlOf(r)).toContain('invalid_input');
    expect(htmlOf(await s.get(auditPage, 'cursor=nope'))).toContain('invalid_input');
  });

  it('escapes grant labels (the agent rows’ actor) and filter values', async () => {
    const label = '<img src=x onerror=alert(1)><script>alert(2)</script>';
    const issued = htmlOf(await s.post(agentsPage, { ...formOf(htmlOf(await s.get(agentsPage)), 'Issue grant'), tier: 'observer', ttl: '1h', label }));
    const token = /value="(hrg_[A-Za-z0-9]+)"/.exec(issued)![1]!;
    expect((await call(s.env, 'GET', '/agent/v1/grant', { token })).status).toBe(200);
    const rowsPage = htmlOf(await s.get(auditPage, 'actorKind=agent'));
    expect(rowsPage).toContain('agent: &#60;img src=x onerror=alert(1)&#62;&#60;script&#62;alert(2)&#60;/script&#62;');
    const payload = '"><script>alert(1)</script>';
    const filtered = htmlOf(await s.get(auditPage, `operationId=${encodeURIComponent(payload)}&grantId=${encodeURIComponent(label)}`));
    expect(filtered).toContain('value="&#34;&#62;&#60;script&#62;');
    for (const page of [rowsPage, filtered]) expect(page).not.toMatch(/<script>|<img|<svg/);
  });
});
