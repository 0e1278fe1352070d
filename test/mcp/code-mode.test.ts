import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { DEFAULT_MCP } from '../../src/core.ts';
import { readFileSync } from 'node:fs';
import { runningSandboxPids } from '../../src/mcp/sandbox-process.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { createEndpoint, orderEvent, rows, sendHook } from '../helpers.ts';
import { execute, startMcpServer, tool, type McpServerUnderTest } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 30_000;

/** The CPU limit is the sandbox's own CPU time running agent code: a loaded machine slows a run without using it up. */
const LIMITS = { cpuMs: 10_000, memoryBytes: 16 * 1024 * 1024, maxCalls: 10, maxResultBytes: 64 * 1024 };

/** The CPU time a process has used, ms (Linux /proc; USER_HZ 100). */
const processCpuMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

let s: McpServerUnderTest;
let admin: { grantId: string; token: string };
let client: Client;
let eventId: string;
let endpoint: { id: string; auth: { headerName: string; mode: string } };

beforeAll(async () => {
  s = await startMcpServer({ mcp: { ...DEFAULT_MCP, limits: LIMITS } });
  admin = await s.grant('admin_assistant');
  client = await s.connect(admin.token);
  const created = await createEndpoint(s.env, admin.token);
  endpoint = created.endpoint;
  eventId = (await sendHook(s.env, endpoint, created.secret, orderEvent('mcp-1'))).json.eventId;
  await new HandoffWorker(s.env.core).drain();
}, SLOW);
afterAll(() => s.stop());

const auditRows = (operationId: string) =>
  rows<{
    grant_id: string | null;
    actor_kind: string;
    transition: string | null;
    outcome: string;
    intent_id: string | null;
    error_code: string | null;
    refusal_category: string | null;
  }>(s.env, 'SELECT * FROM audit_log WHERE operation_id = ? ORDER BY at, id', operationId);

describe('search', () => {
  it(
    'finds createReplayIntent with its scopes, effect, confirmation and JSON Schemas',
    async () => {
      const { doc, isError } = await tool(client, 'search', { query: 'replay' });
      expect(isError).toBe(false);
      const replay = doc.operations.find((o: { operationId: string }) => o.operationId === 'createReplayIntent');
      expect(replay).toMatchObject({
        method: 'POST',
        path: '/agent/v1/events/{eventId}/replay-intents',
        scopes: ['event:read', 'replay:execute'],
        effect: 'preview_or_execute',
        confirmation: true,
        idempotency: 'execute',
        callable: true,
        hints: { readOnlyHint: false, destructiveHint: true },
      });
      expect(replay).not.toHaveProperty('extension'); // the spec's own operation
      expect(replay.input.params.required).toEqual(['eventId']);
      expect(JSON.stringify(replay.input.body)).toContain('confirmationToken');
      expect(replay.output).toBeDefined();
    },
    SLOW,
  );

  it(
    'filters by effect and scope, marks callable by the grant, and leaves out the MCP transport',
    async () => {
      const all = (await tool(client, 'search', { schemas: false })).doc;
      expect(all.total).toBe(23); // every operation but the MCP transport
      expect(all.operations.map((o: { operationId: string }) => o.operationId)).not.toContain('connectMcpAgentOperations');
      const writes = (await tool(client, 'search', { effect: 'preview_or_execute', schemas: false })).doc.operations;
      expect(writes.length).toBe(7);
      expect(writes.every((o: { effect: string }) => o.effect === 'preview_or_execute')).toBe(true);
      const rotate = (await tool(client, 'search', { scope: 'secret:rotate', schemas: false })).doc.operations;
      expect(rotate.map((o: { operationId: string }) => o.operationId)).toEqual(['createSecretRotationIntent']);

      const observer = await s.connect((await s.grant('observer')).token);
      const seen = (await tool(observer, 'search', { query: 'replay', schemas: false })).doc.operations[0];
      expect(seen).toMatchObject({ operationId: 'createReplayIntent', callable: false });
      const callable = (await tool(observer, 'search', { callableOnly: true, schemas: false })).doc.operations;
      expect(callable.every((o: { scopes: string[] }) => o.scopes.every((x) => ['setup:read', 'event:read'].includes(x)))).toBe(true);
      expect(callable.length).toBeGreaterThan(0);
    },
    SLOW,
  );
});

