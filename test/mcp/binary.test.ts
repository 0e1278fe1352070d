/** The compiled executable carries code mode: it runs its own sandbox processes (`__sandbox`) with the QuickJS wasm embedded. */
import { describe, expect, it } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { closedPort } from '../cli/harness.ts';
import { binaryForTests } from '../fixtures/binary.ts';
import { execute } from './harness.ts';

const exe = binaryForTests('hookrelay-mcp-bin-');

describe('dist/hookrelay MCP', () => {
  it('runs execute in its own sandbox process, stops runaway code, and outlives a sandbox abort', async () => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: exe.dir };
    const run = (args: string[]) => JSON.parse(Bun.spawnSync([exe.bin, ...args, '--data-dir', 'data'], { cwd: exe.dir, env }).stdout.toString());
    run(['init', '--shop', 'bin.myshopify.com']);
    const { token } = run(['grant', 'issue', '--shop', 'bin.myshopify.com', '--tier', 'observer', '--ttl', '1h']);
    const port = closedPort();
    exe.server = Bun.spawn([exe.bin, 'serve', '--port', String(port), '--data-dir', 'data'], { cwd: exe.dir, env, stdout: 'ignore', stderr: 'ignore' });
    const base = `http://127.0.0.1:${port}`;
    const until = Date.now() + 10_000;
    while (
      Date.now() < until &&
      !(await fetch(`${base}/status`).then(
        (r) => r.ok,
        () => false,
      ))
    )
      await Bun.sleep(50);

    const client = new Client({ name: 'bin-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/agent/v1/mcp', base), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    try {
      const read = await execute(client, `return (await api.call('getCurrentAgentGrant')).data.grant.tier;`);
      expect(read.doc).toMatchObject({ result: 'observer', calls: 1 });
      const loop = await execute(client, 'for (;;) {}');
      expect(loop.doc.error.code).toBe('sandbox_cpu_time_limit');
      const bomb = await execute(client, 'await null; const a = []; for (;;) a.push(new Array(1e6).fill(1.5));');
      // Which limit ends it first depends on the machine's speed (2 s of CPU by default); the server lives on.
      expect(['sandbox_memory_limit', 'sandbox_cpu_time_limit']).toContain(bomb.doc.error.code);
      const again = await execute(client, `return (await api.call('getCurrentAgentGrant')).data.grant.tier;`);
      expect(again.doc).toMatchObject({ result: 'observer', calls: 1 });
    } finally {
      await client.close();
    }
    exe.server.kill('SIGTERM');
    expect(await exe.server.exited).toBe(0);
    exe.server = null;
  }, 60_000);
});
