/** The compiled executable carries code mode: the sandbox worker and the QuickJS wasm are embedded. */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { closedPort } from '../cli/harness.ts';
import { compiledBinary } from '../fixtures/binary.ts';
import { execute } from './harness.ts';

let dir: string;
let bin: string;
let server: ReturnType<typeof Bun.spawn> | null = null;

beforeAll(async () => {
  ({ dir, bin } = await compiledBinary('hookrelay-mcp-bin-'));
}, 120_000);

afterAll(() => {
  server?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('dist/hookrelay MCP', () => {
  it('runs execute in the embedded sandbox, and stops runaway code', async () => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir };
    const run = (args: string[]) => JSON.parse(Bun.spawnSync([bin, ...args, '--data-dir', 'data'], { cwd: dir, env }).stdout.toString());
    run(['init', '--shop', 'bin.myshopify.com']);
    const { token } = run(['grant', 'issue', '--shop', 'bin.myshopify.com', '--tier', 'observer', '--ttl', '1h']);
    const port = closedPort();
    server = Bun.spawn([bin, 'serve', '--port', String(port), '--data-dir', 'data'], { cwd: dir, env, stdout: 'ignore', stderr: 'ignore' });
    const base = `http://127.0.0.1:${port}`;
    const until = Date.now() + 10_000;
    while (Date.now() < until && !(await fetch(`${base}/status`).then((r) => r.ok, () => false))) await Bun.sleep(50);

    const client = new Client({ name: 'bin-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/agent/v1/mcp', base), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    try {
      const read = await execute(client, `return (await api.call('getCurrentAgentGrant')).data.grant.tier;`);
      expect(read.doc).toMatchObject({ result: 'observer', calls: 1 });
      const loop = await execute(client, 'for (;;) {}');
      expect(loop.doc.error.code).toBe('sandbox_cpu_time_limit');
    } finally {
      await client.close();
    }
    server.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    server = null;
  }, 60_000);
});
