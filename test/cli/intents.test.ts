import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEndpoint, execSql, orderEvent, sendHook } from '../helpers.ts';
import { cli, closedPort, scratchHome, startApi, type Api } from './harness.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

let api: Api;
let home: ReturnType<typeof scratchHome>;
let recovery: string;
let operator: string;
let delivered: string;
let endpointId: string;
let sendOne: (ext: string) => Promise<string>;

beforeAll(async () => {
  api = await startApi();
  home = scratchHome();
  recovery = await api.grant('recovery_operator');
  operator = await api.grant('operator');
  const { endpoint, secret } = await createEndpoint(api.env, operator);
  endpointId = endpoint.id;
  sendOne = async (ext) => (await sendHook(api.env, endpoint, secret, orderEvent(ext))).json.eventId;
  delivered = await sendOne('r-1');
  await api.worker.drain();
});

afterAll(async () => {
  await api.stop();
  home.cleanup();
});

const run = (args: string[], token: string | undefined, env: Record<string, string> = {}) =>
  cli(args, { home: home.dir, env: { HOOKRELAY_BASE_URL: api.url, HOOKRELAY_TOKEN: token, ...env } });

function file(name: string, content: unknown): string {
  const p = join(home.dir, name);
  writeFileSync(p, JSON.stringify(content));
  return p;
}