describe('execute', () => {
  it(
    'reads events through api.call and api.request',
    async () => {
      const r = await execute(
        client,
        `const a = await api.call('listEvents', { query: { limit: 5 } });
       const b = await api.request('GET', '/agent/v1/events?limit=5');
       console.log('events', a.data.events.length);
       return { a: a.data.events.map((e) => [e.id, e.outcome]), b: b.data.events.length, actor: a.actor.grantId };`,
      );
      expect(r.isError).toBe(false);
      expect(r.doc.result).toEqual({ a: [[eventId, 'delivered']], b: 1, actor: admin.grantId });
      expect(r.doc.logs).toEqual(['events 1']);
      expect(r.doc.calls).toBe(2);
    },
    SLOW,
  );

  it(
    'replays: preview, then execute with the confirmation and an idempotency key; the audit shows one execution by the grant',
    async () => {
      const r = await execute(
        client,
        `const params = { eventId: ${JSON.stringify(eventId)} };
       const preview = await api.call('createReplayIntent', { params, body: { mode: 'preview', input: { reason: 'mcp test' } } });
       const { id, confirmation } = preview.data.intent;
       const body = { mode: 'execute', intentId: id, confirmationToken: confirmation.token };
       const done = await api.call('createReplayIntent', { params, body, idempotencyKey: 'mcp-replay-1' });
       const again = await api.call('createReplayIntent', { params, body, idempotencyKey: 'mcp-replay-1' });
       return { previewed: preview.data.intent.state, executed: done.data.intent.state, again: again.data.intent.state, id };`,
      );
      expect(r.isError).toBe(false);
      expect(r.doc.result).toMatchObject({ previewed: 'previewed', executed: 'executed', again: 'executed' });
      const audited = (await auditRows('createReplayIntent')).filter((a) => a.intent_id === r.doc.result.id);
      expect(audited.map((a) => a.transition)).toEqual(['previewed', 'executed', 'executed (idempotent replay)']);
      const executions = audited.filter((a) => a.transition === 'executed');
      expect(executions).toHaveLength(1);
      expect(executions[0]).toMatchObject({ grant_id: admin.grantId, actor_kind: 'agent', outcome: 'ok' });
    },
    SLOW,
  );

  it(
    'refuses an execute step without its confirmation or idempotency key, and nothing is executed',
    async () => {
      await new HandoffWorker(s.env.core).drain();
      const r = await execute(
        client,
        `const params = { eventId: ${JSON.stringify(eventId)} };
       const { id } = (await api.call('createReplayIntent', { params, body: { mode: 'preview', input: {} } })).data.intent;
       const codes = [];
       for (const body of [{ mode: 'execute', intentId: id }, { mode: 'execute', intentId: id, confirmationToken: 'not-the-token' }]) {
         try { await api.call('createReplayIntent', { params, body, idempotencyKey: 'k-' + codes.length }); } catch (e) { codes.push([e.code, e.status]); }
       }
       try { await api.call('createReplayIntent', { params, body: { mode: 'execute', intentId: id, confirmationToken: 'x' } }); } catch (e) { codes.push([e.code, e.status]); }
       return { id, codes };`,
      );
      expect(r.isError).toBe(false);
      expect(r.doc.result.codes).toEqual([
        ['invalid_input', null],
        ['conflict', 409],
        ['invalid_input', 400],
      ]);
      const audited = (await auditRows('createReplayIntent')).filter((a) => a.intent_id === r.doc.result.id);
      expect(audited.map((a) => a.transition)).toEqual(['previewed']);

      const uncaught = await execute(
        client,
        `await api.call('createReplayIntent', { params: { eventId: ${JSON.stringify(eventId)} }, body: { mode: 'execute', intentId: ${JSON.stringify(r.doc.result.id)}, confirmationToken: 'nope' }, idempotencyKey: 'k-x' });`,
      );
      expect(uncaught.isError).toBe(true);
      expect(uncaught.doc.error).toMatchObject({ code: 'conflict', status: 409, operationId: 'createReplayIntent' });
    },
    SLOW,
  );

  it(
    'keeps an observer to its scopes: a write is refused with insufficient_scope in the tool result',
    async () => {
      const observer = await s.grant('observer');
      const oc = await s.connect(observer.token);
      const r = await execute(
        oc,
        `return await api.call('createReplayIntent', { params: { eventId: ${JSON.stringify(eventId)} }, body: { mode: 'preview', input: {} } });`,
      );
      expect(r.isError).toBe(true);
      expect(r.doc.error).toMatchObject({ code: 'insufficient_scope', status: 403, refusal: { category: 'scope' } });
      expect(r.doc.error.details.missingScopes).toEqual(['replay:execute']);
      const create = await execute(oc, `return await api.request('POST', '/agent/v1/endpoints', { triggerVariant: 'generic' });`);
      expect(create.doc.error.code).toBe('insufficient_scope');
      const refused = (await auditRows('createEndpoint')).filter((a) => a.grant_id === observer.grantId);
      expect(refused).toEqual([expect.objectContaining({ outcome: 'refused', refusal_category: 'scope' })]);
      const read = await execute(oc, `return (await api.call('getCurrentAgentGrant')).data.grant.tier;`);
      expect(read.doc.result).toBe('observer');
    },
    SLOW,
  );

  it(
    'stops an infinite loop and a heavy native loop at the CPU time limit',
    async () => {
      const tight = await startMcpServer({ mcp: { ...DEFAULT_MCP, limits: { ...LIMITS, cpuMs: 500 } } });
      try {
        const tc = await tight.connect((await tight.grant()).token);
        const loop = await execute(tc, 'while (true) {}');
        expect(loop.isError).toBe(true);
        expect(loop.doc.error.code).toBe('sandbox_cpu_time_limit');
        expect(loop.doc.error.message).toContain('500 ms');
        // Each step is one long native call, so QuickJS's interrupt check comes rarely: the watchdog ends it.
        const native = await execute(tc, 'const s = "x".repeat(8 << 20); while (true) s.indexOf("y");');
        expect(native.doc.error.code).toBe('sandbox_cpu_time_limit');
      } finally {
        await tight.stop();
      }
    },
    SLOW,
  );

  it(
    'charges the CPU time the code used, not time on the clock: a run held stopped past its whole limit (a host too busy to give it a core) finishes',
    async () => {
      const cpuMs = 2_000;
      const tight = await startMcpServer({ mcp: { ...DEFAULT_MCP, limits: { ...LIMITS, cpuMs } } });
      try {
        const tc = await tight.connect((await tight.grant()).token);
        // A few hundred ms of CPU in QuickJS, well inside the limit.
        const run = execute(tc, 'let x = 0; for (let i = 0; i < 3e5; i++) x = (x + i) % 1000003; return x;');
        let settled = false;
        void run.then(() => (settled = true));
        let pid: number | undefined;
        while (!(pid = runningSandboxPids()[0]) && !settled) await Bun.sleep(5);
        // Running the code: its process has used CPU since it was handed the run (it came warm from the pool).
        const handed = processCpuMs(pid!);
        while (!settled && processCpuMs(pid!) - handed < 50) await Bun.sleep(5);
        expect(settled).toBe(false);
        process.kill(pid!, 'SIGSTOP');
        await Bun.sleep(cpuMs + 1_000); // past the limit and its grace on the clock, with no CPU given
        try {
          process.kill(pid!, 'SIGCONT');
        } catch {} // ended meanwhile: the run's answer says why
        const r = await run;
        expect(r.doc.error).toBeUndefined();
        expect(r.doc.result).toBe(Array.from({ length: 3e5 }).reduce<number>((x, _, i) => (x + i) % 1000003, 0));
      } finally {
        await tight.stop();
      }
    },
    SLOW,
  );

  it(
    'stops memory bombs at the memory limit',
    async () => {
      const bombs = [
        'const a = []; while (true) a.push(new ArrayBuffer(1 << 20));',
        'const a = []; while (true) a.push("x".repeat(1 << 20) + a.length);',
        'const a = []; while (true) a.push(new Array(1e5).fill(a.length));',
      ];
      // The CPU limit (10 s) is CPU time, which a busy host does not use up (test above): only the memory limit can
      // end these, however slowly they run. The timeout is the harness's guard against a hang, not a measure.
      for (const bomb of bombs) {
        const r = await execute(client, bomb);
        expect(r.isError).toBe(true);
        expect(r.doc.error.code).toBe('sandbox_memory_limit');
        expect(r.doc.error.message).toContain('16 MiB');
      }
    },
    4 * SLOW,
  );

  it(
    'limits api calls and result size per run, each with its own code',
    async () => {
      const calls = await execute(client, `for (;;) await api.call('getCurrentAgentGrant');`);
      expect(calls.doc.error).toMatchObject({ code: 'sandbox_call_limit', limit: 10 });
      const big = await execute(client, `return 'x'.repeat(100 * 1024);`);
      expect(big.doc.error.code).toBe('sandbox_result_too_large');
      const syntax = await execute(client, `return )(`);
      expect(syntax.doc.error.code).toBe('sandbox_code_error');
      const never = await execute(client, `await new Promise(() => {});`);
      expect(never.doc.error.code).toBe('sandbox_unsettled');
    },
    SLOW,
  );

  it(
    'has no network, timers or host: no fetch, and no way to reach the MCP path, /hooks or anything outside /agent/v1',
    async () => {
      let hits = 0;
      const canary = Bun.serve({
        port: 0,
        hostname: '127.0.0.1',
        fetch: () => {
          hits++;
          return new Response('{}');
        },
      });
      try {
        const globals = await execute(
          client,
          `return [typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof require, typeof process, typeof Bun, typeof setTimeout, typeof WebAssembly];`,
        );
        expect(new Set(globals.doc.result)).toEqual(new Set(['undefined']));
        const fetchIt = await execute(client, `await fetch('http://127.0.0.1:${canary.port}/');`);
        expect(fetchIt.doc.error).toMatchObject({ code: 'sandbox_code_error', message: expect.stringContaining('fetch') });
        const importIt = await execute(client, `await import('http://127.0.0.1:${canary.port}/x.js');`);
        expect(importIt.doc.error.code).toBe('sandbox_code_error');

        const r = await execute(
          client,
          `const tries = [
           () => api.call('connectMcpAgentOperations', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } }),
           () => api.request('POST', '/agent/v1/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }),
           () => api.request('GET', '/agent/v1/mcp'),
           () => api.request('POST', '/hooks/${endpoint.id}', { event_type: 'x' }),
           () => api.request('GET', '/agent/v1/../hooks/${endpoint.id}'),
           () => api.request('POST', '/agent/v1/%2e%2e/v1/mcp', {}),
           () => api.request('GET', '/agent/v1/events/..%2F..%2Fmcp'),
           () => api.request('GET', '//127.0.0.1:${canary.port}/agent/v1/grant'),
           () => api.request('GET', 'http://127.0.0.1:${canary.port}/agent/v1/grant'),
           () => api.request('GET', '/status'),
         ];
         const out = [];
         for (const t of tries) { try { await t(); out.push('reached'); } catch (e) { out.push(e.code); } }
         return out;`,
        );
        expect(r.doc.result).toEqual([
          'invalid_input',
          'invalid_input',
          'invalid_input',
          'invalid_input',
          'invalid_input',
          'invalid_input',
          'not_found', // an event id that happens to contain "../mcp", looked up in this store
          'invalid_input',
          'invalid_input',
          'invalid_input',
        ]);
        expect(hits).toBe(0);
      } finally {
        canary.stop(true);
      }
    },
    SLOW,
  );
});

