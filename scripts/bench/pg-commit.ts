/**
 * `bun scripts/bench/pg-commit.ts` (HOOKRELAY_BENCH_DATABASE_URL or the test URL): what one PostgreSQL group
 * commit costs, statement by statement. Commits batches of 1 KiB receipts through PgRepo.commitIngest into a
 * fresh database (dropped after), timing every statement the commit sends, and a bare durable commit for the floor.
 */
import pg from 'pg';
import { openPgRepo } from '../../db/pg/repo.ts';
import type { PendingReceipt } from '../../db/types.ts';
import { createIdGenerator } from '../../src/lib/ids.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { HOOK_BODY, receivedEvent, round } from './_lib.ts';

const URL_BASE = process.env.HOOKRELAY_BENCH_DATABASE_URL || process.env.HOOKRELAY_TEST_DATABASE_URL;
if (!URL_BASE) throw new Error('set HOOKRELAY_BENCH_DATABASE_URL');
const BATCH = Number(process.argv[2] ?? 32);
const COMMITS = Number(process.argv[3] ?? 200);
const name = `hr_probe_${process.pid}`;

async function admin(sql: string) {
  const c = new pg.Client({ connectionString: URL_BASE });
  await c.connect();
  await c.query(sql);
  await c.end();
}

/** Total ms and calls per statement kind (its first words), over every client of the process. */
const spent = new Map<string, { ms: number; n: number }>();
const query = pg.Client.prototype.query as (...args: unknown[]) => Promise<unknown>;
(pg.Client.prototype as unknown as { query: typeof query }).query = function (this: pg.Client, ...args: unknown[]) {
  const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string })?.text ?? '?');
  const key = text.replace(/\s+/g, ' ').trim().slice(0, 48);
  const t0 = performance.now();
  const done = () => {
    const s = spent.get(key) ?? { ms: 0, n: 0 };
    s.ms += performance.now() - t0;
    s.n++;
    spent.set(key, s);
  };
  // The pool calls with a callback (and gets no promise back); drizzle and this script await a promise.
  const last = args.length - 1;
  const cb = args[last];
  if (typeof cb === 'function') {
    args[last] = (...r: unknown[]) => {
      done();
      return cb(...r);
    };
  }
  const out = query.apply(this, args) as Promise<unknown> | undefined;
  if (typeof cb !== 'function') out?.then(done, done);
  return out as Promise<unknown>;
};

await admin(`CREATE DATABASE "${name}"`);
const url = new URL(URL_BASE);
url.pathname = `/${name}`;
try {
  const repo = await openPgRepo({ url: url.toString(), max: 4 });
  const T0 = Date.now();
  const STORE = 'st_01jz0000000000000000000000';
  const EP = 'ep_01jz0000000000000000000000';
  await repo.insertStore({
    id: STORE,
    platformKey: 'shopify',
    platformAccountId: 'a',
    shopDomain: 'probe.myshopify.com',
    installationId: 'i',
    plan: 'scale',
    billingStatus: 'active',
    destination: 'log',
    adminTokenEnv: null,
    credentialMode: null,
    clientId: null,
    clientSecretEnv: null,
    uninstalledAt: null,
    createdAt: T0,
    updatedAt: T0,
  });
  await repo.insertEndpoint(
    {
      id: EP,
      storeId: STORE,
      name: 'n',
      status: 'active',
      triggerVariant: 'generic',
      resourceIdPath: null,
      relatedResourceIdPath: null,
      fields: '[]',
      includeBody: 0,
      requiredPaths: '[]',
      senderProfile: null,
      authMode: 'hmac_sha256',
      headerName: 'X-Hookrelay-Signature',
      secretSealed: 's',
      secretLast4: 'abcd',
      previousSecretSealed: null,
      previousSecretExpiresAt: null,
      sourceLabel: 'x',
      eventType: null,
      expectedEveryMs: null,
      configVersion: 1,
      createdAt: T0,
      updatedAt: T0,
    },
    {},
  );
  const ids = createIdGenerator(systemClock);
  const body = new TextEncoder().encode(HOOK_BODY);
  const batch = (): PendingReceipt[] =>
    Array.from({ length: BATCH }, () => {
      const id = ids.next('evt');
      const event = receivedEvent({
        id,
        receiptId: id.replace(/^evt_/, 'rcpt_'),
        storeId: STORE,
        endpointId: EP,
        bodyBytes: body.length,
        at: Date.now(),
        eventType: 'bench',
      });
      return {
        event,
        body,
        bodyExpiresAt: T0 + 86400_000,
        dedupeSince: T0 - 86400_000,
        capacity: { meter: 'accepted_events', periodStart: T0 - (T0 % 86400_000), hardLimit: 1e9 },
      };
    });
  for (let i = 0; i < 20; i++) await repo.commitIngest(batch(), [], { until: Date.now() + 600_000, max: 2 * BATCH });
  spent.clear();
  const t0 = performance.now();
  for (let i = 0; i < COMMITS; i++) await repo.commitIngest(batch(), [], { until: Date.now() + 600_000, max: 2 * BATCH });
  const commitMs = (performance.now() - t0) / COMMITS;
  const statements = [...spent]
    .map(([sql, s]) => ({ sql, perCommitMs: round(s.ms / COMMITS, 3), calls: s.n }))
    .sort((a, b) => (b.perCommitMs ?? 0) - (a.perCommitMs ?? 0));
  // The floor: one durable commit of one tiny row (a round trip and a WAL fsync).
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  await c.query('CREATE TABLE floor (n int)');
  spent.clear();
  const f0 = performance.now();
  for (let i = 0; i < COMMITS; i++) await c.query('INSERT INTO floor VALUES (1)');
  const floorMs = (performance.now() - f0) / COMMITS;
  await c.end();
  await repo.close();
  process.stdout.write(
    `${JSON.stringify({ batch: BATCH, commits: COMMITS, commitMs: round(commitMs, 2), receiptsPerSecondOneAtATime: round((BATCH * 1000) / commitMs, 0), durableTinyCommitMs: round(floorMs, 2), statements }, null, 1)}\n`,
  );
} finally {
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