describe('replay-intent', () => {
  it('previews, then executes with a generated idempotency key it prints', async () => {
    const preview = await run(['replay-intent', delivered, '--json', file('reason.json', { reason: 'lost in Flow' })], recovery);
    expect(preview.code).toBe(0);
    const intent = preview.json.data.intent;
    expect(intent).toMatchObject({ kind: 'replay', state: 'previewed', targetId: delivered });
    expect(intent.confirmation.token).toEqual(expect.any(String));
    expect(preview.stderr).toContain('--execute --intent');

    const exec = await run(['replay-intent', delivered, '--execute', '--intent', intent.id, '--confirm', intent.confirmation.token], recovery);
    expect(exec.code).toBe(0);
    expect(exec.json.data.intent.state).toBe('executed');
    expect(exec.json.idempotency).toMatchObject({ generated: true, replayed: false });
    expect(exec.json.idempotency.key).toMatch(/^idem_[0-9a-f-]{36}$/);
    expect(exec.stderr).toContain(exec.json.idempotency.key);

    // The same key again returns the stored answer instead of replaying twice.
    const retry = await run(
      ['replay-intent', delivered, '--execute', '--intent', intent.id, '--confirm', intent.confirmation.token, '--idempotency-key', exec.json.idempotency.key],
      recovery,
    );
    expect(retry.code).toBe(0);
    expect(retry.json.idempotency).toEqual({ key: exec.json.idempotency.key, generated: false, replayed: true });
    expect(retry.json.data.intent.id).toBe(intent.id);
    await api.worker.drain(); // the replayed event is delivered again, so later tests can preview it
  });

  it('previews without --json (no reason)', async () => {
    const r = await run(['replay-intent', delivered], recovery);
    expect(r.code).toBe(0);
    expect(r.json.data.intent.preview.warnings.join(' ')).toContain('No reason');
  });

  it('exits 4 when the event is not replayable yet (target_state refusal)', async () => {
    const accepted = await sendOne('r-2'); // not handed off yet: no worker round ran
    const r = await run(['replay-intent', accepted], recovery);
    expect(r.code).toBe(4);
    expect(r.json.refusal).toMatchObject({ category: 'target_state', code: 'handoff_in_progress' });
  });

  it('exits 4 when the grant lacks replay:execute', async () => {
    const r = await run(['replay-intent', delivered], operator);
    expect(r.code).toBe(4);
    expect(r.json.error.code).toBe('insufficient_scope');
  });

  it('exits 6 for an unknown event', async () => {
    const r = await run(['replay-intent', 'evt_0000000000'], recovery);
    expect(r.code).toBe(6);
  });

  it('exits 4 for a wrong confirmation token, printing the key used but no retry hint (a retry answers the same 409)', async () => {
    const preview = await run(['replay-intent', delivered], recovery);
    const r = await run(['replay-intent', delivered, '--execute', '--intent', preview.json.data.intent.id, '--confirm', 'cfm_wrong'], recovery);
    expect(r.code).toBe(4);
    expect(r.json.error).toMatchObject({ code: 'conflict', status: 409 });
    expect(r.json.idempotency.key).toMatch(/^idem_/);
    expect(r.json.idempotency.hint).toBeUndefined();
  });

  it('prints the idempotency key even when the server is unreachable (exit 7)', async () => {
    const r = await run(['replay-intent', delivered, '--execute', '--intent', 'int_abc', '--confirm', 'cfm_x', '--idempotency-key', 'my-key-1'], recovery, {
      HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}`,
    });
    expect(r.code).toBe(7);
    expect(r.json.idempotency).toMatchObject({ key: 'my-key-1', generated: false });
    expect(r.json.idempotency.hint).toContain('--idempotency-key my-key-1');
  });

  it('exits 2 on misuse of --execute', async () => {
    const noConfirm = await run(['replay-intent', delivered, '--execute', '--intent', 'int_abc'], recovery);
    expect(noConfirm.code).toBe(2);
    const confirmWithoutExecute = await run(['replay-intent', delivered, '--confirm', 'x'], recovery);
    expect(confirmWithoutExecute.code).toBe(2);
    const badInput = await run(['replay-intent', delivered, '--json', file('bad-reason.json', { reason: 'x', extra: true })], recovery);
    expect(badInput.code).toBe(2);
    expect(badInput.json.error.code).toBe('invalid_input');
  });

  it('previews a bulk replay with --failed --since 2h, then executes it without an event id', async () => {
    const saved = api.env.clock.now();
    api.env.clock.set(Date.now()); // `--since 2h` is read on the real clock
    try {
      const grant = await api.grant('recovery_operator');
      const ids = [await sendOne('bulk-1'), await sendOne('bulk-2')];
      await api.worker.drain();
      // Failed as the worker leaves events Flow refused (test/api/bulk-replay.test.ts makes them through the fake Shopify).
      for (const id of ids) await execSql(api.env, "UPDATE events SET outcome = 'failed', code = 'SVC_HANDOFF_REJECTED' WHERE id = ?", id);

      const preview = await run(['replay-intent', '--failed', '--since', '2h', '--endpoint', endpointId, '--reason', 'Flow is back'], grant);
      expect(preview.code).toBe(0);
      const intent = preview.json.data.intent;
      expect(intent).toMatchObject({ kind: 'bulk_replay', state: 'previewed', targetId: null });
      expect(intent.preview.selection).toMatchObject({ count: 2, filter: { outcome: 'failed', endpointId } });
      expect(Date.now() - Date.parse(intent.preview.selection.filter.since)).toBeGreaterThanOrEqual(2 * 3600_000);
      expect(intent.preview.selection.sample.map((e: { id: string }) => e.id)).toEqual(ids);
      expect(preview.stderr).toContain('--execute --intent');

      const exec = await run(['replay-intent', '--execute', '--intent', intent.id, '--confirm', intent.confirmation.token], grant);
      expect(exec.code).toBe(0);
      expect(exec.json.data.intent).toMatchObject({ kind: 'bulk_replay', state: 'executed', result: { queued: 2, skipped: 0 } });
      expect(exec.json.idempotency).toMatchObject({ generated: true, replayed: false });
      const retry = await run(
        ['replay-intent', '--execute', '--intent', intent.id, '--confirm', intent.confirmation.token, '--idempotency-key', exec.json.idempotency.key],
        grant,
      );
      expect(retry.json.idempotency).toEqual({ key: exec.json.idempotency.key, generated: false, replayed: true });
      // With an event id the execute goes to the single replay's operation, which knows no bulk intent.
      const asSingle = await run(['replay-intent', ids[0]!, '--execute', '--intent', intent.id, '--confirm', intent.confirmation.token], grant);
      expect(asSingle.code).toBe(6);
      await api.worker.drain();
    } finally {
      api.env.clock.set(saved);
    }
  });

  it('refuses a bulk replay of an outcome a single replay refuses (exit 4)', async () => {
    const r = await run(['replay-intent', '--outcome', 'rejected', '--json', file('bulk-reason.json', { reason: 'x' })], recovery);
    expect(r.code).toBe(4);
    expect(r.json.refusal).toMatchObject({ category: 'target_state', code: 'event_rejected' });
  });

  it('exits 2 on misuse of the bulk flags, sending nothing', async () => {
    const env = { HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}` };
    const misuses = [
      ['replay-intent'],
      ['replay-intent', delivered, '--failed'],
      ['replay-intent', '--failed', '--outcome', 'delivered'],
      ['replay-intent', '--failed', '--since', 'yesterday'],
      ['replay-intent', '--execute', '--intent', 'int_abc', '--confirm', 'cfm_x', '--since', '2h'],
      ['replay-intent', '--outcome', 'lost'],
    ];
    for (const args of misuses) {
      const r = await run(args, recovery, env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.json.error.code, args.join(' ')).toBe('invalid_input');
    }
  });
});

