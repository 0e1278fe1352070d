/**
 * Code mode calls the pipeline in process (src/mcp/api.ts): a run's calls act as the grant its MCP request
 * authenticated, once, under that request's id, through the pipeline's rate limits, idempotency, metering and audit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'bun:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { DEFAULT_RATE_LIMITS } from '../../src/contract/limits.ts';
import { DEFAULT_MCP } from '../../src/core.ts';
import { revokeGrant } from '../../src/ops/grants.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { call, createEndpoint, orderEvent, rows, sendHook } from '../helpers.ts';
import { execute, startMcpServer, type McpServerUnderTest } from './harness.ts';

/** These tests spawn sandbox processes: a busy machine must not fail them on time. */
const SLOW = 30_000;
/** Simple reads per grant per window: a run of 20 fits, a run of 60 does not. */
const SIMPLE_READS = 45;

interface AuditRow {
  grant_id: string | null;
  operation_id: string;
  transition: string | null;
  status: number;
  error_code: string | null;
  request_id: string | null;
  surface: string;
  intent_id: string | null;
}

let s: McpServerUnderTest;
/** Grant lookups by token (the bearer step's one read of a token), counted on the real repository. */
let lookups = 0;

beforeAll(async () => {
  s = await startMcpServer({
    mcp: { ...DEFAULT_MCP, limits: { ...DEFAULT_MCP.limits, cpuMs: 10_000, maxCalls: 60 } },
    rateLimits: { ...DEFAULT_RATE_LIMITS, simple_read: { grant: SIMPLE_READS, store: 10_000 } },
  });
  const repo = s.env.core.repo;
  const byToken = repo.getGrantByTokenHash.bind(repo);
  repo.getGrantByTokenHash = (hash) => {
    lookups++;
    return byToken(hash);
  };
}, SLOW);
afterAll(() => s.stop());

const auditOf = (grantId: string) => rows<AuditRow>(s.env, 'SELECT * FROM audit_log WHERE grant_id = ? ORDER BY at, id', grantId);
const simpleReads = async () =>
  (await rows<{ used: number }>(s.env, "SELECT used FROM usage_counters WHERE meter = 'simple_reads'")).reduce((n, r) => n + Number(r.used), 0);

async function connected(tier: 'observer' | 'admin_assistant' = 'observer'): Promise<{ grantId: string; token: string; client: Client }> {
  const grant = await s.grant(tier);
  const client = await s.connect(grant.token);
  await client.listTools(); // which the SDK's client would otherwise ask for (another MCP request) on its first call
  return { ...grant, client };
}

