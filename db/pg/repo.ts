/**
 * PostgreSQL storage, for several `serve` instances on one database: what differs from SQLite (db/sqlite/repo.ts);
 * every other area is written once for both dialects (db/areas/) and runs on this file's thin runner. What SQLite
 * gets from being one process, this gets from the database: dedupe by a unique key, meters by conditional updates under a row lock, the
 * handoff queue claimed with FOR UPDATE SKIP LOCKED under leases that carry a token every write checks, and
 * migrations under an advisory lock.
 *
 * Driver: `pg` (node-postgres). Bun's built-in SQL client is not used: in Bun 1.3.x it has no LISTEN, array
 * parameters are broken and prepared statements could return another query's rows. Switch once those are fixed
 * and it passes this file's tests (test/db/pg-*.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { getTableColumns } from 'drizzle-orm';
import pg from 'pg';
import { sharedAreas } from '../areas/index.ts';
import { POSTGRES } from '../dialect.ts';
import { runMigrations, type Migration } from '../migrate.ts';
import {
  answeredByServer,
  CommitUnknownError,
  PG_TIMEOUTS,
  pgClientClass,
  settleCommit,
  withoutDeadline,
  type PgClient,
  type PgClientClass,
  type PgTimeouts,
} from './client.ts';
import { batchSteps, numberPlaceholders, withRunner, type SqlRunner } from '../runner.ts';
import { migrations as pgMigrations } from '../migrations/pg/index.ts';
import { leaseToWorker, receiptRow } from '../areas/receipt-rules.ts';
import type { Instance, PendingAuthFailure, Repo, Signal } from '../repo.ts';
import type { AttemptResult, AttemptStart, CommittedReceipt, DueEvent, EventRow, IngestLease, PendingReceipt } from '../types.ts';
import { METRIC, STATS_WIDTHS_MS, UNDELIVERED, statsBucket, withEndpointsAndStores } from '../types.ts';
import * as s from './schema.ts';

/** Any two instances migrating at once serialise on this key (pg_advisory_xact_lock). */
const MIGRATION_LOCK = 0x686f6f6b; // 'hook'
/**
 * Each storage handle holds pg_advisory_lock(LIVENESS_LOCK, owner) on a connection of its own while it lives, and
 * prefixes its lease tokens with `owner:`. The server drops the lock when that connection ends (a process killed
 * with SIGKILL included), so peers claim a dead holder's leases at once instead of when they expire, minutes later.
 */
const LIVENESS_LOCK = 0x68726c76; // 'hrlv'
const UNKNOWN_MESSAGE = 'The worker stopped or lost its lease after starting this handoff; Flow may have received the trigger.';

/** int8 as a JavaScript number (milliseconds and counters stay far below 2^53). */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export interface PgOptions {
  url: string;
  /** A schema to use (created if missing): tests run each in its own. */
  schema?: string;
  max?: number;
  /** How long an idle pooled connection stays open, ms (pg's default 10 s); tests that open many handles shorten it. */
  idleTimeoutMillis?: number;
  /** Deadlines on every connection and query (see db/pg/client.ts): openPgRepo's default PG_TIMEOUTS; openPgPool's none. */
  timeouts?: PgTimeouts | null;
}

const EVENT_COLUMNS = Object.entries(getTableColumns(s.events)).filter(([key]) => key !== 'leaseToken');

/** A raw events row (snake_case) as the typed row shared by every dialect. */
function rowToEvent(raw: Record<string, unknown>): EventRow {
  const row: Record<string, unknown> = {};
  for (const [key, col] of EVENT_COLUMNS) row[key] = raw[col.name] ?? null;
  return row as EventRow;
}

/**
 * The connection pool of a database URL, every connection in the schema (search_path) when one is given. The
 * setting is a startup parameter: a `SET` sent on connect would overlap the caller's first query (pg deprecates
 * that) and its failure would go unseen.
 */
export function openPgPool(opts: PgOptions): pg.Pool {
  const timeouts = opts.timeouts ?? null;
  const pool = new pg.Pool({
    ...pgClientConfig(opts.url, opts.schema),
    Client: pgClientClass(timeouts) as unknown as new () => pg.ClientBase,
    max: opts.max ?? 10,
    idleTimeoutMillis: opts.idleTimeoutMillis,
    // Waiting for a free connection: at worst a hung one's deadline, then a new connection.
    connectionTimeoutMillis: timeouts ? timeouts.answerMs + timeouts.connectMs : undefined,
  });
  // An idle connection dropped by the server must not end the process; the next query reconnects.
  pool.on('error', () => {});
  return pool;
}