describe('support-request', () => {
  const input = { category: 'delivery', urgency: 'normal', summary: 'Events stop at Flow' };

  it('preview shows what would be shared and changes nothing', async () => {
    const r = await run(['support-request', 'preview', '--json', file('support.json', input)], operator);
    expect(r.code).toBe(0);
    expect(r.json.data.intent).toMatchObject({ kind: 'support_request', state: 'previewed' });
  });

  it('submit needs --consent (exit 2), then submits with a generated idempotency key', async () => {
    const f = file('support-submit.json', input);
    const refused = await run(['support-request', 'submit', '--json', f], operator);
    expect(refused.code).toBe(2);
    expect(refused.json.error.message).toContain('--consent');
    const r = await run(['support-request', 'submit', '--json', f, '--consent'], operator);
    expect(r.code).toBe(0);
    expect(r.json.data.intent.kind).toBe('support_request');
    expect(r.json.idempotency.generated).toBe(true);
  });

  it('exits 2 for an invalid support request before sending', async () => {
    const r = await run(['support-request', 'preview', '--json', file('support-bad.json', { category: 'gossip', urgency: 'low', summary: 'x' })], operator);
    expect(r.code).toBe(2);
    expect(r.json.error.details[0].path).toContain('body');
  });
});

describe('expansion-request', () => {
  it('records a non-binding request', async () => {
    const r = await run(['expansion-request', '--json', file('exp.json', { kind: 'multi_store', summary: 'Three stores on one box' })], operator);
    expect(r.code).toBe(0);
    expect(r.json.data.nonBinding).toBe(true);
    expect(r.json.data.request.kind).toBe('expansion');
  });

  it('exits 2 for an unknown kind', async () => {
    const r = await run(['expansion-request', '--json', file('exp-bad.json', { kind: 'mars', summary: 'x' })], operator);
    expect(r.code).toBe(2);
  });
});