describe('code mode in process', () => {
  it(
    'a run of 20 calls costs one authentication, and its audit rows share one request id with the run and name the grant',
    async () => {
      const { grantId, token, client } = await connected();
      // The counter counts: one HTTP call is one lookup.
      let before = lookups;
      expect((await call(s.env, 'GET', '/agent/v1/setup-state', { token })).status).toBe(200);
      expect(lookups - before).toBe(1);

      before = lookups;
      const r = await execute(
        client,
        `let n = 0;
         for (let i = 0; i < 10; i++) n += (await api.call('getSetupState')).data ? 1 : 0;
         for (let i = 0; i < 10; i++) n += (await api.request('GET', '/agent/v1/events?limit=1')).data ? 1 : 0;
         return n;`,
      );
      expect(r.doc.error).toBeUndefined();
      expect(r.doc).toMatchObject({ result: 20, calls: 20 });
      expect(lookups - before).toBe(1); // the MCP request's, not one per call

      const audit = (await auditOf(grantId)).filter((a) => a.surface === 'mcp');
      const run = audit.find((a) => a.transition === 'execute')!;
      expect(run.request_id).toStartWith('req_');
      const joined = audit.filter((a) => a.request_id === run.request_id);
      expect(joined).toHaveLength(21);
      expect(joined.filter((a) => a.operation_id === 'getSetupState')).toHaveLength(10);
      expect(joined.filter((a) => a.operation_id === 'listEvents')).toHaveLength(10);
      expect(joined.every((a) => a.grant_id === grantId && a.status === 200)).toBe(true);

      // The next run is another MCP request: another authentication, another request id.
      before = lookups;
      await execute(client, `return (await api.call('getSetupState')).data ? 1 : 0;`);
      expect(lookups - before).toBe(1);
      const runs = (await auditOf(grantId)).filter((a) => a.transition === 'execute');
      expect(runs).toHaveLength(2);
      expect(runs[1]!.request_id).not.toBe(run.request_id);
    },
    SLOW,
  );

  it(
    'meters each call once on the store, as HTTP does',
    async () => {
      const { client } = await connected();
      const before = await simpleReads();
      const r = await execute(client, `for (let i = 0; i < 5; i++) await api.call('getSetupState'); return 5;`);
      expect(r.doc.result).toBe(5);
      expect((await simpleReads()) - before).toBe(5);
    },
    SLOW,
  );

  it(
    "answers a run past the grant's rate limit with the 429's facts, audited under the run's request id",
    async () => {
      const { grantId, client } = await connected();
      const r = await execute(
        client,
        `let ok = 0;
         for (;;) {
           try { await api.call('getSetupState'); ok++; }
           catch (e) { return { ok, e: { code: e.code, status: e.status, retryAfterSeconds: e.retryAfterSeconds, rateLimitClass: e.rateLimitClass, rateLimitScope: e.rateLimitScope, recommendedAction: e.recommendedAction, refusal: e.refusal, operationId: e.operationId } }; }
         }`,
      );
      expect(r.doc.error).toBeUndefined();
      expect(r.doc.result.ok).toBe(SIMPLE_READS);
      const e = r.doc.result.e;
      expect(e).toMatchObject({
        code: 'rate_limited',
        status: 429,
        rateLimitClass: 'simple_read',
        rateLimitScope: 'grant',
        operationId: 'getSetupState',
        refusal: { category: 'usage' },
      });
      expect(e.retryAfterSeconds).toBeGreaterThan(0);
      expect(e.recommendedAction).toContain('Wait');

      const audit = await auditOf(grantId);
      const run = audit.find((a) => a.transition === 'execute')!;
      const limited = audit.filter((a) => a.status === 429);
      expect(limited).toEqual([expect.objectContaining({ error_code: 'rate_limited', request_id: run.request_id, surface: 'mcp' })]);
    },
    SLOW,
  );

  it(
    'answers an execute repeated with its idempotency key, in the same run and the next, from the stored answer; another request with that key is 422',
    async () => {
      const { grantId, token, client } = await connected('admin_assistant');
      const { endpoint, secret } = await createEndpoint(s.env, token);
      const eventId = (await sendHook(s.env, endpoint, secret, orderEvent('in-process-1'))).json.eventId as string;
      await new HandoffWorker(s.env.core).drain();

      const first = await execute(
        client,
        `const params = { eventId: ${JSON.stringify(eventId)} };
         const { id, confirmation } = (await api.call('createReplayIntent', { params, body: { mode: 'preview', input: { reason: 'in process' } } })).data.intent;
         const body = { mode: 'execute', intentId: id, confirmationToken: confirmation.token };
         const done = await api.call('createReplayIntent', { params, body, idempotencyKey: 'ip-1' });
         const again = await api.call('createReplayIntent', { params, body, idempotencyKey: 'ip-1' });
         return { id, body, done: done.data.intent, again: again.data.intent };`,
      );
      expect(first.doc.error).toBeUndefined();
      const { id, body, done, again } = first.doc.result;
      expect(done.state).toBe('executed');
      expect(again).toEqual(done);

      const second = await execute(
        client,
        `const params = { eventId: ${JSON.stringify(eventId)} };
         const body = ${JSON.stringify(body)};
         const replayed = (await api.call('createReplayIntent', { params, body, idempotencyKey: 'ip-1' })).data.intent;
         try { await api.call('createReplayIntent', { params, body: { ...body, confirmationToken: 'another' }, idempotencyKey: 'ip-1' }); return { replayed }; }
         catch (e) { return { replayed, reused: [e.code, e.status] }; }`,
      );
      expect(second.doc.result).toEqual({ replayed: done, reused: ['idempotency_key_reused', 422] });

      const audit = (await auditOf(grantId)).filter((a) => a.intent_id === id);
      expect(audit.map((a) => a.transition)).toEqual(['previewed', 'executed', 'executed (idempotent replay)', 'executed (idempotent replay)']);
      // Each row under the request id of the run that made it: the first run's three, the second's one.
      const runs = (await auditOf(grantId)).filter((a) => a.transition === 'execute').map((a) => a.request_id);
      expect(new Set(runs).size).toBe(2);
      expect(audit.map((a) => runs.indexOf(a.request_id))).toEqual([0, 0, 0, 1]);
      const executions = await rows(s.env, "SELECT * FROM audit_log WHERE intent_id = ? AND transition = 'executed'", id);
      expect(executions).toHaveLength(1);
    },
    SLOW,
  );

  it(
    'refuses a body past the API limit with 413 once the call is authorized, audited, as HTTP does',
    async () => {
      const { grantId, client } = await connected('admin_assistant');
      // The schema bounds the number of event ids, not their length: only the size refuses this body.
      const r = await execute(
        client,
        `try { await api.call('createDiagnosticsShareIntent', { body: { mode: 'preview', input: { eventIds: ['x'.repeat(1100000)] } } }); return 'previewed'; }
         catch (e) { return [e.code, e.status, e.message]; }`,
      );
      expect(r.doc.result).toEqual(['payload_too_large', 413, 'Request bodies are limited to 1 MiB.']);
      const audit = await auditOf(grantId);
      const run = audit.find((a) => a.transition === 'execute')!;
      expect(audit.filter((a) => a.operation_id === 'createDiagnosticsShareIntent')).toEqual([
        expect.objectContaining({ status: 413, error_code: 'payload_too_large', request_id: run.request_id, surface: 'mcp' }),
      ]);
    },
    SLOW,
  );

  it(
    'refuses a grant revoked after a run at the next MCP request',
    async () => {
      const { grantId, client } = await connected();
      expect((await execute(client, `return (await api.call('getCurrentAgentGrant')).data.grant.revoked;`)).doc.result).toBe(false);
      await revokeGrant(s.env.core, grantId);
      await expect(execute(client, `return (await api.call('getCurrentAgentGrant')).data.grant.revoked;`)).rejects.toMatchObject({
        code: 401,
        message: expect.stringContaining('revoked'),
      });
      expect((await auditOf(grantId)).filter((a) => a.transition === 'execute')).toHaveLength(1);
    },
    SLOW,
  );
});
