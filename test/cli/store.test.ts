/** `hookrelay store show|set`, and `init` refusing the flags it would otherwise ignore on an existing store. */
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { admin, adminBox, SPAWN_TIMEOUT_MS } from './admin-run.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const box = adminBox('hookrelay-store-');
afterAll(() => rmSync(box.root, { recursive: true, force: true }));
const cwd = box.dir('work');
const data = ['--data-dir', join(box.root, 'data')];
const SHOP = 'st.myshopify.com';
const run = (...args: string[]) => admin(box, cwd, [...args, ...data]);

describe('store settings', () => {
  it(
    'init creates; init again with differing flags refuses (exit 2) with the store set hint; same values stay idempotent',
    () => {
      expect(run('init', '--shop', SHOP).code).toBe(0);
      const refused = run('init', '--shop', SHOP, '--destination', 'shopify', '--admin-token-env', 'SHOPIFY_ADMIN_TOKEN');
      expect(refused.code).toBe(2);
      expect(refused.json.error.code).toBe('invalid_input');
      expect(refused.json.error.details.differing).toEqual(['--destination', '--admin-token-env']);
      expect(refused.json.error.details.hint).toBe(`hookrelay store set --shop ${SHOP} --destination shopify --admin-token-env SHOPIFY_ADMIN_TOKEN`);
      expect(refused.json.error.message).toContain('hookrelay store set');
      expect(run('store', 'show', '--shop', SHOP).json.stores[0]).toMatchObject({ destination: 'log', adminTokenEnv: null });

      const same = run('init', '--shop', SHOP, '--destination', 'log', '--plan', 'unlimited');
      expect(same.code).toBe(0);
      expect(same.json.created).toBe(false);
      const identity = run('init', '--shop', SHOP, '--installation-id', 'other');
      expect(identity.code).toBe(2);
      expect(identity.json.error.message).toContain('--installation-id identify the store and cannot change');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'store set validates: shopify needs a variable NAME, never a token; bad values are usage errors; nothing half-written',
    () => {
      const noToken = run('store', 'set', '--shop', SHOP, '--destination', 'shopify');
      expect(noToken.code).toBe(2);
      expect(noToken.json.error.message).toContain('--admin-token-env');
      for (const value of ['shpat_0123456789abcdef0123456789abcdef', 'SHPAT_ABCDEF', 'hrg_abc', 'lowercase_name', 'Abcdefghijklmnop1234567890XYZ']) {
        const r = run('store', 'set', '--shop', SHOP, '--destination', 'shopify', '--admin-token-env', value);
        expect(r.code, value).toBe(2);
        expect(JSON.stringify(r.json)).not.toContain(value);
      }
      expect(run('store', 'set', '--shop', SHOP, '--destination', 'carrier-pigeon').code).toBe(2);
      expect(run('store', 'set', '--shop', SHOP, '--plan', 'platinum').code).toBe(2);
      expect(run('store', 'set', '--shop', SHOP, '--public-url', 'ftp://relay.example.com').code).toBe(2);
      for (const id of ['short', 'has spaces in it', 'x'.repeat(101)]) expect(run('store', 'set', '--app-client-id', id).code, id).toBe(2);
      expect(run('store', 'set', '--shop', SHOP).code).toBe(2);
      expect(run('store', 'set', '--shop', 'nope.myshopify.com', '--plan', 'growth').code).toBe(6);
      expect(run('store', 'show').json).toMatchObject({
        stores: [{ destination: 'log', adminTokenEnv: null, plan: 'unlimited' }],
        settings: { publicUrl: null, appClientId: null },
      });
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'store set changes destination, token variable, plan and the box-wide public URL; store show and init agree',
    () => {
      const set = run(
        'store',
        'set',
        '--shop',
        SHOP,
        '--destination',
        'shopify',
        '--admin-token-env',
        'SHOPIFY_ADMIN_TOKEN',
        '--plan',
        'growth',
        '--public-url',
        'https://relay.example.com/',
      );
      expect(set.code).toBe(0);
      expect(set.json.store).toMatchObject({ shopDomain: SHOP, destination: 'shopify', adminTokenEnv: 'SHOPIFY_ADMIN_TOKEN', plan: 'growth' });
      expect(set.json.settings).toEqual({ publicUrl: 'https://relay.example.com', appClientId: null });
      expect(set.json.changed.sort()).toEqual(['adminTokenEnv', 'auth', 'destination', 'plan', 'publicUrl']);

      const shown = run('store', 'show');
      expect(shown.json.stores).toHaveLength(1);
      expect(shown.json.stores[0]).toMatchObject({ destination: 'shopify', adminTokenEnv: 'SHOPIFY_ADMIN_TOKEN', plan: 'growth' });
      expect(shown.json.settings.publicUrl).toBe('https://relay.example.com');

      // The README's go-live command is now a no-op on the store as set: same values, exit 0.
      const again = run('init', '--shop', SHOP, '--destination', 'shopify', '--admin-token-env', 'SHOPIFY_ADMIN_TOKEN');
      expect(again.code).toBe(0);
      expect(again.json.created).toBe(false);
      expect(again.stderr).toContain(`store ${SHOP}: destination shopify (Admin API token from $SHOPIFY_ADMIN_TOKEN, NOT set)`);

      const urlOnly = run('store', 'set', '--public-url', 'https://hooks.example.org');
      expect(urlOnly.code).toBe(0);
      expect(urlOnly.json).toMatchObject({ settings: { publicUrl: 'https://hooks.example.org' }, changed: ['publicUrl'] });
      expect(run('store', 'set', '--plan', 'scale').code).toBe(2);

      // The app's client id for merchants' installs is box-wide too, and needs no shop.
      const app = run('store', 'set', '--app-client-id', ' 3f9c0a1b2c3d4e5f60718293a4b5c6d7 ');
      expect(app.code).toBe(0);
      expect(app.json).toMatchObject({
        settings: { publicUrl: 'https://hooks.example.org', appClientId: '3f9c0a1b2c3d4e5f60718293a4b5c6d7' },
        changed: ['appClientId'],
      });
      expect(app.json.note).toContain('HOOKRELAY_SHOPIFY_CLIENT_ID still wins');
      expect(run('store', 'show').json.settings.appClientId).toBe('3f9c0a1b2c3d4e5f60718293a4b5c6d7');
      expect(run('store', 'set', '--app-client-id', '3f9c0a1b2c3d4e5f60718293a4b5c6d7').json.changed).toEqual([]);
    },
    SPAWN_TIMEOUT_MS,
  );
});

describe('store credentials', () => {
  it(
    'sets client credentials (client id and the NAME of the secret variable), shows them without values, and says when they apply',
    () => {
      const set = run(
        'store',
        'set',
        '--shop',
        SHOP,
        '--destination',
        'shopify',
        '--auth',
        'client-credentials',
        '--client-id',
        'a1b2c3d4e5f60718',
        '--client-secret-env',
        'SHOPIFY_CLIENT_SECRET',
      );
      expect(set.code).toBe(0);
      expect(set.json.store).toMatchObject({
        destination: 'shopify',
        auth: 'client-credentials',
        clientId: 'a1b2c3d4e5f60718',
        clientSecretEnv: 'SHOPIFY_CLIENT_SECRET',
      });
      expect(set.json.changed.sort()).toEqual(['auth', 'clientId', 'clientSecretEnv']);
      expect(set.json.note).toContain('within 5 seconds, no restart needed');
      const shown = run('store', 'show', '--shop', SHOP).json.stores[0];
      expect(shown.credentials).toEqual({
        mode: 'client-credentials',
        adminTokenEnv: 'SHOPIFY_ADMIN_TOKEN',
        clientId: 'a1b2c3d4e5f60718',
        clientSecretEnv: 'SHOPIFY_CLIENT_SECRET',
        variableSet: false,
        token: null,
      });
      expect(shown.handoff).toMatchObject({ state: 'active', code: null });
      // init with the same credentials is a no-op; a different client id is refused with the store set hint.
      expect(run('init', '--shop', SHOP, '--auth', 'client-credentials', '--client-id', 'a1b2c3d4e5f60718').code).toBe(0);
      const other = run('init', '--shop', SHOP, '--client-id', 'ffffffffffffffff');
      expect(other.code).toBe(2);
      expect(other.json.error.details.hint).toBe(`hookrelay store set --shop ${SHOP} --client-id ffffffffffffffff`);
      // Back to the static token: the mode follows the flag.
      const back = run('store', 'set', '--shop', SHOP, '--auth', 'static');
      expect(back.json.store).toMatchObject({ auth: 'static', adminTokenEnv: 'SHOPIFY_ADMIN_TOKEN' });
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'refuses what cannot work, echoing no secret: a secret as client id or variable, a half-set mode, oauth (not in this version)',
    () => {
      const cases: [string[], string][] = [
        [['--auth', 'client-credentials', '--client-id', 'shpss_0123456789abcdef0123'], 'shpss_0123456789abcdef0123'],
        [['--auth', 'client-credentials', '--client-id', 'a1b2c3d4e5f60718', '--client-secret-env', 'shpss_0123456789abcdef'], 'shpss_0123456789abcdef'],
        [
          ['--auth', 'client-credentials', '--client-id', 'a1b2c3d4e5f60718', '--client-secret-env', 'Abcdefghijklmnop1234567890XYZ'],
          'Abcdefghijklmnop1234567890XYZ',
        ],
        [['--auth', 'client-credentials', '--client-id', 'x y'], 'x y'],
        [['--auth', 'oauth'], 'oauth is set by installing'],
        [['--auth', 'magic'], 'magic'],
      ];
      for (const [flags, value] of cases) {
        const r = run('store', 'set', '--shop', 'other-cc.myshopify.com', ...flags);
        expect(r.code, flags.join(' ')).toBe(2);
        if (value.startsWith('shp') || value.startsWith('Abc')) expect(JSON.stringify(r.json)).not.toContain(value);
      }
      expect(
        run('init', '--shop', 'cc.myshopify.com', '--destination', 'shopify', '--auth', 'client-credentials', '--client-id', 'a1b2c3d4e5f60718').code,
      ).toBe(2);
      const made = run(
        'init',
        '--shop',
        'cc.myshopify.com',
        '--destination',
        'shopify',
        '--auth',
        'client-credentials',
        '--client-id',
        'a1b2c3d4e5f60718',
        '--client-secret-env',
        'CC_SECRET',
      );
      expect(made.code).toBe(0);
      expect(made.json.store).toMatchObject({ plan: 'unlimited', auth: 'client-credentials', clientSecretEnv: 'CC_SECRET' });
      expect(made.stderr).toContain(
        'store cc.myshopify.com: destination shopify (client credentials: client id a1b2c3d4e5f60718, secret from $CC_SECRET, NOT set;',
      );
    },
    SPAWN_TIMEOUT_MS,
  );
});