describe('redaction', () => {
  it(
    'a secret rotation executed through execute leaves neither secret nor token in audit rows, stored replies or log lines',
    async () => {
      const { endpoint: target, secret: original } = await createEndpoint(s.env, admin.token, { triggerVariant: 'generic' });
      const r = await execute(
        client,
        `const params = { endpointId: ${JSON.stringify(target.id)} };
       const { id, confirmation } = (await api.call('createSecretRotationIntent', { params, body: { mode: 'preview', input: { overlapSeconds: 60 } } })).data.intent;
       const done = await api.call('createSecretRotationIntent', { params, body: { mode: 'execute', intentId: id, confirmationToken: confirmation.token }, idempotencyKey: 'rotate-1' });
       return { state: done.data.intent.state, secret: done.data.intent.result.secret };`,
      );
      expect(r.isError).toBe(false);
      const rotated = r.doc.result.secret as string;
      expect(rotated).toStartWith('whsec_');
      expect(r.doc.result.state).toBe('executed');

      const audit = JSON.stringify(await rows(s.env, 'SELECT * FROM audit_log'));
      const stored = JSON.stringify(await rows(s.env, 'SELECT * FROM idempotency_keys'));
      const logs = s.env.log.lines.join('\n');
      expect(logs).toContain('mcp execute');
      for (const canary of [rotated, original, admin.token]) {
        expect(audit.includes(canary)).toBe(false);
        expect(stored.includes(canary)).toBe(false);
        expect(logs.includes(canary)).toBe(false);
      }
      const detail = await execute(client, `return await api.call('getEndpointDetail', { params: { endpointId: ${JSON.stringify(target.id)} } });`);
      expect(detail.text.includes(rotated)).toBe(false);
      expect(detail.doc.result.data.endpoint.auth.secretLast4).toBe(rotated.slice(-4));
    },
    SLOW,
  );
});

