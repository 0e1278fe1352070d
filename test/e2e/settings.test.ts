/**
 * hookrelay.toml on a real serve: read from the data directory at start, named on the start-up line with the
 * variables that override it, in effect (plan usage, endpoint URLs), beaten by a flag; a bad file stops serve with
 * exit 2 and the rule, before anything listens.
 */
import { afterAll, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort } from '../cli/harness.ts';
import { until } from '../fixtures/handoff.ts';
import { runToExit, spawnServe, type ServeProcess } from '../fixtures/serve-process.ts';

setDefaultTimeout(60_000);

const root = mkdtempSync(join(tmpdir(), 'hookrelay-settings-e2e-'));
const running: ServeProcess[] = [];
afterAll(async () => {
  for (const s of running) s.proc.kill('SIGKILL');
  await Promise.all(running.map((s) => s.proc.exited));
  rmSync(root, { recursive: true, force: true });
});

async function box(name: string, toml: string) {
  const dataDir = join(root, name);
  mkdirSync(dataDir);
  expect((await runToExit(['init', '--shop', `${name}.myshopify.com`, '--data-dir', dataDir], root)).code).toBe(0);
  const grant = await runToExit(['grant', 'issue', '--shop', `${name}.myshopify.com`, '--tier', 'operator', '--ttl', '1h', '--data-dir', dataDir], root);
  writeFileSync(join(dataDir, 'hookrelay.toml'), toml);
  return { dataDir, token: grant.json.token as string };
}

it('serve reads hookrelay.toml, says so, and the settings are in effect; a variable beats the file and a flag beats both', async () => {
  const { dataDir, token } = await box(
    'toml',
    'public_url = "https://relay.example.com"\n[retention]\nevents = "30d"\naudit = "60d"\n[rate_limits.rich_read]\ngrant = 3\n',
  );
  const server = await spawnServe(dataDir, closedPort(), { env: { HOOKRELAY_RETENTION_AUDIT: '90d' } });
  running.push(server);
  await until(() => server.stderr().includes('listening'), 10_000);
  const line = server
    .stderr()
    .split('\n')
    .find((l) => l.includes('settings:'))!;
  expect(line).toContain(`file ${join(dataDir, 'hookrelay.toml')} (public_url, retention.events, rate_limits.rich_read.grant)`);
  expect(line).toContain('environment: HOOKRELAY_RETENTION_AUDIT');
  expect(server.stderr()).toContain('public URL https://relay.example.com');

  const auth = { authorization: `Bearer ${token}` };
  const usage = ((await (await fetch(`${server.url}/agent/v1/plan-usage`, { headers: auth })).json()) as any).data.settings.values;
  const byKey = Object.fromEntries(usage.map((v: { key: string; value: unknown; source: string }) => [v.key, `${v.value} ${v.source}`]));
  expect(byKey).toMatchObject({
    public_url: 'https://relay.example.com file',
    'retention.events': '30d file',
    'retention.audit': '90d environment',
    'retention.intents': '90d default',
    'rate_limits.rich_read.grant': '3 file',
  });
  // The file's rate limit is the one enforced: the fourth rich read in a minute is refused.
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await fetch(`${server.url}/agent/v1/events`, { headers: auth })).status);
  expect(statuses).toEqual([200, 200, 200, 429]);
  server.proc.kill('SIGTERM');
  await server.proc.exited;

  // The flag beats the variable, which beats the file.
  const flagged = await spawnServe(dataDir, closedPort(), {
    env: { HOOKRELAY_PUBLIC_URL: 'https://env.example.com' },
    args: ['--public-url', 'https://flag.example.com'],
  });
  running.push(flagged);
  await until(() => flagged.stderr().includes('listening'), 10_000);
  expect(flagged.stderr()).toContain('public URL https://flag.example.com');
  const shown = ((await (await fetch(`${flagged.url}/agent/v1/plan-usage`, { headers: auth })).json()) as any).data.settings.values;
  expect(shown.find((v: { key: string }) => v.key === 'public_url')).toEqual({ key: 'public_url', value: 'https://flag.example.com', source: 'flag' });
});

it('a bad hookrelay.toml stops serve (exit 2) with the file, the key and the rule', async () => {
  const { dataDir } = await box('bad', '[retention]\nevents = "1d"\n');
  const r = await runToExit(['serve', '--port', String(closedPort()), '--data-dir', dataDir], root, 20_000);
  expect(r.code).toBe(2);
  expect(r.json.error.message).toContain(`${join(dataDir, 'hookrelay.toml')}: retention.events must be a duration like 90d, from 2d to 3650d`);
});

it('a misspelt HOOKRELAY_ variable is named once at start with the closest known one, never its value', async () => {
  const { dataDir } = await box('stray', '');
  const value = 'stray-value-canary-4411';
  const server = await spawnServe(dataDir, closedPort(), { env: { HOOKRELAY_RETENTON_EVENTS: value, HOOKRELAY_RETENTION_AUDIT: '90d' } });
  running.push(server);
  await until(() => server.stderr().includes('listening'), 10_000);
  const warned = server
    .stderr()
    .split('\n')
    .filter((l) => l.includes('HOOKRELAY_RETENTON_EVENTS'));
  expect(warned).toHaveLength(1);
  expect(warned[0]).toContain('did you mean HOOKRELAY_RETENTION_EVENTS?');
  expect(server.stderr()).not.toContain(value);
  // A variable hookrelay reads is not warned about.
  expect(server.stderr()).not.toContain('HOOKRELAY_RETENTION_AUDIT is set');
});
