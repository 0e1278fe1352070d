/**
 * Where a person is told to install the app again, the link is the real one: the box's public URL and the
 * store's shop, never a placeholder (setup state, the reliability read, event detail, store show, alerts, and
 * the refusal of `store set --auth oauth`).
 */
import { describe, expect, it } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { linkCheckAdvice } from '../../src/contract/platform.ts';
import { markUninstalled } from '../../src/platform/shopify/app-install.ts';
import { setStoreSettings, showStores } from '../../src/ops/stores.ts';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from '../cli/admin-run.ts';
import { addGrant, addStore, call, createEndpoint, createTestEnv, orderEvent, sendHook } from '../helpers.ts';

const PUBLIC = 'https://relay.example.com';
const SHOP = 'corner-shop.myshopify.com';
const LINK = `${PUBLIC}/auth/install?shop=${SHOP}`;

function noPlaceholder(text: string) {
  expect(text).not.toContain('{public URL}');
  expect(text).not.toContain('<shop>');
}

describe('the install link shown to people', () => {
  it("names the public URL and the store's shop wherever an uninstalled store's pause is described", async () => {
    const e = await createTestEnv({ publicUrl: `${PUBLIC}/` });
    await addStore(e, { shopDomain: SHOP });
    const grant = await addGrant(e, 'admin_assistant', { shop: SHOP });
    const { endpoint, secret } = await createEndpoint(e, grant);
    await markUninstalled(e.core, SHOP, e.clock.now());
    const sent = await sendHook(e, endpoint, secret, orderEvent('waits-1'));

    const setup = (await call(e, 'GET', '/agent/v1/setup-state', { token: grant })).json.data;
    expect(setup.handoff.code).toBe('SVC_APP_UNINSTALLED');
    expect(setup.handoff.recommendedAction).toContain(LINK);
    noPlaceholder(JSON.stringify(setup));

    const reliability = (await call(e, 'GET', '/agent/v1/reliability/tenant', { token: grant })).json;
    noPlaceholder(JSON.stringify(reliability));
    expect(JSON.stringify(reliability)).toContain(LINK);

    const detail = (await call(e, 'GET', `/agent/v1/events/${sent.json.eventId}`, { token: grant })).json.data.event;
    expect(detail.handoffPause.recommendedAction).toContain(LINK);

    const shown = await showStores(e.core, SHOP);
    expect(shown.stores[0]!.handoff.recommendedAction).toContain(LINK);
    noPlaceholder(JSON.stringify(shown));
  });

  it("names them in doctor's advice for a live check that finds the app uninstalled", () => {
    const advice = linkCheckAdvice('app_uninstalled', { publicUrl: PUBLIC, shopDomain: SHOP })!;
    expect(advice).toContain(LINK);
    noPlaceholder(advice);
  });

  it('names them when store set refuses --auth oauth', async () => {
    const e = await createTestEnv({ publicUrl: PUBLIC });
    await addStore(e, { shopDomain: SHOP });
    const refused = await setStoreSettings(e.core, SHOP, { auth: 'oauth' }).catch((err: Error) => err.message);
    expect(refused).toContain(LINK);
    noPlaceholder(String(refused));
  });
});

describe('hookrelay store set (and init) --auth oauth', () => {
  it(
    "names the public URL serve advertises (the box-wide setting, or HOOKRELAY_PUBLIC_URL) and the store's shop; init --auth oauth too",
    () => {
      const box = adminBox();
      try {
        const cwd = box.dir('work');
        const dataDir = ['--data-dir', join(box.root, 'data')];
        expect(admin(box, cwd, ['init', '--shop', SHOP, ...dataDir]).code).toBe(0);
        expect(admin(box, cwd, ['store', 'set', '--public-url', PUBLIC, ...dataDir]).code).toBe(0);
        const stored = admin(box, cwd, ['store', 'set', '--shop', SHOP, '--auth', 'oauth', ...dataDir]);
        expect(stored.code).not.toBe(0);
        expect(JSON.stringify(stored.json)).toContain(LINK);
        const init = admin(box, cwd, ['init', '--shop', 'second.myshopify.com', '--auth', 'oauth', ...dataDir]);
        expect(JSON.stringify(init.json)).toContain(`${PUBLIC}/auth/install?shop=second.myshopify.com`);
        const fromEnv = admin(box, cwd, ['store', 'set', '--shop', SHOP, '--auth', 'oauth', ...dataDir], { HOOKRELAY_PUBLIC_URL: 'https://other.example.com' });
        expect(JSON.stringify(fromEnv.json)).toContain(`https://other.example.com/auth/install?shop=${SHOP}`);
      } finally {
        rmSync(box.root, { recursive: true, force: true });
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});
