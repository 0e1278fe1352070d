/**
 * SIGTERM under load, on a real process: the listener stops first, requests still arriving on open keep-alive
 * connections get a clean 503 `shutting_down`, no ERROR is logged, and every 202 is on disk.
 */
import { Database } from 'bun:sqlite';
import { afterAll, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hmacHex } from '../../src/lib/crypto.ts';
import { closedPort } from '../cli/harness.ts';
import { runToExit, spawnServe } from '../fixtures/serve-process.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

const root = mkdtempSync(join(tmpdir(), 'hookrelay-term-'));
let kill: (() => void) | null = null;
afterAll(() => {
  kill?.();
  rmSync(root, { recursive: true, force: true });
});

// serve as it runs by default, and with the receipt commit and the handoff worker on the relay thread.
it.each([
  ['default', {}],
  ['HOOKRELAY_RELAY_THREAD=on', { HOOKRELAY_RELAY_THREAD: 'on' }],
] as const)(
  '%s: stops accepting, answers the stragglers 503 shutting_down, logs no ERROR and loses no 202',
  async (name, env) => {
    const dataDir = join(root, name);
    mkdirSync(dataDir);
    expect((await runToExit(['init', '--shop', 'term.myshopify.com', '--data-dir', dataDir], root)).code).toBe(0);
    const grant = await runToExit(['grant', 'issue', '--shop', 'term.myshopify.com', '--tier', 'operator', '--ttl', '1h', '--data-dir', dataDir], root);
    const server = await spawnServe(dataDir, closedPort(), { env });
    kill = () => server.proc.kill('SIGKILL');
    const created = (await fetch(`${server.url}/agent/v1/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${grant.json.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ triggerVariant: 'order', resourceIdPath: 'order.id' }),
    }).then((r) => r.json())) as any;
    const { endpoint, secret } = created.data;

    const acked: string[] = [];
    const answers = new Map<string, number>();
    let exited = false;
    let seq = 0;
    // Eight senders on keep-alive connections, sending until the process is gone (refused connections end them).
    const senders = Array.from({ length: 8 }, async () => {
      while (!exited) {
        const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: `term-${++seq}`, order: { id: seq } });
        const res = await fetch(endpoint.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) },
          body,
        }).catch(() => null);
        if (!res) {
          await Bun.sleep(5);
          continue;
        }
        const json = (await res.json()) as any;
        const key = `${res.status} ${json.code ?? json.status}`;
        answers.set(key, (answers.get(key) ?? 0) + 1);
        if (res.status === 202) acked.push(json.eventId);
      }
    });
    while (acked.length < 50) await Bun.sleep(10);
    server.proc.kill('SIGTERM');
    expect(await server.proc.exited).toBe(0);
    exited = true;
    await Promise.all(senders);
    kill = null;

    for (const key of answers.keys()) expect(['202 accepted', '503 shutting_down']).toContain(key);
    const log = await server.stderrEnded();
    expect(log).toContain('stopped');
    expect(log).not.toMatch(/ERROR|unhandled|commit failed/);

    const db = new Database(join(dataDir, 'hookrelay.db'), { readonly: true });
    const stored = new Set(
      db
        .query<{ id: string }, []>('SELECT id FROM events')
        .all()
        .map((r) => r.id),
    );
    db.close();
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);
  },
  90_000,
);
