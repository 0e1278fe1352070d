/**
 * The MCP conformance suite (@modelcontextprotocol/conformance, its CLI run by Bun: it wants Node >= 22) against the
 * real server, all its server scenarios, offline. The suite sends no credentials, so a loopback proxy in front adds a
 * grant's bearer token and passes every other header (Host and Origin included) on unchanged. Scenarios that assume
 * tools, resources or prompts hookrelay does not have are the baseline (test/fixtures/mcp-conformance-baseline.yml);
 * the CLI fails on any other failure and on a baseline entry that passes.
 */
import { afterAll, beforeAll, expect, it } from 'bun:test';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMcpServer, type McpServerUnderTest } from './harness.ts';

const CLI = join(import.meta.dir, '../../node_modules/@modelcontextprotocol/conformance/dist/index.js');
const BASELINE = join(import.meta.dir, '../fixtures/mcp-conformance-baseline.yml');
/** The scenarios that apply to hookrelay: each must pass with at least one check, none failed. */
const APPLY = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

let s: McpServerUnderTest;
let proxy: ReturnType<typeof Bun.serve>;
let out: string;

beforeAll(async () => {
  s = await startMcpServer();
  const { token } = await s.grant('observer');
  proxy = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const headers = new Headers(req.headers);
      headers.set('authorization', `Bearer ${token}`);
      const body = req.method === 'POST' ? await req.arrayBuffer() : undefined;
      return fetch(s.mcpUrl, { method: req.method, headers, body });
    },
  });
  out = mkdtempSync(join(tmpdir(), 'hookrelay-conformance-'));
}, 30_000);
afterAll(async () => {
  await proxy.stop(true);
  await s.stop();
  rmSync(out, { recursive: true, force: true });
});

it('passes every server scenario that applies; the rest fail only as the baseline says', async () => {
  const url = `http://127.0.0.1:${proxy.port}/mcp`;
  const run = Bun.spawn(['bun', CLI, 'server', '--url', url, '--suite', 'all', '--expected-failures', BASELINE, '-o', out], {
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  expect(code, `${stdout.slice(-3000)}\n${stderr}`).toBe(0);
  expect(stdout).toContain('Baseline check passed');

  for (const scenario of APPLY) {
    const dir = readdirSync(out).find((d) => d.startsWith(`server-${scenario}-`));
    expect(dir, scenario).toBeDefined();
    const checks = JSON.parse(readFileSync(join(out, dir!, 'checks.json'), 'utf8')) as { status: string }[];
    expect(checks.filter((c) => c.status === 'SUCCESS').length, scenario).toBeGreaterThan(0);
    expect(
      checks.filter((c) => c.status === 'FAILURE'),
      scenario,
    ).toEqual([]);
  }
}, 60_000);
