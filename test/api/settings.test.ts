/**
 * The operator's settings (src/settings.ts): hookrelay.toml read and checked, each setting overridden by its
 * variable, applied to the config, and shown with its source in plan usage.
 */
import { afterAll, describe, expect, it } from 'bun:test';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/core.ts';
import { DEFAULT_RATE_LIMITS } from '../../src/contract/limits.ts';
import { describeStrayVariable, envName, KNOWN_VARIABLES, loadSettings, SETTINGS, SETTINGS_FILE, strayVariables } from '../../src/settings.ts';
import { addGrant, addStore, call, createTestEnv } from '../helpers.ts';

const DAY = 86_400_000;
const dir = mkdtempSync(join(tmpdir(), 'hookrelay-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function withFile(text: string): string {
  const d = mkdtempSync(join(dir, 'box-'));
  writeFileSync(join(d, SETTINGS_FILE), text);
  return d;
}

const FULL = `
public_url = "https://relay.example.com/"
retry_schedule = ["10s", "1m", "1h"]

[rate_limits.rich_read]
grant = 12
store = 60

[retention]
bodies = "7d"
events = "30d"
audit = "2d"

[sandbox]
cpu_ms = 500
memory_mb = 64
`;

describe('loadSettings', () => {
  it('reads hookrelay.toml from the data directory and applies every setting it names; the rest keep their defaults', () => {
    const loaded = loadSettings({ dataDir: withFile(FULL), env: {} });
    const config = defaultConfig();
    loaded.apply(config);
    expect(config.publicUrl).toBe('https://relay.example.com');
    expect(config.handoff.retrySchedule).toEqual([10_000, 60_000, 3_600_000]);
    expect(config.rateLimits.rich_read).toEqual({ grant: 12, store: 60 });
    expect(config.rateLimits.simple_read).toEqual(DEFAULT_RATE_LIMITS.simple_read);
    expect(config.bodyRetentionMs).toBe(7 * DAY);
    expect(config.retention).toMatchObject({ events: 30 * DAY, audit: 2 * DAY, intents: 90 * DAY });
    expect(config.mcp.limits).toMatchObject({ cpuMs: 500, memoryBytes: 64 * 1024 * 1024, maxCalls: 50 });
    expect(config.settingSources['retention.events']).toBe('file');
    expect(config.settingSources['retention.intents']).toBeUndefined();
  });

  it('lets each variable override the file', () => {
    const loaded = loadSettings({
      dataDir: withFile(FULL),
      env: { HOOKRELAY_RETENTION_EVENTS: '60d', HOOKRELAY_RETRY_SCHEDULE: '5s,30s', HOOKRELAY_RATE_LIMITS_RICH_READ_GRANT: '7' },
    });
    const config = defaultConfig();
    loaded.apply(config);
    expect(config.retention.events).toBe(60 * DAY);
    expect(config.handoff.retrySchedule).toEqual([5_000, 30_000]);
    expect(config.rateLimits.rich_read).toEqual({ grant: 7, store: 60 });
    expect(config.settingSources).toMatchObject({ 'retention.events': 'environment', retry_schedule: 'environment', 'retention.audit': 'file' });
  });

  it('names every setting by one rule: HOOKRELAY_ and the key', () => {
    expect(envName('retention.auth_failures')).toBe('HOOKRELAY_RETENTION_AUTH_FAILURES');
    expect(envName('public_url')).toBe('HOOKRELAY_PUBLIC_URL');
    expect(new Set(SETTINGS.map((s) => envName(s.key))).size).toBe(SETTINGS.length);
  });

  it('refuses an unknown key, a bad value, a file that is not TOML and a missing --config file, naming where and the rule', () => {
    const fail = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return { code: (err as { code: string }).code, message: (err as Error).message };
      }
      throw new Error('did not throw');
    };
    const unknown = fail(() => loadSettings({ dataDir: withFile('[retention]\nevent = "30d"\n'), env: {} }));
    expect(unknown.code).toBe('invalid_input');
    expect(unknown.message).toContain(`${SETTINGS_FILE}: unknown setting retention.event (did you mean retention.events?)`);
    expect(fail(() => loadSettings({ dataDir: withFile('[retention]\nevents = "1d"\n'), env: {} })).message).toContain(
      'retention.events must be a duration like 90d, from 2d to 3650d',
    );
    expect(fail(() => loadSettings({ dataDir: withFile('[sandbox]\ncpu_ms = 5\n'), env: {} })).message).toContain(
      'sandbox.cpu_ms must be a whole number from 100 to 60000',
    );
    expect(fail(() => loadSettings({ dataDir: withFile('public_url = "ftp://x"\n'), env: {} })).message).toContain('public_url must be an http(s) URL');
    expect(fail(() => loadSettings({ dataDir: withFile('retry_schedule = "5s,never"\n'), env: {} })).message).toContain(
      'retry_schedule must be 1 to 30 delays',
    );
    expect(fail(() => loadSettings({ dataDir: withFile('[retention]\nevents = = "30d"\n'), env: {} })).message).toContain('not valid TOML');
    expect(fail(() => loadSettings({ file: join(dir, 'nope.toml'), env: {} })).message).toContain('nope.toml: no such file');
    // A file that cannot be read is said so, not called bad TOML.
    expect(fail(() => loadSettings({ file: dir, env: {} })).message).toBe(`${dir}: not readable (EISDIR).`);
    expect(fail(() => loadSettings({ env: { HOOKRELAY_RETENTION_AUDIT: 'soon' } })).message).toContain(
      'HOOKRELAY_RETENTION_AUDIT: retention.audit must be a duration',
    );
  });

  it('names the line of a TOML syntax error', () => {
    const message = (text: string) => {
      try {
        loadSettings({ dataDir: withFile(text), env: {} });
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('loadSettings accepted invalid TOML');
    };
    expect(message('public_url = "https://relay.example.com"\n\n[retention]\nbodies = 30d\naudit = "400d"\n')).toContain('not valid TOML at line 4 (');
    expect(message('[retention]\nevents = = "30d"\n')).toContain('at line 2 (');
    expect(message('retry_schedule = [\n  "5s",\n  "1m",\n]\n[sandbox]\ncpu_ms = "unterminated\n')).toContain('at line 6 (');
    // An array never closed: the line it opens on.
    expect(message('[retention]\naudit = "400d"\nretry_schedule = ["5s",\n  "1m"\n')).toContain('at line 3 (');
  });

  it('finds HOOKRELAY_ variables hookrelay reads nowhere, with the closest known name; never their values', () => {
    const env = {
      HOOKRELAY_RETENTON_EVENTS: 'v1',
      HOOKRELAY_DATABSE_URL: 'postgres://u:pw@db/x',
      HOOKRELAY_PUBLIC_URL: 'https://relay.example.com',
      HOOKRELAY_TOKEN_PROD: 'a profile token',
      HOOKRELAY_SHOP_TOKEN: 'a store names this variable',
      PATH: '/bin',
    };
    const stray = strayVariables(env, ['HOOKRELAY_SHOP_TOKEN']);
    expect(stray).toEqual([
      { name: 'HOOKRELAY_DATABSE_URL', closest: 'HOOKRELAY_DATABASE_URL' },
      { name: 'HOOKRELAY_RETENTON_EVENTS', closest: 'HOOKRELAY_RETENTION_EVENTS' },
    ]);
    const lines = stray.map(describeStrayVariable).join('\n');
    expect(lines).toContain('HOOKRELAY_DATABSE_URL is set');
    for (const v of Object.values(env)) expect(lines).not.toContain(v);
  });

  it('knows every HOOKRELAY_ variable the source names', () => {
    const names = new Set<string>();
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else if (e.name.endsWith('.ts')) for (const m of readFileSync(join(d, e.name), 'utf8').matchAll(/HOOKRELAY_[A-Z0-9_]*[A-Z0-9]\b/g)) names.add(m[0]);
      }
    };
    const root = join(import.meta.dir, '../..');
    for (const d of ['src', 'commands', 'db']) walk(join(root, d));
    // HOOKRELAY_COMPILED is a build-time constant; HOOKRELAY_SECRET is an example of a name an operator chooses (sign --secret-env).
    const unknown = strayVariables(Object.fromEntries([...names].map((n) => [n, 'x'])), ['HOOKRELAY_COMPILED', 'HOOKRELAY_SECRET']);
    expect(unknown).toEqual([]);
    expect(KNOWN_VARIABLES).toContain('HOOKRELAY_RETENTION_BODIES');
  });

  it('reads nothing when there is no file and no variable', () => {
    const loaded = loadSettings({ dataDir: mkdtempSync(join(dir, 'empty-')), env: {} });
    expect(loaded.file).toBeNull();
    expect(loaded.sources).toEqual({});
  });
});

