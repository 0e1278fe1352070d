/**
 * The seat's Plan page against a real app: the meters of getPlanUsage, what each cap does on this plan, and the
 * paid plans behind the app's signed subscription links when the box bills through Shopify (following one asks the
 * fake Shopify for the subscription and sends the merchant to approve it); nothing to buy on `unlimited` or where
 * the operator sets plans.
 */
import { describe, expect, it } from 'bun:test';
import { page as planPage } from '../../src/seat/pages/plan.ts';
import { fakeShopifyForFile } from '../fixtures/fake-shopify.ts';
import { htmlOf, seatOf } from '../fixtures/seat.ts';
import { addStore, createTestEnv, execSql } from '../helpers.ts';

const SHOP = 'demo.myshopify.com';
const SHOP_TOKEN = 'shpat_seat_plan_test';
const CLIENT = { clientId: 'seat-plan-client-0001', clientSecret: 'seat-plan-app-secret-canary' };
const fake = fakeShopifyForFile({ token: SHOP_TOKEN, app: CLIENT, shop: { domain: SHOP } });

async function setup(plan: string, billing: 'shopify-test' | 'off') {
  const vars: Record<string, string> = {
    SHOP_TOKEN,
    HOOKRELAY_SHOPIFY_CLIENT_ID: CLIENT.clientId,
    HOOKRELAY_SHOPIFY_APP_SECRET: CLIENT.clientSecret,
    HOOKRELAY_BILLING: billing,
  };
  const env = await createTestEnv({ shopifyAdminUrl: fake.url, env: (n) => vars[n] });
  await addStore(env, { plan, destination: 'shopify', adminTokenEnv: 'SHOP_TOKEN' });
  return env;
}

/** The choose links of the page, by plan, entities decoded. */
const chooseLinks = (page: string) =>
  Object.fromEntries(
    [...page.matchAll(/<a href="([^"]+)" target="_top" class="button">Choose ([a-z]+)<\/a>/g)].map((m) => [m[2]!, m[1]!.replaceAll('&#38;', '&')]),
  );

describe('Plan page', () => {
  it('on unlimited: every meter counted, nothing capped, nothing to buy', async () => {
    const env = await setup('unlimited', 'shopify-test');
    const page = htmlOf(await (await seatOf(env)).get(planPage));
    expect(page).toContain('Plan <strong>unlimited</strong>');
    expect(page).toContain('<th scope="row">accepted events</th><td>0</td><td>no cap</td>');
    expect(page).toContain('Nothing is capped on the <strong>unlimited</strong> plan');
    expect(page).toContain('Nothing to buy');
    expect(chooseLinks(page)).toEqual({});
  });

  it('on free with billing on: the caps and what they do, the paid plans behind signed links that lead to approval in Shopify', async () => {
    const env = await setup('free', 'shopify-test');
    const page = htmlOf(await (await seatOf(env)).get(planPage));
    expect(page).toContain('<th scope="row">replay executions</th><td>0</td><td>25</td><td>25</td>');
    expect(page).toContain('events over the cap are <strong>held</strong>');
    expect(page).toContain('further replays are refused (402)');
    const links = chooseLinks(page);
    expect(Object.keys(links)).toEqual(['starter', 'growth', 'scale']);
    expect(links.growth).toStartWith('http://local/billing/subscribe?shop=demo.myshopify.com&plan=growth&expires=');

    // The link is the app's subscription flow: Shopify is asked, and the merchant is sent to approve there.
    const started = await env.app.fetch(new Request(links.growth!));
    expect(started.status).toBe(302);
    expect(started.headers.get('location')).toMatch(new RegExp(`^https://${SHOP}/admin/charges/\\d+/confirm_recurring_application_charge`));
    expect(fake.subscriptions.at(-1)).toMatchObject({ name: 'hookrelay growth', status: 'PENDING', test: true });
  });

  it('at a cap, says so first with the contract guidance', async () => {
    const env = await setup('free', 'shopify-test');
    await execSql(env, "INSERT INTO usage_counters (store_id, meter, period_start, used) SELECT id, 'replay_executions', created_at, 25 FROM stores");
    const page = htmlOf(await (await seatOf(env)).get(planPage));
    expect(page).toStartWith('<div class="problem" role="status"><p>A meter is exhausted');
    expect(page).toContain('<td><span class="enforcement enforcement-exhausted">at the cap</span></td>');
  });

  it('with billing off: the operator sets the plan, no link to buy', async () => {
    const env = await setup('free', 'off');
    const page = htmlOf(await (await seatOf(env)).get(planPage));
    expect(page).toContain('its operator sets the plan');
    expect(chooseLinks(page)).toEqual({});
  });

  it('embedded: Polaris sections around the same content', async () => {
    const env = await setup('free', 'shopify-test');
    const page = htmlOf(await (await seatOf(env, { embedded: true, csrf: null })).get(planPage));
    expect(page).toContain('<s-section><section><h2>Current plan</h2>');
    expect(Object.keys(chooseLinks(page))).toHaveLength(3);
  });
});
