/**
 * Code mode cannot take the server down: inputs that abort QuickJS, and a sandbox process killed mid-run, end
 * that run with a stable code while the server keeps answering and the next execute runs in a new sandbox.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { readdirSync, readFileSync } from 'node:fs';
import { SANDBOX_PROCESS } from '../../src/contract/limits.ts';
import { DEFAULT_MCP } from '../../src/core.ts';
import { runningSandboxPids } from '../../src/mcp/sandbox-process.ts';
import { ENTRY } from '../cli/harness.ts';
import { until } from '../fixtures/handoff.ts';
import { execute, startMcpServer, type McpServerUnderTest } from './harness.ts';

const SLOW = 60_000;
/** Generous CPU time: the runs under test must end by what they do, not by the clock of a loaded machine. */
const LIMITS = { ...DEFAULT_MCP.limits, cpuMs: 20_000 };

let s: McpServerUnderTest;
let client: Client;

beforeAll(async () => {
  s = await startMcpServer({ mcp: { ...DEFAULT_MCP, limits: LIMITS } });
  client = await s.connect((await s.grant('observer')).token);
}, SLOW);
afterAll(() => s.stop());

/** The server still answers HTTP and runs the next execute in a working sandbox. */
async function serverStillWorks() {
  expect((await fetch(`${s.url}/status`)).status).toBe(200);
  const next = await execute(client, `return (await api.call('getCurrentAgentGrant')).data.grant.tier;`);
  expect(next.doc).toMatchObject({ result: 'observer', calls: 1 });
}

describe('a sandbox failure ends the run, not the server', () => {
  it(
    'an array bomb after an await (QuickJS used to abort on teardown) ends at the memory limit',
    async () => {
      const r = await execute(client, 'await null; const a = []; for (;;) a.push(new Array(1e6).fill(1.5));');
      expect(r.isError).toBe(true);
      expect(r.doc.error.code).toBe('sandbox_memory_limit');
      await serverStillWorks();
    },
    SLOW,
  );

  it(
    'a call whose body holds a 20 MiB string, after a first call',
    async () => {
      const r = await execute(
        client,
        `await api.call('getCurrentAgentGrant');
       await api.request('POST', '/agent/v1/feature-requests', { capability: 'x'.repeat(20 << 20), problem: 'p' });`,
      );
      expect(r.isError).toBe(true);
      // Building and copying 20 MiB in QuickJS is slow: on a loaded machine the CPU limit may come first.
      expect(['sandbox_memory_limit', 'sandbox_cpu_time_limit']).toContain(r.doc.error.code);
      await serverStillWorks();
    },
    SLOW,
  );

  it(
    'a sandbox process killed mid-run: sandbox_failed, and the next execute gets a new sandbox',
    async () => {
      const run = execute(client, 'for (;;) {}');
      await until(() => runningSandboxPids().length === 1);
      const [pid] = runningSandboxPids();
      process.kill(pid!, 'SIGKILL');
      const r = await run;
      expect(r.isError).toBe(true);
      expect(r.doc.error.code).toBe('sandbox_failed');
      await serverStillWorks();
    },
    SLOW,
  );

  it.if(process.platform === 'linux')(
    "runs each sandbox under the OS address-space limit, with JavaScriptCore's JIT on within it",
    async () => {
      const run = execute(client, 'for (;;) {}');
      await until(() => runningSandboxPids().length === 1);
      const [pid] = runningSandboxPids();
      const limits = readFileSync(`/proc/${pid}/limits`, 'utf8');
      // A JIT reservation that does not fit the bound leaves the process with no JIT thread: QuickJS interpreted.
      const threads = () => readdirSync(`/proc/${pid}/task`).map((t) => readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim());
      const jit = await until(() => threads().includes('JITWorker'), 15_000).then(
        () => true,
        () => false,
      );
      process.kill(pid!, 'SIGKILL');
      await run;
      expect(limits).toMatch(new RegExp(`Max address space\\s+${SANDBOX_PROCESS.addressSpaceBytes}\\s+${SANDBOX_PROCESS.addressSpaceBytes}`));
      expect(jit).toBe(true);
    },
    SLOW,
  );

  it(
    'keeps __sandbox out of help, and refuses it when started by hand (no IPC channel)',
    () => {
      const help = Bun.spawnSync(['bun', ENTRY, '--help'], { stdout: 'pipe', stderr: 'pipe' });
      expect(`${help.stdout}${help.stderr}`).not.toContain('__sandbox');
      const byHand = Bun.spawnSync(['bun', ENTRY, '__sandbox'], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', timeout: 20_000 });
      expect(byHand.exitCode).toBe(2);
      expect(byHand.stderr.toString()).toContain('started by hookrelay serve');
    },
    SLOW,
  );
});