describe('plan usage', () => {
  it('shows the settings in effect and where each came from', async () => {
    const env = await createTestEnv();
    loadSettings({ dataDir: withFile(FULL), env: { HOOKRELAY_RETENTION_AUDIT: '3d' } }).apply(env.core.config);
    await addStore(env);
    const token = await addGrant(env, 'observer');
    const usage = (await call(env, 'GET', '/agent/v1/plan-usage', { token })).json.data;
    expect(usage.settings.precedence).toContain('environment variables');
    const byKey = Object.fromEntries(usage.settings.values.map((v: { key: string }) => [v.key, v]));
    expect(byKey['retention.events']).toEqual({ key: 'retention.events', value: '30d', source: 'file' });
    expect(byKey['retention.audit']).toEqual({ key: 'retention.audit', value: '3d', source: 'environment' });
    expect(byKey['retention.intents']).toEqual({ key: 'retention.intents', value: '90d', source: 'default' });
    expect(byKey['rate_limits.rich_read.grant']).toEqual({ key: 'rate_limits.rich_read.grant', value: 12, source: 'file' });
    expect(byKey.retry_schedule).toEqual({ key: 'retry_schedule', value: '10s,1m,1h', source: 'file' });
    expect(byKey['retention.requests'].source).toBe('default');
  });
});
