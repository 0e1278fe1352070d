/**
 * A plan cap over two real `serve` processes on one PostgreSQL, seen as a client sees it: on a `free` store (25
 * diagnostics shares per 30 days), 30 previews then 30 executes at once, alternating between the instances, give
 * exactly 25 × 200 and 5 × 402, and the meter ends at 25. Runs only when HOOKRELAY_TEST_DATABASE_URL is set.
 */
import { describe, expect, it, setDefaultTimeout } from 'bun:test';
import pg from 'pg';
import { closedPort } from '../cli/harness.ts';
import { runToExit, serveScratch, spawnServe } from '../fixtures/serve-process.ts';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';

setDefaultTimeout(120_000);

const SHOP = 'caps.myshopify.com';
const CAP = 25;
const TRIES = 30;

const scratch = serveScratch('caps');
const { root, running, dir } = scratch;

describe.if(!!TEST_DATABASE_URL)('a plan cap over two serve instances on one PostgreSQL', () => {
  it('30 concurrent diagnostics-share executes at 25 left: exactly 25 × 200 and 5 × 402, the meter at 25', async () => {
    const shared = { HOOKRELAY_DATABASE_URL: await scratch.database(), HOOKRELAY_SECRET_KEY: 'cd'.repeat(32) };
    const dirs = [dir('a'), dir('b')];
    const init = await runToExit(['init', '--shop', SHOP, '--plan', 'free', '--data-dir', dirs[0]!], root, 30_000, shared);
    expect(init.code).toBe(0);
    // Two grants: previews are rate limited per grant (recovery_preview, 20 a minute), and the clock is real.
    const tokens: string[] = [];
    for (const label of ['caps-1', 'caps-2']) {
      const g = await runToExit(
        ['grant', 'issue', '--shop', SHOP, '--tier', 'admin_assistant', '--ttl', '1h', '--label', label, '--data-dir', dirs[1]!],
        root,
        30_000,
        shared,
      );
      expect(g.code).toBe(0);
      tokens.push(g.json.token);
    }
    const servers = await Promise.all(dirs.map((d) => spawnServe(d, closedPort(), { env: shared })));
    running.push(...servers);

    const post = async (i: number, body: unknown, key?: string) => {
      const res = await fetch(`${servers[i % 2]!.url}/agent/v1/diagnostics-share-intents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens[i % 2]!}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    const intents = [];
    for (let i = 0; i < TRIES; i++) {
      const p = await post(i, { mode: 'preview', input: { note: `share ${i}` } });
      expect(p.status).toBe(201);
      intents.push(p.json.data.intent);
    }
    const answers = await Promise.all(
      intents.map((intent, i) => post(i, { mode: 'execute', intentId: intent.id, confirmationToken: intent.confirmation.token }, `caps-${i}`)),
    );
    const statuses = answers.map((a) => a.status);
    const db = new pg.Client({ connectionString: shared.HOOKRELAY_DATABASE_URL });
    await db.connect();
    try {
      const used = await db.query("SELECT used FROM usage_counters WHERE meter = 'diagnostics_shares'");
      const shares = await db.query("SELECT count(*)::int AS n FROM records WHERE kind = 'diagnostics_share'");
      expect({ ok: statuses.filter((s) => s === 200).length, refused: statuses.filter((s) => s === 402).length }).toEqual({ ok: CAP, refused: TRIES - CAP });
      expect(Number(used.rows[0]?.used)).toBe(CAP);
      expect(shares.rows[0]?.n).toBe(CAP);
    } finally {
      await db.end();
    }
    for (const a of answers.filter((x) => x.status === 402)) expect(a.json.refusal).toMatchObject({ category: 'usage', code: 'diagnostics_shares_exhausted' });
    for (const s of servers) expect(s.stderr()).not.toContain('internal error');
  });
});
