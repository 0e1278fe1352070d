/**
 * `hookrelay mcp` that cannot start (no token, an unknown profile, nothing listening at the base URL): the reason
 * is one line on stderr and, when the client has sent its initialize, a JSON-RPC error frame answering it; stdout
 * never carries anything but frames, and the exit code says what went wrong.
 */
import { afterAll, describe, expect, it } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { closedPort, ENTRY, scratchHome } from '../cli/harness.ts';
import { INITIALIZE } from './harness.ts';

const SLOW = 30_000;
const home = scratchHome();
afterAll(() => home.cleanup());

const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home.dir,
  XDG_CONFIG_HOME: `${home.dir}/.config`,
  NO_COLOR: '1',
  ...extra,
});

/** The bridge with `stdin` written up front, run to its exit. */
async function bridge(args: string[], stdin: string | null, extra: Record<string, string> = {}) {
  const proc = Bun.spawn(['bun', ENTRY, 'mcp', ...args], {
    cwd: home.dir,
    env: env(extra),
    stdin: stdin === null ? 'ignore' : Buffer.from(stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** Every line of stdout parsed: a line that is not a JSON-RPC 2.0 frame fails the test. */
function frames(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const frame = JSON.parse(l);
      expect(frame.jsonrpc).toBe('2.0');
      return frame;
    });
}

const frame = (m: unknown) => `${JSON.stringify(m)}\n`;

describe('hookrelay mcp start-up failures', () => {
  it(
    'a usage error (an unknown flag) goes to stderr, one line, never to stdout, and exits 2',
    async () => {
      const r = await bridge(['--bogus'], frame(INITIALIZE));
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!).error).toMatchObject({ code: 'usage', message: expect.stringContaining('--bogus') });
    },
    SLOW,
  );

  it(
    'without a token answers the initialize with a JSON-RPC error, says why on stderr, and exits 3',
    async () => {
      const r = await bridge([], frame(INITIALIZE));
      expect(r.code).toBe(3);
      const out = frames(r.stdout);
      expect(out).toHaveLength(1);
      expect(out[0]).toMatchObject({ id: 1, error: { code: -32000, data: { code: 'unauthorized', exitCode: 3 } } });
      expect(out[0].error.message).toContain('No grant token');
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('hookrelay mcp cannot start: No grant token');
    },
    SLOW,
  );

  it(
    'without a token names the variable it read (--token-env, or HOOKRELAY_TOKEN), in the frame and on stderr',
    async () => {
      const named = await bridge(['--token-env', 'MY_GRANT_TOKEN'], frame(INITIALIZE));
      expect(named.code).toBe(3);
      expect(frames(named.stdout)[0].error.message).toContain('the variable MY_GRANT_TOKEN is not set');
      expect(named.stderr).toContain('No grant token: the variable MY_GRANT_TOKEN is not set (read from --token-env MY_GRANT_TOKEN)');
      const none = await bridge([], frame(INITIALIZE));
      expect(frames(none.stdout)[0].error.message).toContain('HOOKRELAY_TOKEN');
    },
    SLOW,
  );

  it(
    'shows the reason to an SDK client, as a desktop client would show it, instead of "Connection closed"',
    async () => {
      const transport = new StdioClientTransport({ command: 'bun', args: [ENTRY, 'mcp', '--profile', 'nope'], cwd: home.dir, env: env(), stderr: 'pipe' });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const client = new Client({ name: 'desktop-test', version: '1.0.0' });
      await expect(client.connect(transport)).rejects.toThrow('No profile nope');
      await client.close();
      expect(stderr).toContain('hookrelay mcp cannot start: No profile nope');
    },
    SLOW,
  );

  it(
    'with stdin closed before any frame writes nothing on stdout',
    async () => {
      const r = await bridge(['--profile', 'nope'], null);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('No profile nope');
    },
    SLOW,
  );

  it(
    'answers an initialize it cannot forward with where it could not reach, and exits 7 once the client hangs up',
    async () => {
      const base = `http://127.0.0.1:${closedPort()}`;
      const r = await bridge([], frame(INITIALIZE), { HOOKRELAY_BASE_URL: base, HOOKRELAY_TOKEN: `hrg_${'a1'.repeat(20)}` });
      expect(r.code).toBe(7);
      const out = frames(r.stdout);
      expect(out).toHaveLength(1);
      expect(out[0]).toMatchObject({ id: 1, error: { code: -32000 } });
      expect(out[0].error.message).toContain(`Cannot reach ${base}`);
      expect(r.stderr).toContain(base);
      expect(r.stderr).not.toContain('a1a1a1');
    },
    SLOW,
  );
});