describe('bulk replay', () => {
  it(
    'is in the catalogue, marked as an extension beyond the spec, and code mode previews then executes it once per idempotency key',
    async () => {
      const found = (await tool(client, 'search', { query: 'bulk replay' })).doc.operations;
      const bulk = found.find((o: { operationId: string }) => o.operationId === 'createBulkReplayIntent');
      expect(bulk).toMatchObject({
        method: 'POST',
        path: '/agent/v1/replay-intents',
        scopes: ['event:read', 'replay:execute'],
        effect: 'preview_or_execute',
        confirmation: true,
        idempotency: 'execute',
        callable: true,
        extension: true,
        extensionDecidedIn: expect.stringContaining('DESIGN.md, "The platform link"'),
      });
      expect(JSON.stringify(bulk.input.body)).toContain('filter');

      const { endpoint: target, secret } = await createEndpoint(s.env, admin.token, { triggerVariant: 'generic' });
      const ids: string[] = [];
      for (const ext of ['bulk-mcp-1', 'bulk-mcp-2']) ids.push((await sendHook(s.env, target, secret, orderEvent(ext))).json.eventId);
      await new HandoffWorker(s.env.core).drain();
      const r = await execute(
        client,
        `const input = { reason: 'mcp bulk', filter: { outcome: 'delivered', endpointId: ${JSON.stringify(target.id)} } };
       const preview = (await api.call('createBulkReplayIntent', { body: { mode: 'preview', input } })).data.intent;
       const body = { mode: 'execute', intentId: preview.id, confirmationToken: preview.confirmation.token };
       const done = await api.call('createBulkReplayIntent', { body, idempotencyKey: 'mcp-bulk-1' });
       const again = await api.call('createBulkReplayIntent', { body, idempotencyKey: 'mcp-bulk-1' });
       return { id: preview.id, count: preview.preview.selection.count, sample: preview.preview.selection.sample.map((e) => e.id), result: done.data.intent.result, again: again.data.intent.result };`,
      );
      expect(r.isError).toBe(false);
      expect(r.doc.result).toMatchObject({ count: 2, sample: ids, result: { queued: 2, skipped: 0 }, again: { queued: 2, skipped: 0 } });
      const audited = (await auditRows('createBulkReplayIntent')).filter((a) => a.intent_id === r.doc.result.id);
      expect(audited.map((a) => a.transition)).toEqual(['previewed', 'executed', 'executed (idempotent replay)']);
      expect(audited[1]).toMatchObject({ grant_id: admin.grantId, actor_kind: 'agent', outcome: 'ok' });
      const outcomes = await rows<{ outcome: string }>(s.env, 'SELECT outcome FROM events WHERE endpoint_id = ?', target.id);
      expect(outcomes.map((e) => e.outcome)).toEqual(['queued', 'queued']);
      await new HandoffWorker(s.env.core).drain();
    },
    SLOW,
  );
});
