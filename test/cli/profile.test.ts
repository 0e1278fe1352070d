import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, closedPort, scratchHome, startApi, type Api } from './harness.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

let api: Api;
let home: ReturnType<typeof scratchHome>;
let observer: string;
let admin: string;
let dead: string;

beforeAll(async () => {
  api = await startApi();
  home = scratchHome();
  observer = await api.grant('observer');
  admin = await api.grant('admin_assistant');
  dead = `http://127.0.0.1:${closedPort()}`;
});

afterAll(async () => {
  await api.stop();
  home.cleanup();
});

const run = (args: string[], env: Record<string, string | undefined> = {}) => cli(args, { home: home.dir, env });
const profilesFile = () => join(home.dir, '.config/hookrelay/profiles.json');

describe('profile', () => {
  it('adds, lists, shows and removes profiles in $XDG_CONFIG_HOME/hookrelay/profiles.json, owner-only', async () => {
    const add = await run(['profile', 'add', 'prod', '--base-url', `${api.url}/`, '--token-env', 'PROD_TOKEN', '--expect-shop-domain', 'demo.myshopify.com'], {
      PROD_TOKEN: admin,
    });
    expect(add.code).toBe(0);
    expect(add.json).toMatchObject({ saved: 'prod', file: profilesFile() });
    expect(add.json.profile).toEqual({ name: 'prod', baseUrl: api.url, tokenEnv: 'PROD_TOKEN', expectedShopDomain: 'demo.myshopify.com', tokenEnvSet: true });
    expect(statSync(profilesFile()).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(profilesFile(), 'utf8'))).toEqual({
      profiles: { prod: { baseUrl: api.url, tokenEnv: 'PROD_TOKEN', expectedShopDomain: 'demo.myshopify.com' } },
    });

    const dup = await run(['profile', 'add', 'prod', '--base-url', api.url, '--token-env', 'X']);
    expect(dup.code).toBe(2);
    const replaced = await run(['profile', 'add', 'prod', '--base-url', api.url, '--token-env', 'PROD_TOKEN', '--force']);
    expect(replaced.code).toBe(0);
    expect(replaced.stderr).toContain('PROD_TOKEN is not set');
    expect(replaced.json.profile.tokenEnvSet).toBe(false);

    await run(['profile', 'add', 'staging', '--base-url', dead, '--token-env', 'STAGING_TOKEN']);
    const list = await run(['profile', 'list'], { HOOKRELAY_PROFILE: 'staging' });
    expect(list.code).toBe(0);
    expect(list.json.profiles.map((p: { name: string }) => p.name)).toEqual(['prod', 'staging']);
    expect(list.json.active).toEqual({ name: 'staging', source: 'env' });

    const show = await run(['profile', 'show', 'staging']);
    expect(show.code).toBe(0);
    expect(show.json.profile).toMatchObject({ name: 'staging', baseUrl: dead, tokenEnv: 'STAGING_TOKEN', tokenEnvSet: false });

    const removed = await run(['profile', 'remove', 'staging']);
    expect(removed.code).toBe(0);
    expect(Object.keys(JSON.parse(readFileSync(profilesFile(), 'utf8')).profiles)).toEqual(['prod']);
    expect((await run(['profile', 'show', 'staging'])).code).toBe(6);
    expect((await run(['profile', 'remove', 'staging'])).code).toBe(6);
  });

  it('refuses a token given as --token-env and never writes it', async () => {
    const before = readFileSync(profilesFile(), 'utf8');
    for (const value of [admin, `Bearer ${admin}`, 'whsec_0123456789abcdefABCDEF', 'aB3dE5gH7jK9mN1pQ3sT5vW7yZ9']) {
      const r = await run(['profile', 'add', 'leaky', '--base-url', api.url, '--token-env', value], { HOOKRELAY_TOKEN: admin });
      expect(r.code).toBe(2);
      expect(r.json.error.message).toContain('NAME of the environment variable');
      expect(r.stdout + r.stderr).not.toContain(admin);
    }
    expect(readFileSync(profilesFile(), 'utf8')).toBe(before);
  });

  it('refuses credentials in the base URL and a token in an expected-context field', async () => {
    const url = await run(['profile', 'add', 'x', '--base-url', 'https://me:pw@hookrelay.example', '--token-env', 'T']);
    expect(url.code).toBe(2);
    const ctx = await run(['profile', 'add', 'x', '--base-url', api.url, '--token-env', 'T', '--expect-installation-id', admin]);
    expect(ctx.code).toBe(2);
    expect(ctx.stdout).not.toContain(admin);
  });

  it('refuses to use a profiles file that holds a token, without echoing it', async () => {
    const before = readFileSync(profilesFile(), 'utf8');
    writeFileSync(profilesFile(), JSON.stringify({ profiles: { bad: { baseUrl: api.url, tokenEnv: 'T', token: admin } } }));
    try {
      const r = await run(['whoami', '--profile', 'bad'], { T: admin });
      expect(r.code).toBe(2);
      expect(r.json.error.message).toContain('never the token');
      const list = await run(['profile', 'list']);
      expect(list.code).toBe(0);
      expect(list.json.profiles[0]).toMatchObject({ name: 'bad', invalid: expect.any(String) });
      expect(list.stdout + r.stdout).not.toContain(admin);
    } finally {
      writeFileSync(profilesFile(), before);
    }
  });

  it('exits 2 for a profile that does not exist', async () => {
    const r = await run(['whoami', '--profile', 'nope'], { HOOKRELAY_TOKEN: admin });
    expect(r.code).toBe(2);
    expect(r.json.error.message).toContain('No profile nope');
  });
});