describe('request', () => {
  it('makes a feature request (there is no shortcut command for it)', async () => {
    const r = await run(
      ['request', 'POST', '/agent/v1/feature-requests', '--json', file('feat.json', { capability: 'CSV export', problem: 'Monthly audit' })],
      operator,
    );
    expect(r.code).toBe(0);
    expect(r.json.data.request.kind).toBe('feature');
    expect(r.json.idempotency).toBeUndefined();
  });

  it('calls reads with path ids and a query string', async () => {
    const list = await run(['request', 'GET', `/agent/v1/events?limit=1&endpointId=${endpointId}`], operator);
    expect(list.code).toBe(0);
    expect(list.json.data.events).toHaveLength(1);
    const one = await run(['request', 'get', `/agent/v1/events/${delivered}`], operator);
    expect(one.code).toBe(0);
    expect(one.json.data.event.id).toBe(delivered);
  });

  it('reads the public manifest without a token', async () => {
    const r = await run(['request', 'GET', '/agent/v1/manifest'], undefined);
    expect(r.code).toBe(0);
    expect(r.json.operations).toHaveLength(24); // the spec's 22, createBulkReplayIntent and listAuditEntries
  });

  it('exits 6 for an unknown id', async () => {
    const r = await run(['request', 'GET', '/agent/v1/endpoints/ep_0000000000'], operator);
    expect(r.code).toBe(6);
  });

  const refused: [string, string, string][] = [
    ['the inbound hook path', 'POST', '/hooks/ep_123'],
    ['the MCP transport', 'POST', '/agent/v1/mcp'],
    ['the MCP transport by GET', 'GET', '/agent/v1/mcp'],
    ['a public page outside /agent/v1', 'GET', '/status'],
    ['an absolute URL to another host', 'GET', 'http://evil.example/agent/v1/grant'],
    ['a protocol-relative URL', 'GET', '//evil.example/agent/v1/grant'],
    ['a dot segment escaping /agent/v1', 'GET', '/agent/v1/../hooks/ep_1'],
    ['an encoded dot segment', 'GET', '/agent/v1/%2e%2e/status'],
    ['an unknown operation path', 'GET', '/agent/v1/secrets'],
    ['a method the operation does not take', 'DELETE', '/agent/v1/events'],
  ];
  for (const [what, method, path] of refused) {
    it(`refuses ${what} with exit 2, sending nothing`, async () => {
      const r = await run(['request', method, path], operator, { HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}` });
      expect(r.code).toBe(2);
      expect(r.json.error.code).toBe('invalid_input');
    });
  }

  it('validates the --json body against the operation schema before sending', async () => {
    const r = await run(['request', 'POST', '/agent/v1/feature-requests', '--json', file('feat-bad.json', { capability: 'x' })], operator, {
      HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}`,
    });
    expect(r.code).toBe(2);
    expect(r.json.error.details.map((d: { path: string }) => d.path)).toContain('body.problem');
  });

  it('refuses to execute a secret rotation, whose answer would print a secret', async () => {
    const body = file('rotate.json', { mode: 'execute', intentId: 'int_abc', confirmationToken: 'cfm_x' });
    const r = await run(['request', 'POST', `/agent/v1/endpoints/${endpointId}/secret-rotation-intents`, '--json', body], recovery);
    expect(r.code).toBe(2);
    expect(r.json.error.message).toContain('secret');
  });

  it('refuses to create an endpoint, whose answer holds its secret once (create-endpoint prints it), sending nothing', async () => {
    const body = file('endpoint.json', { name: 'x', triggerVariant: 'order', resourceIdPath: 'order.id' });
    const r = await run(['request', 'POST', '/agent/v1/endpoints', '--json', body], recovery, { HOOKRELAY_BASE_URL: `http://127.0.0.1:${closedPort()}` });
    expect(r.code).toBe(2);
    expect(r.json.error.code).toBe('invalid_input');
    expect(r.json.error.message).toContain('create-endpoint');
  });

  it('previews a secret rotation (no secret in a preview)', async () => {
    const body = file('rotate-preview.json', { mode: 'preview', input: { overlapSeconds: 60 } });
    const r = await run(['request', 'POST', `/agent/v1/endpoints/${endpointId}/secret-rotation-intents`, '--json', body], recovery);
    expect(r.code).toBe(0);
    expect(r.json.data.intent).toMatchObject({ kind: 'secret_rotation', state: 'previewed' });
  });
});
