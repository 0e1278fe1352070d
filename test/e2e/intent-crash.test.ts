/**
 * An execute killed with SIGKILL at each of its steps (src/lib/crash-points.ts), on a real process, then retried
 * with the same Idempotency-Key after a restart: the retry gets the true outcome (200, executed), the change is
 * made exactly once (one new config version; one more handoff of a replayed event), no intent stays `executing`,
 * and a second execute is told the change is made rather than advised to preview again. SQLite always;
 * PostgreSQL when HOOKRELAY_TEST_DATABASE_URL is set (CI sets it).
 */
import { Database } from 'bun:sqlite';
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { CRASH_POINTS } from '../../src/lib/crash-points.ts';
import { hmacHex } from '../../src/lib/crypto.ts';
import { closedPort } from '../cli/harness.ts';
import { until } from '../fixtures/handoff.ts';
import { runToExit, spawnServe, type ServeProcess } from '../fixtures/serve-process.ts';
import { pgAdmin, TEST_DATABASE_URL } from '../fixtures/storage.ts';

setDefaultTimeout(90_000);

const root = mkdtempSync(join(tmpdir(), 'hookrelay-crash-'));
const database = `hr_crash_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const running = new Set<ServeProcess>();
let databaseUrl: string | null = null;

afterAll(async () => {
  for (const s of running) s.proc.kill('SIGKILL');
  await Promise.all([...running].map((s) => s.proc.exited));
  if (databaseUrl) await pgAdmin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  rmSync(root, { recursive: true, force: true });
}, 60_000);

type Json = { status: number; json: any };

async function call(base: string, token: string, method: string, path: string, body?: unknown, key?: string): Promise<Json> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers['idempotency-key'] = key;
  const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

/** One row read from the store's database (polling the API would meet its read limits). */
async function queryOne<T>(backend: string, dataDir: string, sql: string, params: string[] = []): Promise<T> {
  if (backend === 'sqlite') {
    const db = new Database(join(dataDir, 'hookrelay.db'), { readonly: true });
    try {
      return db.query(sql.replace(/\$\d/g, '?')).get(...params) as T;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl! });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows[0] as T;
  } finally {
    await client.end();
  }
}

const executingIntents = async (backend: string, dataDir: string) =>
  Number((await queryOne<{ n: number }>(backend, dataDir, "SELECT count(*) AS n FROM intents WHERE state = 'executing'")).n);
const eventState = (backend: string, dataDir: string, id: string) =>
  queryOne<{ outcome: string; attempts: number }>(backend, dataDir, 'SELECT outcome, attempts FROM events WHERE id = $1', [id]);

const backendList = ['sqlite', ...(TEST_DATABASE_URL ? ['postgres'] : [])];
const cases = CRASH_POINTS.flatMap((point) => (['edit', 'replay'] as const).map((kind) => [point, kind] as const));

for (const backend of backendList) {
  describe(`an execute killed at each step, then retried with its key (${backend})`, () => {
    it.each(cases)('killed at %s (%s): the retry gets the outcome, the change is made once, no intent stays executing', async (point, kind) => {
      if (backend === 'postgres' && !databaseUrl) {
        await pgAdmin(`CREATE DATABASE "${database}"`);
        const url = new URL(TEST_DATABASE_URL!);
        url.pathname = `/${database}`;
        databaseUrl = url.toString();
      }
      const env: Record<string, string> = backend === 'postgres' ? { HOOKRELAY_DATABASE_URL: databaseUrl!, HOOKRELAY_SECRET_KEY: 'cd'.repeat(32) } : {};
      const shop = `crash-${point}-${kind}.myshopify.com`;
      const dataDir = join(root, `${backend}-${point}-${kind}`);
      mkdirSync(dataDir);
      expect((await runToExit(['init', '--shop', shop, '--data-dir', dataDir], root, 30_000, env)).code).toBe(0);
      const grant = await runToExit(['grant', 'issue', '--shop', shop, '--tier', 'admin_assistant', '--ttl', '1h', '--data-dir', dataDir], root, 30_000, env);
      expect(grant.code).toBe(0);
      const token = grant.json.token as string;

      const first = await spawnServe(dataDir, closedPort(), { env: { ...env, HOOKRELAY_CRASH_AT: point } });
      running.add(first);
      const created = await call(first.url, token, 'POST', '/agent/v1/endpoints', { triggerVariant: 'order', resourceIdPath: 'order.id' });
      expect(created.status).toBe(201);
      const { endpoint, secret } = created.json.data;

      let path: string;
      let input: Record<string, unknown>;
      let eventId = '';
      if (kind === 'replay') {
        const body = JSON.stringify({ event_type: 'order.flagged', external_event_id: `crash-${point}`, order: { id: 7 } });
        const sent = await fetch(endpoint.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-hookrelay-signature': hmacHex(secret, body) },
          body,
        });
        expect(sent.status).toBe(202);
        eventId = ((await sent.json()) as any).eventId;
        await until(async () => (await eventState(backend, dataDir, eventId)).outcome === 'delivered', 20_000);
        path = `/agent/v1/events/${eventId}/replay-intents`;
        input = { reason: 'crash test' };
      } else {
        path = `/agent/v1/endpoints/${endpoint.id}/edit-intents`;
        input = { name: `after-${point}` };
      }
      const preview = await call(first.url, token, 'POST', path, { mode: 'preview', input });
      expect(preview.status).toBe(201);
      const intent = preview.json.data.intent;
      const execute = { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token };

      // The execute never gets an answer: the process dies at the point.
      const lost = await call(first.url, token, 'POST', path, execute, 'crash-key').catch(() => null);
      expect(lost).toBeNull();
      await first.proc.exited;
      expect(first.proc.signalCode).toBe('SIGKILL');
      running.delete(first);

      const second = await spawnServe(dataDir, closedPort(), { env });
      running.add(second);
      try {
        // As a client does: a 409 with Retry-After (the dead process's claim not yet seen gone) is retried.
        let retried = await call(second.url, token, 'POST', path, execute, 'crash-key');
        for (
          let i = 0;
          i < 10 && retried.status === 409 && retried.json.error?.code === 'conflict' && retried.json.refusal?.code !== 'intent_not_previewed';
          i++
        ) {
          await Bun.sleep(1000);
          retried = await call(second.url, token, 'POST', path, execute, 'crash-key');
        }
        expect({ status: retried.status, state: retried.json.data?.intent?.state }).toEqual({ status: 200, state: 'executed' });
        const again = await call(second.url, token, 'POST', path, execute, 'crash-key');
        expect(again.json.data.intent.result).toEqual(retried.json.data.intent.result);

        const other = await call(second.url, token, 'POST', path, execute, 'another-key');
        expect(other.status).toBe(409);
        expect(other.json.refusal.code).toBe('intent_not_previewed');
        expect(other.json.refusal.recommendedAction).toContain('Nothing to do');

        if (kind === 'edit') {
          const read = await call(second.url, token, 'GET', `/agent/v1/endpoints/${endpoint.id}`);
          expect({ version: read.json.data.endpoint.configVersion, name: read.json.data.endpoint.name }).toEqual({ version: 2, name: `after-${point}` });
        } else {
          const read = () => eventState(backend, dataDir, eventId);
          await until(async () => (await read()).outcome === 'delivered' && Number((await read()).attempts) >= 2, 20_000);
          await Bun.sleep(300);
          expect(Number((await read()).attempts)).toBe(2);
        }
        expect(await executingIntents(backend, dataDir)).toBe(0);
      } finally {
        second.proc.kill('SIGKILL');
        await second.proc.exited;
        running.delete(second);
      }
    });
  });
}
