/**
 * The Agents page (src/seat/pages/agents.ts): a grant issued by the human (its token shown once, audited as the
 * human's action), listed, used, its history read, revoked; over a real deployment.
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { page as agentsPage } from '../../src/seat/pages/agents.ts';
import { addGrant, addStore, call, rows } from '../helpers.ts';
import { dumpDatabase } from '../security/dump.ts';
import { expectCsrfOnEveryPostForm, formOf, htmlOf, occurrences, redirectOf, seat, type Seat } from './_seat.ts';

let s: Seat;
beforeEach(async () => {
  s = await seat({ actor: 'jane@example.test' });
});

const tokenIn = (page: string) => /value="(hrg_[A-Za-z0-9]+)"/.exec(page)?.[1];

async function issueThroughPage(fields: Record<string, string>) {
  const form = { ...formOf(htmlOf(await s.get(agentsPage)), 'Issue grant'), ...fields };
  return s.post(agentsPage, form);
}

const grantsOf = () =>
  rows<{ id: string; label: string; tier: string; storeId: string; revokedAt: number | null }>(
    s.env,
    'SELECT id, label, tier, store_id AS "storeId", revoked_at AS "revokedAt" FROM grants ORDER BY created_at, id',
  );
const humanRows = () =>
  rows<{ operationId: string; actorKind: string; actorLabel: string; targetId: string; storeId: string; surface: string }>(
    s.env,
    `SELECT operation_id AS "operationId", actor_kind AS "actorKind", actor_label AS "actorLabel", target_id AS "targetId", store_id AS "storeId", surface FROM audit_log WHERE actor_kind = 'human' AND operation_id IN ('issueGrant', 'revokeGrant') ORDER BY at, id`,
  );

describe('Agents page', () => {
  it('issues a grant of the human’s store: the token once, not cached, working; the row is the human’s and holds no token', async () => {
    const form = htmlOf(await s.get(agentsPage));
    expect(form).toContain(`name="csrf" value="${s.csrf}"`);
    const result = await issueThroughPage({ tier: 'operator', ttl: '8h', label: 'ci bot' });
    const page = htmlOf(result);
    expect(result.headers.get('cache-control')).toBe('no-store');
    const token = tokenIn(page)!;
    expect(token).toBeDefined();
    expect(occurrences(page, token)).toBe(1);
    const g = (await grantsOf()).find((r) => r.label === 'ci bot')!;
    expect([g.tier, g.storeId]).toEqual(['operator', s.store.id]);
    expect((await call(s.env, 'GET', '/agent/v1/grant', { token })).json.data.grant.id).toBe(g.id);
    expect(await humanRows()).toEqual([
      { operationId: 'issueGrant', actorKind: 'human', actorLabel: 'jane@example.test', targetId: g.id, storeId: s.store.id, surface: 'console' },
    ]);
    for (const [table, text] of Object.entries(await dumpDatabase(s.env))) expect(text.includes(token), table).toBe(false);
    expect(s.env.log.lines.join('\n')).not.toContain(token);
    expect(htmlOf(await s.get(agentsPage))).not.toContain(token);
  });

  it('refuses a lifetime over 90 days or an unknown tier, saying why, and issues nothing', async () => {
    const before = (await grantsOf()).length;
    for (const fields of [
      { tier: 'observer', ttl: '91d' },
      { tier: 'root', ttl: '1h' },
      { tier: 'observer', ttl: 'soon' },
    ]) {
      const r = await issueThroughPage(fields);
      expect(r.status).toBe(400);
      expect(htmlOf(r)).toContain('invalid_input');
      expect(tokenIn(htmlOf(r))).toBeUndefined();
    }
    expect((await grantsOf()).length).toBe(before);
  });

  it('lists grants, shows what one did (its audit rows), and revokes it: its next call is refused', async () => {
    const token = tokenIn(htmlOf(await issueThroughPage({ tier: 'observer', ttl: '1h', label: 'reader' })))!;
    expect((await call(s.env, 'GET', '/agent/v1/setup-state', { token })).status).toBe(200);
    const g = (await grantsOf()).find((r) => r.label === 'reader')!;
    const list = htmlOf(await s.get(agentsPage));
    expect(list).toContain(`<code>${g.id}</code>`);
    const history = htmlOf(await s.get(agentsPage, `grant=${g.id}`));
    expect(history).toContain('getSetupState');
    expect(history).toContain('agent: reader');
    expect(expectCsrfOnEveryPostForm(list, s.csrf)).toBe(4); // Revoke, Approve a connection, Issue grant, Sign out
    expect(expectCsrfOnEveryPostForm(history, s.csrf)).toBe(2); // Revoke, and the layout’s Sign out
    const revoke = formOf(history, 'Revoke');
    expect(revoke).toEqual({ csrf: s.csrf, action: 'revoke', grantId: g.id });
    expect(redirectOf(await s.post(agentsPage, revoke))).toBe('/console/agents?done=revoked');
    expect((await call(s.env, 'GET', '/agent/v1/setup-state', { token })).status).toBe(401);
    // Sent twice, it is one revocation: the same redirect, no second row.
    s.env.clock.advance(5_000);
    const revokedAt = (await grantsOf()).find((r) => r.id === g.id)!.revokedAt;
    expect(redirectOf(await s.post(agentsPage, revoke))).toBe('/console/agents?done=revoked');
    expect((await grantsOf()).find((r) => r.id === g.id)!.revokedAt).toBe(revokedAt);
    expect(htmlOf(await s.get(agentsPage, 'done=revoked'))).toContain('was revoked');
    expect((await humanRows()).map((r) => [r.operationId, r.actorKind, r.targetId])).toEqual([
      ['issueGrant', 'human', g.id],
      ['revokeGrant', 'human', g.id],
    ]);
  });

  it('does not revoke, or show the history of, a grant of another store', async () => {
    await addStore(s.env, { shopDomain: 'other.myshopify.com' });
    const otherToken = await addGrant(s.env, 'observer', { shop: 'other.myshopify.com' });
    const other = (await grantsOf()).find((g) => g.storeId !== s.store.id)!;
    const r = await s.post(agentsPage, { csrf: s.csrf, action: 'revoke', grantId: other.id });
    expect(r.status).toBe(404);
    expect((await call(s.env, 'GET', '/agent/v1/grant', { token: otherToken })).status).toBe(200);
    const history = await s.get(agentsPage, `grant=${other.id}`);
    expect(history.status).toBe(404);
  });

  it('escapes grant labels and agent-written values on the list and the history', async () => {
    const payloads = ['<script>alert(1)</script>', '"><img src=x onerror=alert(2)>', "'><svg onload=alert(3)>"];
    for (const label of payloads) await issueThroughPage({ tier: 'operator', ttl: '1h', label });
    const ids = (await grantsOf()).filter((g) => payloads.includes(g.label)).map((g) => g.id);
    expect(ids).toHaveLength(3);
    const pages = [htmlOf(await s.get(agentsPage))];
    for (const id of ids) pages.push(htmlOf(await s.get(agentsPage, `grant=${id}`)));
    for (const page of pages) expect(page).not.toMatch(/<script>|<img|<svg/);
    expect(pages[0]).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
  });
});