/** What every connection of a URL starts with: int8 as numbers, and the schema (search_path) when one is given. */
function pgClientConfig(url: string, schema: string | undefined): pg.ClientConfig {
  const name = schema?.replace(/"/g, '');
  // Startup options split on spaces; a backslash keeps one inside the value.
  const options = name ? `-c search_path="${name.replace(/\\/g, '\\\\').replace(/ /g, '\\ ')}"` : undefined;
  return { connectionString: url, types, options };
}

/** Applies pending migrations under an advisory lock, so N instances can start at once. */
export async function migratePg(pool: pg.Pool, list: Migration[] = pgMigrations, schema?: string): Promise<string[]> {
  const client = await pool.connect();
  // A migration may rewrite a large table: no deadline, no statement_timeout.
  const restoreDeadline = withoutDeadline(client);
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    if (schema) {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema.replace(/"/g, '')}"`);
      await client.query(`SET LOCAL search_path TO "${schema.replace(/"/g, '')}"`);
    }
    await client.query('CREATE TABLE IF NOT EXISTS __hookrelay_migrations (tag text PRIMARY KEY, applied_at bigint NOT NULL)');
    const done = await runMigrations(
      {
        exec: async (q) => void (await client.query(q)),
        appliedTags: async () => (await client.query<{ tag: string }>('SELECT tag FROM __hookrelay_migrations')).rows.map((r) => r.tag),
        apply: async (m, statements) => {
          // drizzle-kit qualifies references with "public"; unqualified, they follow search_path (a test's own schema).
          for (const st of statements) await client.query(st.replaceAll('"public".', ''));
          await client.query('INSERT INTO __hookrelay_migrations (tag, applied_at) VALUES ($1, $2)', [m.tag, Date.now()]);
        },
      },
      list,
    );
    await client.query('COMMIT');
    return done;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    restoreDeadline();
    client.release();
  }
}

type Tx = pg.PoolClient;

/** The areas' runner (db/runner.ts): `?` placeholders numbered for PostgreSQL (the areas' SQL has no `?` in a literal). */
function pgRunner(pool: pg.Pool): SqlRunner {
  const numbered = numberPlaceholders;
  return {
    dialect: POSTGRES,
    all: async <T>(q: string, params: unknown[]) => (await pool.query(numbered(q), params)).rows as T[],
    run: async (q, params) => (await pool.query(numbered(q), params)).rowCount ?? 0,
    batch: async (writes) => {
      const c = await pool.connect();
      try {
        await c.query('BEGIN');
        const steps = batchSteps(writes, POSTGRES);
        let step = steps.next();
        while (!step.done) step = steps.next((await c.query(numbered(step.value[0]), step.value[1])).rowCount ?? 0);
        await c.query(step.value.ok ? 'COMMIT' : 'ROLLBACK');
        return step.value;
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        c.release();
      }
    },
  };
}

/** A PostgreSQL handle: every area, and its pool (for tests and benchmarks). */
export type PgRepo = Repo & { readonly pool: pg.Pool };

/**
 * The handle over a migrated database's pool. `url`: for the connections outside the pool (LISTEN, liveness);
 * `schema`: the deployment's own schema, if any (NOTIFY channels are named after it).
 */
