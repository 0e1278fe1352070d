/**
 * `bun scripts/bench/seat-pages.ts [--events 100000] [--runs 30]`: how long the seat's Events, Recovery and Plan
 * pages take to render (server side, in-process, through the real invoke) over a SQLite store seeded with settled
 * events (scripts/bench/seed.ts: ~50% with an external id, 4% failed, 1% no_workflow). Prints one Markdown table of
 * the median and p95 per page, in milliseconds. The browser's figures (LCP, INP) are the browser suite's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import type { SqliteRepo } from '../../db/sqlite/repo.ts';
import { openCore } from '../../src/boot.ts';
import { DEFAULT_RATE_LIMITS } from '../../src/contract/limits.ts';
import type { Config } from '../../src/core.ts';
import { AuthFailureLimiter } from '../../src/lib/auth-failures.ts';
import { stderrLog } from '../../src/lib/log.ts';
import { issueGrant } from '../../src/ops/grants.ts';
import { initStore } from '../../src/ops/stores.ts';
import { createApp } from '../../src/server/app.ts';
import { createInvoke } from '../../src/server/pipeline.ts';
import { RateLimiter } from '../../src/server/rate-limit.ts';
import { page as eventsPage } from '../../src/seat/pages/events.ts';
import { page as planPage } from '../../src/seat/pages/plan.ts';
import { page as recoveryPage } from '../../src/seat/pages/recovery.ts';
import { seatCall } from '../../src/seat/call.ts';
import type { Human, SeatContext, SeatPage } from '../../src/seat/types.ts';
import { seedEvents } from './seed.ts';

const { values: a } = parseArgs({ options: { events: { type: 'string', default: '100000' }, runs: { type: 'string', default: '30' } } });
const EVENTS = Number(a.events);
const RUNS = Number(a.runs);
const SHOP = 'bench.myshopify.com';

// Rate limits out of reach: the bench measures the pages, not the per-minute quotas (the limiter still runs).
const unlimited = Object.fromEntries(Object.keys(DEFAULT_RATE_LIMITS).map((k) => [k, { grant: 1e12, store: 1e12 }])) as Config['rateLimits'];
const dir = mkdtempSync(`${tmpdir()}/hookrelay-seat-bench-`);
try {
  const core = await openCore({ dataDir: dir, log: stderrLog('warn'), synchronous: 'NORMAL', config: { rateLimits: unlimited, env: (n) => process.env[n] } });
  const { store } = await initStore(core, { shopDomain: SHOP, plan: 'scale' });
  const { token } = await issueGrant(core, { shopDomain: SHOP, tier: 'admin_assistant', ttlMs: 3600_000, label: 'seat bench' });
  const app = createApp(core);
  const endpointIds: string[] = [];
  for (const [i, triggerVariant] of (['order', 'customer', 'product', 'generic'] as const).entries()) {
    const res = await app.fetch(
      new Request('http://bench.local/agent/v1/endpoints', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ triggerVariant, name: `bench ${i + 1}`, ...(triggerVariant === 'generic' ? {} : { resourceIdPath: 'order.id' }) }),
      }),
    );
    if (res.status !== 201) throw new Error(`createEndpoint: HTTP ${res.status} ${await res.text()}`);
    endpointIds.push(((await res.json()) as { data: { endpoint: { id: string } } }).data.endpoint.id);
  }
  const sqlite = (core.repo as SqliteRepo).sqlite;
  const now = core.clock.now();
  const seeded = seedEvents(sqlite, { storeId: store.storeId, endpointIds, count: EVENTS, fromMs: now - 29 * 86400_000, toMs: now - 60_000, kind: 'history' });
  process.stderr.write(`seeded ${EVENTS} events in ${seeded.toFixed(1)} s\n`);
  const pick = (q: string) => sqlite.query<{ id: string; ext: string | null }, []>(q).get()!;
  const deep = pick('SELECT id, external_event_id AS ext FROM events WHERE external_event_id IS NOT NULL ORDER BY id LIMIT 1 OFFSET 10');

  const invoke = createInvoke({
    core,
    endpointChanged: () => {},
    limiter: new RateLimiter(core.repo, core.clock, core.config.rateLimits),
    authFailures: new AuthFailureLimiter(core.clock),
    inflight: new Map(),
  });
  const human: Human = { face: 'console', store: (await core.repo.getStoreByShop(SHOP))!, actor: 'bench@local', sessionId: 'ses_bench' };
  let n = 0;
  const ctx = (path: string): SeatContext => ({
    core,
    human,
    url: new URL(path, 'http://bench.local'),
    form: null,
    base: '/console',
    csrf: 'csrf',
    nonce: 'nonce',
    publicUrl: core.config.publicUrl,
    embedded: false,
    call: seatCall(invoke, human, `req_bench_${++n}`, () => null),
  });

  const cases: [string, SeatPage, string][] = [
    ['Events, newest 50', eventsPage, '/console/events'],
    ['Events, failed', eventsPage, '/console/events?outcome=failed'],
    ['Events, by trigger (customer)', eventsPage, '/console/events?triggerVariant=customer'],
    ['Events, by external id (an old event)', eventsPage, `/console/events?externalEventId=${encodeURIComponent(deep.ext!)}`],
    ['Events, by external id (no match)', eventsPage, '/console/events?externalEventId=nothing-has-this'],
    ['Event detail', eventsPage, `/console/events?event=${deep.id}`],
    ['Recovery', recoveryPage, '/console/recovery'],
    ['Plan', planPage, '/console/plan'],
  ];
  const rows: string[] = ['| page | median ms | p95 ms | bytes |', '|---|---:|---:|---:|'];
  for (const [name, page, path] of cases) {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < RUNS + 3; i++) {
      const t = performance.now();
      const r = await page.get(ctx(path));
      const ms = performance.now() - t;
      if (!('html' in r) || (r.status ?? 200) !== 200) throw new Error(`${name}: ${JSON.stringify(r).slice(0, 300)}`);
      bytes = r.html.length;
      if (i >= 3) times.push(ms); // the first runs warm the statement cache
    }
    times.sort((x, y) => x - y);
    const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
    rows.push(`| ${name} | ${q(0.5).toFixed(1)} | ${q(0.95).toFixed(1)} | ${bytes} |`);
  }
  process.stdout.write(`${EVENTS} events, ${RUNS} runs each (Bun ${Bun.version}, SQLite, in-process)\n\n${rows.join('\n')}\n`);
  await core.repo.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