describe('precedence: flag > environment > profile', () => {
  beforeAll(async () => {
    // prod: the live server with the admin token; broken: a dead base URL.
    await run(['profile', 'add', 'prod', '--base-url', api.url, '--token-env', 'PROD_TOKEN', '--force']);
    await run(['profile', 'add', 'broken', '--base-url', dead, '--token-env', 'BROKEN_TOKEN']);
  });

  const tierOf = (r: { json: { data: { grant: { tier: string } } } }) => r.json.data.grant.tier;

  it('uses the profile when nothing else is set', async () => {
    const r = await run(['whoami', '--profile', 'prod'], { PROD_TOKEN: admin });
    expect(r.code).toBe(0);
    expect(tierOf(r)).toBe('admin_assistant');
    expect(r.json.config.baseUrl.source).toBe('profile');
    expect(r.json.config.token.source).toBe('profile');
  });

  it('HOOKRELAY_PROFILE selects a profile; --profile beats it', async () => {
    const byEnv = await run(['whoami'], { HOOKRELAY_PROFILE: 'prod', PROD_TOKEN: admin });
    expect(byEnv.code).toBe(0);
    expect(byEnv.json.config.profile).toEqual({ name: 'prod', source: 'env' });
    const byFlag = await run(['whoami', '--profile', 'prod'], { HOOKRELAY_PROFILE: 'broken', PROD_TOKEN: admin });
    expect(byFlag.code).toBe(0);
    expect(byFlag.json.config.profile).toEqual({ name: 'prod', source: 'flag' });
  });

  it('the environment beats the profile, field by field, and says so on stderr', async () => {
    const r = await run(['whoami', '--profile', 'broken'], { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: observer });
    expect(r.code).toBe(0);
    expect(tierOf(r)).toBe('observer');
    expect(r.json.config.baseUrl).toMatchObject({ value: api.url, source: 'env' });
    expect(r.json.config.token).toMatchObject({ source: 'env', from: 'HOOKRELAY_TOKEN' });
    expect(r.stderr).toContain('HOOKRELAY_BASE_URL overrides the baseUrl of profile broken');
  });

  it('flags beat the environment and the profile', async () => {
    const r = await run(['whoami', '--profile', 'broken', '--base-url', api.url, '--token-env', 'ADMIN_TOKEN'], {
      HOOKRELAY_BASE_URL: dead,
      HOOKRELAY_TOKEN: observer,
      ADMIN_TOKEN: admin,
    });
    expect(r.code).toBe(0);
    expect(tierOf(r)).toBe('admin_assistant');
    expect(r.json.config.baseUrl).toMatchObject({ source: 'flag', from: '--base-url' });
    expect(r.json.config.token).toMatchObject({ source: 'flag', variable: 'ADMIN_TOKEN' });
  });

  it('a profile named default applies when none is chosen', async () => {
    await run(['profile', 'add', 'default', '--base-url', api.url, '--token-env', 'DEFAULT_TOKEN']);
    const r = await run(['whoami'], { DEFAULT_TOKEN: observer });
    expect(r.code).toBe(0);
    expect(r.json.config.profile).toEqual({ name: 'default', source: 'default' });
    await run(['profile', 'remove', 'default']);
  });

  it('exits 3 naming the variable when the chosen token variable is unset', async () => {
    const r = await run(['whoami', '--profile', 'prod']);
    expect(r.code).toBe(3);
    expect(r.json.error.message).toContain('PROD_TOKEN');
  });
});