export function pgRepo(pool: pg.Pool, url: string, schema?: string, timeouts: PgTimeouts | null = null): PgRepo {
  /** Lease tokens of the events this process holds (claimed, or leased by its own ingest commits). */
  const leaseTokens = new Map<string, string>();
  /** This process's event_stats shard: concurrent instances add to different rows. */
  const shard = Math.floor(Math.random() * 16);
  /** The key of this handle's liveness lock (LIVENESS_LOCK), the prefix of every lease token it writes. */
  let owner = randomOwner();
  let liveness: pg.Client | null = null;
  let livenessTaken: Promise<void> | null = null;
  /** The live holders seen by the last claim (endDeadLeases); null before the first. */
  let seenOwners: string | null = null;
  let closed = false;
  /** Connections outside the pool (LISTEN, liveness, settleCommit's): the pool's class and settings. */
  const Client: PgClientClass = pgClientClass(timeouts);
  const clientConfig: pg.ClientConfig = pgClientConfig(url, schema);

  /** A handle's id is its liveness key, taken on first use; it lives while pg_locks shows that lock granted. */
  const instance: Instance = {
    id: async () => {
      await alive();
      return String(owner);
    },
    alive: async (id: string) =>
      (
        await pool.query(
          `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = ${LIVENESS_LOCK} AND objsubid = 2 AND granted AND objid::text = $1`,
          [id],
        )
      ).rowCount! > 0,
  };
  const sql = pgRunner(pool);
  const areas = sharedAreas(sql, instance, { multiInstance: true, relayFile: null });

  /**
   * The liveness lock, taken when this handle first leases (a claim, or a commit leasing to the worker): admin
   * commands and handles that never lease hold no extra connection.
   */
  function alive(): Promise<void> {
    return (livenessTaken ??= holdLiveness().catch((err) => {
      livenessTaken = null;
      throw err;
    }));
  }

  /**
   * Takes this handle's liveness lock on a dedicated connection, and takes it again (after a second) if that
   * connection drops while the handle is open. Leases written meanwhile may be claimed by peers: every write
   * of this handle checks its token, so it is fenced, as after a lease's expiry.
   */
  async function holdLiveness(): Promise<void> {
    const c = new Client(clientConfig);
    c.once('end', () => {
      if (liveness !== c) return;
      liveness = null;
      retakeLiveness();
    });
    await c.connect();
    // Another live handle drew the same key (one in 2^31): draw again.
    while (!(await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [LIVENESS_LOCK, owner])).rows[0]!.ok) owner = randomOwner();
    if (closed) await c.end();
    else liveness = c;
  }

  function retakeLiveness(): void {
    if (!closed) setTimeout(() => void holdLiveness().catch(() => retakeLiveness()), 1000);
  }

  /** A transaction on a pooled connection. A COMMIT whose answer was lost throws CommitUnknownError (see commitIngest). */
  async function tx<T>(fn: (c: Tx) => Promise<T>): Promise<T> {
    const c = await pool.connect();
    let committing = false;
    try {
      await c.query('BEGIN');
      const out = await fn(c);
      committing = true;
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {});
      throw committing && !answeredByServer(err) ? new CommitUnknownError(err, (c as unknown as PgClient).session) : err;
    } finally {
      c.release();
    }
  }

  /** Whether the transaction of `session` that held `eventId` is stored; null when the database cannot say in time. */
  function settle(session: string, eventId: string): Promise<boolean | null> {
    const stored = async (c: pg.Client) => ((await c.query('SELECT 1 FROM events WHERE id = $1', [eventId])).rowCount ?? 0) > 0;
    return settleCommit(Client, clientConfig, session, stored, (timeouts ?? PG_TIMEOUTS).settleMs);
  }

  function commitReceipts(receipts: PendingReceipt[], authFailures: PendingAuthFailure[], lease: IngestLease | null, sent: (out: CommittedReceipt[]) => void) {
    return tx(async (c) => {
      if (authFailures.length) await recordAuthFailures(c, authFailures);
      const duplicates = await decideDuplicates(c, receipts);
      const granted = await reserveCapacity(c, receipts, duplicates);
      const token = lease ? newToken() : null;
      let leases = lease?.max ?? 0;
      const rows: EventRow[] = [];
      const bodies: { id: string; body: Uint8Array; expiresAt: number }[] = [];
      const out: CommittedReceipt[] = [];
      const stats = new StatsBatch();
      const takeRoom = (e: EventRow, capacity: NonNullable<PendingReceipt['capacity']>) => {
        const key = meterKey(e.storeId, capacity);
        const left = granted.get(key) ?? 0;
        if (left <= 0) return false;
        granted.set(key, left - 1);
        return true;
      };
      for (const p of receipts) {
        const e = p.event;
        const duplicateOf = duplicates.get(e.id) ?? null;
        const row = receiptRow(e, duplicateOf, p.capacity, takeRoom);
        const outcome = row.outcome;
        const leased = leaseToWorker(row, lease, leases);
        if (leased) {
          leases--;
          leaseTokens.set(e.id, token!);
        }
        rows.push(row);
        if (!duplicateOf && p.body) bodies.push({ id: e.id, body: p.body, expiresAt: p.bodyExpiresAt });
        stats.add(row.storeId, row.receivedAt, METRIC.received(outcome));
        out.push({ eventId: row.id, receiptId: row.receiptId, outcome, duplicateOf, leased });
      }
      await insertEvents(c, rows, token, new Set(out.filter((o) => o.leased).map((o) => o.eventId)));
      if (bodies.length) {
        await c.query('INSERT INTO event_bodies (event_id, body, expires_at) SELECT * FROM unnest($1::text[], $2::bytea[], $3::bigint[])', [
          bodies.map((b) => b.id),
          bodies.map((b) => Buffer.from(b.body)),
          bodies.map((b) => b.expiresAt),
        ]);
      }
      await stats.flush(c, shard);
      sent(out);
      return out;
    });
  }

  /**
   * The first receipt per (endpoint, external id) within its window wins the key; the others link to it. The
   * database decides across instances: a concurrent commit holding the same key waits on its row, then sees it.
   */
  async function decideDuplicates(c: Tx, receipts: PendingReceipt[]): Promise<Map<string, string>> {
    const dup = new Map<string, string>();
    const first = new Map<string, PendingReceipt>();
    for (const p of receipts) {
      const e = p.event;
      if (e.externalEventId == null || p.dedupeSince == null) continue;
      const key = `${e.endpointId}\u0000${e.externalEventId}`;
      const earlier = first.get(key);
      if (earlier) dup.set(e.id, earlier.event.id);
      else first.set(key, p);
    }
    if (!first.size) return dup;
    const cands = [...first.values()];
    const since = Math.min(...cands.map((p) => p.dedupeSince!));
    // A key whose first receipt is older than the window is taken over by the new receipt.
    const won = await c.query<{ event_id: string }>(
      `INSERT INTO dedupe_keys (endpoint_id, external_event_id, event_id, received_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
       ON CONFLICT (endpoint_id, external_event_id) DO UPDATE
         SET event_id = excluded.event_id, received_at = excluded.received_at
         WHERE dedupe_keys.received_at < $5
       RETURNING event_id`,
      [
        cands.map((p) => p.event.endpointId),
        cands.map((p) => p.event.externalEventId),
        cands.map((p) => p.event.id),
        cands.map((p) => p.event.receivedAt),
        since,
      ],
    );
    const winners = new Set(won.rows.map((r) => r.event_id));
    const losers = cands.filter((p) => !winners.has(p.event.id));
    if (losers.length) {
      const held = await c.query<{ endpoint_id: string; external_event_id: string; event_id: string }>(
        `SELECT d.endpoint_id, d.external_event_id, d.event_id FROM dedupe_keys d
         JOIN unnest($1::text[], $2::text[]) AS k(endpoint_id, external_event_id) USING (endpoint_id, external_event_id)`,
        [losers.map((p) => p.event.endpointId), losers.map((p) => p.event.externalEventId)],
      );
      const byKey = new Map(held.rows.map((r) => [`${r.endpoint_id}\u0000${r.external_event_id}`, r.event_id]));
      for (const p of losers) dup.set(p.event.id, byKey.get(`${p.event.endpointId}\u0000${p.event.externalEventId}`)!);
    }
    for (const [id, firstId] of dup) {
      const p = receipts.find((r) => r.event.id === firstId);
      // A receipt of this batch that lost the key links to the stored winner, not to its batch neighbour.
      if (p && dup.has(p.event.id)) dup.set(id, dup.get(p.event.id)!);
    }
    return dup;
  }

  /**
   * How many accepted receipts each meter takes in this commit: as many as fit below the hard limit, reserved
   * by one conditional update under the meter row's lock, so instances never count past the cap together.
   */
  async function reserveCapacity(c: Tx, receipts: PendingReceipt[], duplicates: Map<string, string>): Promise<Map<string, number>> {
    const want = new Map<string, { storeId: string; meter: string; periodStart: number; hardLimit: number; n: number }>();
    for (const p of receipts) {
      if (p.event.outcome !== 'accepted' || !p.capacity || duplicates.has(p.event.id)) continue;
      const key = meterKey(p.event.storeId, p.capacity);
      const w = want.get(key);
      if (w) w.n++;
      else want.set(key, { storeId: p.event.storeId, ...p.capacity, n: 1 });
    }
    const granted = new Map<string, number>();
    // Meter rows locked in one order (by key), not the receipts' arrival order: two instances committing receipts
    // of the same stores would otherwise each hold a row the other waits for, and PostgreSQL fails one commit
    // (deadlock detected), all its receipts with it.
    for (const [key, w] of [...want].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      await c.query('INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES ($1, $2, $3, 0) ON CONFLICT DO NOTHING', [
        w.storeId,
        w.meter,
        w.periodStart,
      ]);
      const r = await c.query<{ granted: number }>(
        `UPDATE usage_counters u SET used = GREATEST(o.used, LEAST($4::int, o.used + $5::int))
         FROM (SELECT used FROM usage_counters WHERE store_id = $1 AND meter = $2 AND period_start = $3 FOR UPDATE) o
         WHERE u.store_id = $1 AND u.meter = $2 AND u.period_start = $3
         RETURNING u.used - o.used AS granted`,
        [w.storeId, w.meter, w.periodStart, w.hardLimit, w.n],
      );
      granted.set(key, r.rows[0]?.granted ?? 0);
    }
    return granted;
  }

  async function insertEvents(c: Tx, rows: EventRow[], token: string | null, leased: Set<string>): Promise<void> {
    if (!rows.length) return;
    const cols = EVENT_COLUMNS.map(([, col]) => col);
    const arrays = cols.map(() => [] as unknown[]);
    const tokens: (string | null)[] = [];
    for (const r of rows) {
      for (const [i, [key]] of EVENT_COLUMNS.entries()) arrays[i]!.push((r as Record<string, unknown>)[key] ?? null);
      tokens.push(leased.has(r.id) ? token : null);
    }
    const casts = cols.map((col, i) => `$${i + 1}::${pgType(col.getSQLType())}[]`);
    await c.query(
      `INSERT INTO events (${cols.map((col) => col.name).join(', ')}, lease_token)
       SELECT * FROM unnest(${casts.join(', ')}, $${cols.length + 1}::text[])`,
      [...arrays, tokens],
    );
  }

  /**
   * A lease ends at its time, or as soon as its holder's liveness lock is gone (stopped, or killed): when the set of
   * live holders changed since this handle's last claim (and at its first), leases of holders no longer live end
   * now, so the claim takes them and ends their `sending` attempts `unknown` (a token without an owner, written
   * by an older version still running, waits for its time). Returns the live set.
   */
  async function endDeadLeases(c: Tx, now: number): Promise<string> {
    const live = `SELECT objid::text AS owner FROM pg_locks WHERE locktype = 'advisory' AND classid = ${LIVENESS_LOCK} AND objsubid = 2 AND granted`;
    const owners = (await c.query<{ owner: string }>(`${live} ORDER BY 1`)).rows.map((row) => row.owner).join(',');
    if (owners === seenOwners) return owners;
    // The live set is read again inside the update, after its snapshot: a holder that leased rows this update
    // can see had taken its lock before, so a new instance's fresh leases are never ended by a stale list.
    await c.query(
      `UPDATE events SET lease_until = $1, next_attempt_at = LEAST(next_attempt_at, $1)
       WHERE next_attempt_at IS NOT NULL AND lease_until > $1 AND position(':' in lease_token) > 0
         AND split_part(lease_token, ':', 1) NOT IN (${live})`,
      [now],
    );
    return owners;
  }

  /** NOTIFY channels are database-wide: a deployment in its own schema signals only its own instances. */
  function channelName(signal: Signal): string {
    return schema ? `${schema}_hookrelay_${signal}` : `hookrelay_${signal}`;
  }

  /**
   * Inserts the batch's auth failures; those of one endpoint, code and fold window beyond the window's `keepRows`
   * rows are added to its newest row instead (PendingAuthFailure): three statements per group, not one per failure.
   */
  async function recordAuthFailures(c: Tx, failures: PendingAuthFailure[]): Promise<void> {
    const groups = new Map<string, PendingAuthFailure[]>();
    const insert: PendingAuthFailure[] = [];
    for (const f of failures) {
      if (f.keepRows === undefined || f.foldSince === undefined) insert.push(f);
      else {
        const key = `${f.endpointId}\u0000${f.code}\u0000${f.foldSince}\u0000${f.keepRows}`;
        groups.set(key, [...(groups.get(key) ?? []), f]);
      }
    }
    const folds: { into: string | null; count: number; at: number; diagnosis: string | null | undefined }[] = [];
    for (const group of groups.values()) {
      const { endpointId, code, foldSince, keepRows } = group[0]!;
      const { rows } = await c.query<{ id: string }>(
        'SELECT id FROM auth_failures WHERE endpoint_id = $1 AND at >= $2 AND code = $3 ORDER BY at DESC, id DESC LIMIT $4',
        [endpointId, foldSince, code, keepRows],
      );
      const room = Math.max(0, keepRows! - rows.length);
      const fresh = group.slice(0, room);
      const rest = group.slice(room);
      insert.push(...fresh);
      if (rest.length) {
        folds.push({
          into: fresh.at(-1)?.id ?? rows[0]!.id,
          count: rest.reduce((n, f) => n + (f.count ?? 1), 0),
          at: Math.max(...rest.map((f) => f.at)),
          diagnosis: rest.findLast((f) => f.diagnosis !== undefined)?.diagnosis,
        });
      }
    }
    if (insert.length) {
      await c.query(
        `INSERT INTO auth_failures (id, store_id, endpoint_id, code, at, count, diagnosis)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::int[], $7::text[])`,
        [
          insert.map((f) => f.id),
          insert.map((f) => f.storeId),
          insert.map((f) => f.endpointId),
          insert.map((f) => f.code),
          insert.map((f) => f.at),
          insert.map((f) => f.count ?? 1),
          insert.map((f) => f.diagnosis ?? null),
        ],
      );
    }
    for (const f of folds)
      await c.query('UPDATE auth_failures SET count = count + $1, at = greatest(at, $2), diagnosis = CASE WHEN $5 THEN $4 ELSE diagnosis END WHERE id = $3', [
        f.count,
        f.at,
        f.into,
        f.diagnosis ?? null,
        f.diagnosis !== undefined,
      ]);
  }

  function newToken(): string {
    return `${owner}:${randomUUID()}`;
  }

  return withRunner(
    {
      ...areas,
      pool,

      /**
       * A COMMIT whose answer was lost is settled before anyone is answered: stored, and the receipts are returned as
       * committed; certainly not stored, and the original failure is thrown (a plain 503); or not known within
       * PgTimeouts.settleMs, and CommitUnknownError is thrown (the 503 names the receipt: see outcomeUnknown).
       */
      async commitIngest(receipts: PendingReceipt[], authFailures: PendingAuthFailure[], lease: IngestLease | null = null): Promise<CommittedReceipt[]> {
        if (lease) await alive();
        let committed = null as CommittedReceipt[] | null;
        try {
          return await commitReceipts(receipts, authFailures, lease, (out) => (committed = out));
        } catch (err) {
          const first = committed?.[0]?.eventId;
          const stored = err instanceof CommitUnknownError && first ? await settle(err.session, first) : false;
          if (stored) return committed!;
          for (const o of committed ?? []) if (o.leased) leaseTokens.delete(o.eventId);
          throw stored === false && err instanceof CommitUnknownError ? err.cause : err;
        }
      },

      async claimDue(now: number, limit: number, leaseUntil: number): Promise<DueEvent[]> {
        await alive();
        const token = newToken();
        let owners = '';
        const claimed = await tx(async (c) => {
          owners = await endDeadLeases(c, now);
          const r = await c.query(
            `UPDATE events SET lease_until = $1, outcome = 'queued', lease_token = $4
         WHERE id IN (SELECT id FROM events WHERE next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2)
                      ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
            [leaseUntil, now, limit, token],
          );
          const events = r.rows.map(rowToEvent);
          if (!events.length) return events;
          // Attempts still `sending` were left by a worker that stopped or lost its lease mid-send: `unknown`, counted.
          const left = await c.query<{ event_id: string; number: number }>(
            `UPDATE attempts SET outcome = 'unknown', finished_at = $1, code = 'unknown', message = $2
         WHERE event_id = ANY($3::text[]) AND outcome = 'sending' RETURNING event_id, number`,
            [now, UNKNOWN_MESSAGE, events.map((e) => e.id)],
          );
          const top = new Map<string, number>();
          for (const row of left.rows) top.set(row.event_id, Math.max(top.get(row.event_id) ?? 0, row.number));
          for (const e of events) {
            const n = top.get(e.id);
            if (n == null) continue;
            await c.query('UPDATE events SET attempts = GREATEST(attempts, $1), last_attempt_at = $2 WHERE id = $3', [n, now, e.id]);
            e.attempts = Math.max(e.attempts, n);
            e.lastAttemptAt = now;
          }
          return events;
        });
        seenOwners = owners;
        for (const e of claimed) leaseTokens.set(e.id, token);
        return withEndpointsAndStores(claimed, areas);
      },

      async journalAttempts(starts: AttemptStart[]): Promise<AttemptStart[]> {
        if (!starts.length) return [];
        // Only while this process's lease holds: same token, not expired. A send without a journal entry is never made.
        const r = await pool.query<{ event_id: string }>(
          `INSERT INTO attempts (event_id, number, destination, started_at, finished_at, outcome)
       SELECT k.event_id, k.number, k.destination, k.started_at, k.started_at, 'sending'
       FROM unnest($1::text[], $2::int[], $3::text[], $4::bigint[], $5::text[]) AS k(event_id, number, destination, started_at, token)
       JOIN events e ON e.id = k.event_id AND e.lease_token = k.token AND e.lease_until > k.started_at
       ON CONFLICT DO NOTHING RETURNING event_id`,
          [
            starts.map((a) => a.eventId),
            starts.map((a) => a.number),
            starts.map((a) => a.destination),
            starts.map((a) => a.startedAt),
            starts.map((a) => leaseTokens.get(a.eventId) ?? ''),
          ],
        );
        const ok = new Set(r.rows.map((row) => row.event_id));
        return starts.filter((a) => ok.has(a.eventId));
      },

      async recordAttempts(results: AttemptResult[]) {
        if (!results.length) return;
        await tx(async (c) => {
          const stats = new StatsBatch();
          for (const { attempt: a, event: e, storeId, metrics, unsent, unjournaled } of results) {
            if (unjournaled) {
              // A local send (no journal entry): the event only while it holds the lease it was sent under (this
              // process's token and that lease's end: the process may hold a later lease of its own), then its attempt once.
              const lease = [a.eventId, leaseTokens.get(a.eventId) ?? '', unjournaled.leaseUntil];
              const held = unsent
                ? await c.query(
                    `UPDATE events SET outcome = 'queued', next_attempt_at = $4, lease_until = NULL, lease_token = NULL
                     WHERE id = $1 AND lease_token = $2 AND lease_until IS NOT DISTINCT FROM $3`,
                    [...lease, e.nextAttemptAt],
                  )
                : await c.query(
                    `UPDATE events SET outcome = $4, code = $5, next_attempt_at = $6, delivered_at = $7, lease_until = $8, attempts = $9, last_attempt_at = $10,
                       lease_token = NULL WHERE id = $1 AND lease_token = $2 AND lease_until IS NOT DISTINCT FROM $3`,
                    [...lease, e.outcome, e.code, e.nextAttemptAt, e.deliveredAt, e.leaseUntil, a.number, a.finishedAt],
                  );
              if (held.rowCount === 0) continue;
              leaseTokens.delete(a.eventId);
              if (!unsent) {
                await c.query(
                  `INSERT INTO attempts (event_id, number, destination, started_at, finished_at, outcome, http_status, code, message, retry_at, field_counts)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`,
                  [a.eventId, a.number, a.destination, a.startedAt, a.finishedAt, a.outcome, a.httpStatus, a.code, a.message, a.retryAt, a.fieldCounts ?? null],
                );
              }
              for (const m of metrics) stats.add(storeId, a.finishedAt, m);
              continue;
            }
            if (unsent) {
              const dropped = await c.query("DELETE FROM attempts WHERE event_id = $1 AND number = $2 AND outcome = 'sending'", [a.eventId, a.number]);
              if (dropped.rowCount === 0) continue;
              leaseTokens.delete(a.eventId);
              await c.query("UPDATE events SET outcome = 'queued', next_attempt_at = $1, lease_until = NULL, lease_token = NULL WHERE id = $2", [
                e.nextAttemptAt,
                a.eventId,
              ]);
              for (const m of metrics) stats.add(storeId, a.finishedAt, m);
              continue;
            }
            const closed = await c.query(
              `UPDATE attempts SET started_at = $1, finished_at = $2, outcome = $3, http_status = $4, code = $5, message = $6, retry_at = $7,
           field_counts = $10 WHERE event_id = $8 AND number = $9 AND outcome = 'sending'`,
              [a.startedAt, a.finishedAt, a.outcome, a.httpStatus, a.code, a.message, a.retryAt, a.eventId, a.number, a.fieldCounts ?? null],
            );
            // Marked `unknown` by a claim after this worker's lease ended: it writes nothing more.
            if (closed.rowCount === 0) continue;
            leaseTokens.delete(a.eventId);
            await c.query(
              `UPDATE events SET outcome = $1, code = $2, next_attempt_at = $3, delivered_at = $4, lease_until = $5, attempts = $6, last_attempt_at = $7, lease_token = NULL
           WHERE id = $8`,
              [e.outcome, e.code, e.nextAttemptAt, e.deliveredAt, e.leaseUntil, a.number, a.finishedAt, a.eventId],
            );
            for (const m of metrics) stats.add(storeId, a.finishedAt, m);
          }
          await stats.flush(c, shard);
        });
      },

      async sweepExpired(now: number, keysBefore: number, limit: number, bodiesBeforeId = '') {
        // Past the expiry set when stored, or received before the retention in effect now (event ids sort by receipt).
        const bodies = await pool.query(
          `DELETE FROM event_bodies WHERE event_id IN
         (SELECT event_id FROM event_bodies WHERE expires_at <= $1 OR event_id < $3 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
          [now, limit, bodiesBeforeId],
        );
        const keys = await pool.query(
          `DELETE FROM idempotency_keys WHERE (store_id, key) IN
         (SELECT store_id, key FROM idempotency_keys WHERE created_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
          [keysBefore, limit],
        );
        // Rate windows are a minute long: anything older than an hour is history no one reads.
        await pool.query('DELETE FROM rate_counters WHERE window_start < $1', [now - 3600_000]);
        return { bodies: bodies.rowCount ?? 0, idempotencyKeys: keys.rowCount ?? 0 };
      },

      /**
       * Several instances share the queue: a starting instance never releases leases that live peers hold. A lease
       * ends at its time, or as soon as its holder is gone (the liveness lock, in claimDue); none is this process's.
       */
      async releaseAllLeases(_now: number) {
        return 0;
      },

      async releaseHeld(storeId: string, capacity: { meter: string; periodStart: number; hardLimit: number }, now: number) {
        return tx(async (c) => {
          await c.query('INSERT INTO usage_counters (store_id, meter, period_start, used) VALUES ($1, $2, $3, 0) ON CONFLICT DO NOTHING', [
            storeId,
            capacity.meter,
            capacity.periodStart,
          ]);
          const used =
            (
              await c.query<{ used: number }>('SELECT used FROM usage_counters WHERE store_id = $1 AND meter = $2 AND period_start = $3 FOR UPDATE', [
                storeId,
                capacity.meter,
                capacity.periodStart,
              ])
            ).rows[0]?.used ?? 0;
          const room = capacity.hardLimit - used;
          if (room <= 0) return 0;
          const r = await c.query(
            `UPDATE events SET outcome = 'accepted', code = NULL, next_attempt_at = $1
         WHERE id IN (SELECT id FROM events WHERE store_id = $2 AND outcome = 'held' AND ${UNDELIVERED} ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)`,
            [now, storeId, room],
          );
          const n = r.rowCount ?? 0;
          if (n)
            await c.query('UPDATE usage_counters SET used = used + $4 WHERE store_id = $1 AND meter = $2 AND period_start = $3', [
              storeId,
              capacity.meter,
              capacity.periodStart,
              n,
            ]);
          return n;
        });
      },

      /** The retained body, for replay only. */
      async getEventBody(eventId: string) {
        const row = (await pool.query<{ body: Buffer }>('SELECT body FROM event_bodies WHERE event_id = $1', [eventId])).rows[0];
        return row ? new Uint8Array(row.body) : null;
      },

      /**
       * One statement counts the call on every key below its limit and locks every key's row, a full one too (ON
       * CONFLICT DO UPDATE locks the rows its WHERE leaves), in key order: two instances taking the same keys never
       * deadlock. When a key was full, the others' counts are taken back before the commit, so nothing is counted.
       */
      async takeRate(keys: { key: string; limit: number }[], windowStart: number) {
        const sorted = [...keys].sort((x, y) => (x.key < y.key ? -1 : 1));
        return tx(async (c) => {
          const r = await c.query<{ key: string }>(
            `INSERT INTO rate_counters AS r (key, window_start, n)
             SELECT k, $3, 1 FROM unnest($1::text[], $2::int[]) AS t(k, lim) WHERE lim > 0 ORDER BY k
             ON CONFLICT (key, window_start) DO UPDATE SET n = r.n + 1
             WHERE r.n < (SELECT lim FROM unnest($1::text[], $2::int[]) AS t(k, lim) WHERE k = r.key)
             RETURNING key`,
            [sorted.map((k) => k.key), sorted.map((k) => k.limit), windowStart],
          );
          if (r.rows.length === keys.length) return -1;
          const counted = r.rows.map((row) => row.key);
          await c.query('UPDATE rate_counters SET n = n - 1 WHERE window_start = $2 AND key = ANY($1::text[])', [counted, windowStart]);
          const taken = new Set(counted);
          return keys.findIndex((k) => !taken.has(k.key));
        });
      },
      async addRate(counts: { key: string; n: number }[], windowStart: number) {
        const sorted = [...counts].sort((x, y) => (x.key < y.key ? -1 : 1));
        // Upserted in key order: two instances adding to the same keys never deadlock.
        const r = await pool.query<{ key: string; n: number }>(
          `INSERT INTO rate_counters (key, window_start, n) SELECT k, $3, d FROM unnest($1::text[], $2::int[]) AS t(k, d) ORDER BY k
       ON CONFLICT (key, window_start) DO UPDATE SET n = rate_counters.n + excluded.n RETURNING key, n`,
          [sorted.map((c) => c.key), sorted.map((c) => c.n), windowStart],
        );
        const after = new Map(r.rows.map((row) => [row.key, row.n]));
        return counts.map((c) => after.get(c.key)!);
      },

      async notify(channel: Signal, payload: string) {
        await pool.query('SELECT pg_notify($1, $2)', [channelName(channel), payload]);
      },

      /**
       * A dedicated connection LISTENs (a pooled one would be handed to other queries). Dropped, or failing to connect
       * again while the database is away, it tries again every second: the first attempt's failure is the caller's.
       */
      async listen(fn: (channel: Signal, payload: string) => void) {
        let client: pg.Client | null = null;
        let stopped = false;
        const connect = async (first: boolean): Promise<void> => {
          const c = new Client(clientConfig);
          let up = false;
          let over = false;
          const lost = () => {
            if (over || stopped) return;
            over = true;
            if (client === c) client = null;
            void c.end().catch(() => {});
            if (up || !first) setTimeout(() => void (stopped ? null : connect(false).catch(() => {})), 1000);
          };
          c.on('notification', (m) => {
            for (const channel of ['endpoint', 'due'] as const) if (m.channel === channelName(channel)) fn(channel, m.payload ?? '');
          });
          c.on('error', lost);
          try {
            await c.connect();
            for (const channel of ['endpoint', 'due'] as const) await c.query(`LISTEN "${channelName(channel)}"`);
          } catch (err) {
            lost();
            throw err;
          }
          up = true;
          if (stopped) await c.end().catch(() => {});
          else client = c;
        };
        await connect(true);
        return async () => {
          stopped = true;
          await (client as pg.Client | null)?.end().catch(() => {});
        };
      },

      async close() {
        closed = true;
        await liveness?.end().catch(() => {});
        await pool.end();
      },
    },
    sql,
  );
}

/** Opens a pool on the database, migrates it, and makes the handle (PgOptions.timeouts: PG_TIMEOUTS by default). */
export async function openPgRepo(opts: PgOptions): Promise<PgRepo> {
  const timeouts = opts.timeouts === undefined ? PG_TIMEOUTS : opts.timeouts;
  const pool = openPgPool({ ...opts, timeouts });
  await migratePg(pool, pgMigrations, opts.schema);
  return pgRepo(pool, opts.url, opts.schema?.replace(/"/g, ''), timeouts);
}

/** A liveness lock key: a positive int4, so pg_locks shows it (an oid) as the same number. */
function randomOwner(): number {
  return 1 + Math.floor(Math.random() * 0x7ffffffe);
}

function meterKey(storeId: string, c: { meter: string; periodStart: number }): string {
  return `${storeId}\u0000${c.meter}\u0000${c.periodStart}`;
}

/** The array type unnest needs for a column. */
function pgType(sqlType: string): string {
  return sqlType === 'bigint' ? 'bigint' : sqlType === 'integer' ? 'int' : sqlType === 'boolean' ? 'boolean' : 'text';
}

/** event_stats increments of one transaction, one upsert per (store, width, bucket, metric) into this instance's shard. */
class StatsBatch {
  private readonly rows = new Map<string, { storeId: string; width: number; bucket: number; metric: string; n: number }>();

  add(storeId: string, at: number, metric: string): void {
    for (const width of STATS_WIDTHS_MS) {
      const bucket = statsBucket(at, width);
      const key = `${storeId}\u0000${width}\u0000${bucket}\u0000${metric}`;
      const hit = this.rows.get(key);
      if (hit) hit.n++;
      else this.rows.set(key, { storeId, width, bucket, metric, n: 1 });
    }
  }

  async flush(c: Tx, shard: number): Promise<void> {
    if (!this.rows.size) return;
    const rows = [...this.rows.values()];
    await c.query(
      `INSERT INTO event_stats (store_id, width, bucket, metric, shard, n)
       SELECT k.store_id, k.width, k.bucket, k.metric, $5, k.n FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $6::bigint[]) AS k(store_id, width, bucket, metric, n)
       ON CONFLICT (store_id, width, bucket, metric, shard) DO UPDATE SET n = event_stats.n + excluded.n`,
      [rows.map((r) => r.storeId), rows.map((r) => r.width), rows.map((r) => r.bucket), rows.map((r) => r.metric), shard, rows.map((r) => r.n)],
    );
  }
}
