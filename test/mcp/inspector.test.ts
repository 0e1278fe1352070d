/**
 * The MCP Inspector's CLI (@modelcontextprotocol/inspector, run by Bun as a user would run `npx … --cli`) connects to
 * the real server in both protocol eras with a bearer grant, lists the two tools and calls `search`; without the
 * grant it is refused. What a person debugging a connection would try first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { join } from 'node:path';
import { startMcpServer, type McpServerUnderTest } from './harness.ts';

const CLI = join(import.meta.dir, '../../node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const SLOW = 60_000;

let s: McpServerUnderTest;
let token: string;

beforeAll(async () => {
  s = await startMcpServer();
  ({ token } = await s.grant('observer'));
}, 30_000);
afterAll(() => s.stop());

/** Runs the Inspector CLI against the MCP URL; its exit code and its JSON answer (null when it printed none). */
async function inspector(era: 'legacy' | 'modern', args: string[], bearer: string | null = token) {
  const auth = bearer ? ['--header', `Authorization: Bearer ${bearer}`] : [];
  const p = Bun.spawn(['bun', CLI, '--cli', s.mcpUrl.href, '--transport', 'http', ...auth, '--protocol-era', era, '--format', 'json', '-q', ...args], {
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  let json: any = null;
  try {
    json = JSON.parse(out);
  } catch {}
  return { code, json };
}

describe.each(['legacy', 'modern'] as const)('the Inspector CLI, %s era', (era) => {
  it(
    'lists search and execute, and calls search',
    async () => {
      const list = await inspector(era, ['--method', 'tools/list']);
      expect(list.code).toBe(0);
      expect(list.json.result.tools.map((t: { name: string }) => t.name)).toEqual(['search', 'execute']);
      const found = await inspector(era, ['--method', 'tools/call', '--tool-name', 'search', '--tool-arg', 'query=replay']);
      expect(found.code).toBe(0);
      const text = found.json.result.content[0].text as string;
      expect(JSON.parse(text).operations.map((r: { operationId: string }) => r.operationId)).toContain('createReplayIntent');
    },
    SLOW,
  );

  it(
    'is refused without a grant',
    async () => {
      const refused = await inspector(era, ['--method', 'tools/list'], null);
      expect(refused.code).not.toBe(0);
      expect(refused.json?.result).toBeUndefined();
    },
    SLOW,
  );
});
