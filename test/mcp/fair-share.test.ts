/** `execute` runs are shared fairly: one store at its cap gets `sandbox_busy` with a retry delay; another store still runs. */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import { EXECUTE_CONCURRENCY } from '../../src/contract/limits.ts';
import { DEFAULT_MCP } from '../../src/core.ts';
import { runningSandboxPids } from '../../src/mcp/sandbox-process.ts';
import { until } from '../fixtures/handoff.ts';
import { addGrant, addStore } from '../helpers.ts';
import { execute, startMcpServer, type McpServerUnderTest } from './harness.ts';

const SLOW = 60_000;

let s: McpServerUnderTest;

beforeAll(async () => {
  s = await startMcpServer({ mcp: { ...DEFAULT_MCP, limits: { ...DEFAULT_MCP.limits, cpuMs: 30_000 } } });
  await addStore(s.env, { shopDomain: 'other.myshopify.com', platformAccountId: 'acct-2', installationId: 'inst-2' });
}, SLOW);
afterAll(() => s.stop());

describe('execute fair share', () => {
  it(
    `refuses a store's run past ${EXECUTE_CONCURRENCY.perStore} in flight with sandbox_busy, while another store's run goes through`,
    async () => {
      const busy = await s.connect((await s.grant('observer')).token);
      const other = await s.connect(await addGrant(s.env, 'observer', { shop: 'other.myshopify.com' }));
      const hogs = Array.from({ length: EXECUTE_CONCURRENCY.perStore }, () => execute(busy, 'for (;;) {}'));
      await until(() => runningSandboxPids().length === EXECUTE_CONCURRENCY.perStore, 30_000);

      const refused = await execute(busy, 'return 1');
      expect(refused.isError).toBe(true);
      expect(refused.doc.error).toMatchObject({
        code: 'sandbox_busy',
        scope: 'store',
        limit: EXECUTE_CONCURRENCY.perStore,
        retryAfterSeconds: EXECUTE_CONCURRENCY.retryAfterSeconds,
      });
      const served = await execute(other, `return (await api.call('getCurrentAgentGrant')).data.grant.tier;`);
      expect(served.doc).toMatchObject({ result: 'observer', calls: 1 });

      for (const pid of runningSandboxPids()) process.kill(pid, 'SIGKILL');
      for (const hog of await Promise.all(hogs)) expect(hog.doc.error.code).toBe('sandbox_failed');
      expect((await execute(busy, 'return 2')).doc.result).toBe(2);
    },
    SLOW,
  );
});
