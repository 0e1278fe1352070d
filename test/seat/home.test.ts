/**
 * Home (src/seat/pages/home.ts) through the console: setup state with the next recommended action as a real link,
 * readiness per trigger, open alerts, a paused handoff and why, plan usage with the cap and what happens at it; every
 * value escaped (an endpoint's name is an agent's text).
 */
import { beforeEach, describe, expect, it } from 'bun:test';
import { period } from '../../src/contract/plans.ts';
import { FLOW_TEMPLATES } from '../../src/contract/templates.ts';
import { issueSignInLink } from '../../src/seat/session.ts';
import { addGrant, addStore, BASE, createEndpoint, createTestEnv, type TestEnv } from '../helpers.ts';

let env: TestEnv;
const SHOP = 'demo.myshopify.com';
const XSS = '<img src=x onerror=alert(1)>"\'&';

beforeEach(async () => {
  env = await createTestEnv();
  await addStore(env);
});

async function home(): Promise<{ status: number; html: string }> {
  const link = await issueSignInLink(env.core, SHOP, 'jane@laptop');
  const signIn = await env.app.fetch(new Request(`${BASE}${new URL(link.url).pathname}${new URL(link.url).search}`));
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
  const res = await env.app.fetch(new Request(`${BASE}/console`, { headers: { cookie } }));
  return { status: res.status, html: await res.text() };
}

describe('Home', () => {
  it('a new store: the checklist, every trigger not ready, and the next step as a link to the Endpoints page', async () => {
    const { status, html } = await home();
    expect(status).toBe(200);
    expect(html).toContain('Setup checklist');
    expect(html).toContain('Create an endpoint for the sender.');
    expect(html).toContain('<a class="button primary" href="/console/endpoints">Create an endpoint</a>');
    expect(html).toContain('Relay order event received');
    expect(html).toContain('<code>hookrelay-order</code>');
    expect(html).toContain('No open alerts.');
    expect(html).not.toMatch(/\{public URL\}|&lt;shop&gt;/);
  });

  it('lists the ready workflows the app ships, and names them as the last step of the checklist', async () => {
    const { html } = await home();
    expect(html).toContain('Ready workflows');
    for (const t of FLOW_TEMPLATES) expect(html).toContain(`<strong>${t.name}</strong>`);
    const checklist = html.slice(html.indexOf('Setup checklist'), html.indexOf('</ul>', html.indexOf('Setup checklist')));
    const items = [...checklist.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) => m[1]!);
    expect(items.at(-1)).toContain('Start from a ready workflow in Shopify Flow');
    for (const t of FLOW_TEMPLATES) expect(items.at(-1)).toContain(t.name);
  });

  it('a paused handoff: why, since when and what to do', async () => {
    const store = (await env.core.repo.getStoreByShop(SHOP))!;
    const now = env.clock.now();
    await env.core.repo.links.pause(
      store.id,
      { reason: 'credentials', code: 'SVC_REINSTALL_REQUIRED', message: `No token can be had for ${SHOP}.` },
      now,
      0,
      now + 60_000,
    );
    const { html } = await home();
    expect(html).toContain('Handoff is paused');
    expect(html).toContain('SVC_REINSTALL_REQUIRED');
    expect(html).toContain(`No token can be had for ${SHOP}.`);
  });

  it('plan usage: the cap, the state and what happens at it', async () => {
    const store = (await env.core.repo.getStoreByShop(SHOP))!;
    await env.core.repo.updateStore({ ...store, plan: 'free' });
    const p = period(store, env.clock.now());
    await env.core.repo.addUsage(store.id, 'accepted_events', p.start, 100_000);
    const { html } = await home();
    expect(html).toContain('Plan <strong>free</strong>');
    expect(html).toMatch(/Accepted events<\/th><td>100,000 of [\d,]+/);
    expect(html).toContain('Events past the cap are kept and held');
    expect(html).toContain('<progress');
  });

  it('an open alert about an endpoint whose name is markup: shown escaped, inert', async () => {
    const token = await addGrant(env, 'admin_assistant');
    const { endpoint } = await createEndpoint(env, token, { triggerVariant: 'order', resourceIdPath: 'order.id', name: XSS });
    const store = (await env.core.repo.getStoreByShop(SHOP))!;
    const now = env.clock.now();
    await env.core.repo.raiseAlert(
      {
        id: 'alr_home1',
        storeId: store.id,
        endpointId: endpoint.id,
        kind: 'silence',
        state: 'open',
        openKey: `${endpoint.id}:silence`,
        since: now - 3 * 3600_000,
        raisedAt: now,
        recoveredAt: null,
        detail: '{"expectedEveryMs":7200000}',
      },
      { phase: 'raised', at: now },
    );
    const { html } = await home();
    expect(html).not.toContain('No open alerts.');
    expect(html).toContain('silence');
    expect(html).toContain('&#60;img src=x onerror=alert(1)&#62;&#34;&#39;&#38;');
    expect(html).not.toContain('<img src=x');
  });
});
