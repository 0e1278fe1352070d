/**
 * node-postgres connections with deadlines. A database that stops answering (a frozen host, a silent network) fails
 * a query after `answerMs` instead of never, and its connection is destroyed rather than handed to the next caller.
 * Each connection carries a name of its own in pg_stat_activity, so that a session whose COMMIT went unanswered can
 * be found again and ended (settleCommit).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export interface PgTimeouts {
  /** Opening a connection (TCP and the startup exchange), and waiting for a free one in a full pool (twice this). */
  connectMs: number;
  /** statement_timeout on every connection: the server cancels a statement running longer (57014); the connection stays usable. */
  statementMs: number;
  /**
   * No answer at all to a query this long: the connection is destroyed and the query fails `PG_QUERY_TIMEOUT`. Longer
   * than statementMs, so that a server that is alive cancels the statement first.
   */
  answerMs: number;
  /** How long a commit whose answer was lost may spend finding out whether it was stored (settleCommit). */
  settleMs: number;
}

/**
 * serve's and the admin commands'. An ingest commit or a claim takes milliseconds (docs/benchmarks.md: a commit's
 * p99 under 1 s on a loaded 2-core host), so normal work stays far below; a hung database answers 503 within seconds.
 */
export const PG_TIMEOUTS: PgTimeouts = { connectMs: 5_000, statementMs: 5_000, answerMs: 6_000, settleMs: 3_000 };

/** A connection of pgClientClass. */
export interface PgClient extends pg.Client {
  /** Its application_name, unique to it: how pg_stat_activity shows this session. */
  readonly session: string;
  /** The query deadline in ms (0: none); migrations lift it on their own connection (see withoutDeadline). */
  answerMs: number;
}

export type PgClientClass = new (config?: pg.ClientConfig) => PgClient;

/** The error of a query past its deadline: the database did not answer at all. */
function deadlineError(ms: number): Error {
  return Object.assign(new Error(`The database did not answer within ${ms} ms`), { code: 'PG_QUERY_TIMEOUT' });
}

/**
 * The connection class of a pool or a dedicated connection; `timeouts` null keeps pg's defaults (no deadline, no
 * statement_timeout: `migrate --from` copies a whole box in one transaction). Every connection listens for its
 * own 'error': pg emits one when the socket dies, and on a connection checked out of the pool (which listens only
 * while it is idle) an unheard 'error' was an uncaught exception. The queries in flight fail with the same error,
 * so their callers report it.
 */
export function pgClientClass(timeouts: PgTimeouts | null): PgClientClass {
  return class DeadlineClient extends pg.Client implements PgClient {
    readonly session: string;
    answerMs = timeouts?.answerMs ?? 0;

    constructor(config: pg.ClientConfig = {}) {
      super(timeouts ? { ...config, connectionTimeoutMillis: timeouts.connectMs, statement_timeout: timeouts.statementMs, keepAlive: true } : config);
      this.on('error', () => {});
      // pg reads the URL's own application_name over the config's: the suffix goes onto whatever it chose.
      const params = (this as unknown as { connectionParameters: { application_name?: string } }).connectionParameters;
      this.session = `${(params.application_name || 'hookrelay').slice(0, 40)} ${randomUUID().slice(0, 18)}`;
      params.application_name = this.session;
    }

    // Every form this codebase and its libraries use: (text, values?), (config), and pg-pool's (text, values, callback).
    // biome-ignore lint/suspicious/noExplicitAny: it overrides pg.Client's overloaded query, whose every overload must stay assignable
    override query(...args: unknown[]): any {
      const call = () => (pg.Client.prototype.query as (...a: unknown[]) => unknown).apply(this, args);
      const ms = this.answerMs;
      if (!ms) return call();
      const timer = setTimeout(() => this.expire(ms), ms);
      const done = () => clearTimeout(timer);
      const last = args.length - 1;
      const callback = args[last];
      if (typeof callback === 'function') {
        args[last] = (err: unknown, res: unknown) => {
          done();
          callback(err, res);
        };
        return call();
      }
      const out = call() as Promise<unknown> | undefined;
      if (out && typeof out.then === 'function') out.then(done, done);
      else done(); // a Submittable (cursor, stream): not used here, not timed
      return out;
    }

    /** Past the deadline: the socket is destroyed with the deadline's error, which fails every query queued on it. */
    private expire(ms: number): void {
      const connection = (this as unknown as { connection?: { stream?: { destroy(err: Error): void } } }).connection;
      connection?.stream?.destroy(deadlineError(ms));
    }
  };
}

/** Lifts `client`'s query deadline until the returned function is called (migrations: a CREATE INDEX may take minutes). */
export function withoutDeadline(client: pg.PoolClient | pg.Client): () => void {
  const c = client as Partial<PgClient>;
  const saved = c.answerMs;
  if (saved) c.answerMs = 0;
  return () => {
    if (saved) c.answerMs = saved;
  };
}

/**
 * COMMIT was sent and its answer lost (the connection dropped, or the deadline destroyed it): the transaction may
 * be stored. `session` and `cause` say where and why.
 */
export class CommitUnknownError extends Error {
  readonly code = 'PG_COMMIT_UNKNOWN';
  constructor(
    cause: unknown,
    readonly session: string,
  ) {
    super('The database was sent COMMIT and its answer was lost: the transaction may be stored', { cause });
    this.name = 'CommitUnknownError';
  }
}

/**
 * Whether the database itself answered `err` (a SQLSTATE from a live session, other than a connection class):
 * then a failed COMMIT certainly did not commit. Otherwise the answer was lost and the outcome is unknown.
 */
export function answeredByServer(err: unknown): boolean {
  return err instanceof pg.DatabaseError && !/^(08|57P0)/.test(err.code ?? '');
}

/**
 * After a COMMIT went unanswered on `session`: true when `isStored` finds the transaction's rows, false when it
 * certainly never will, null when the database could not be asked within `budgetMs`. The old session is ended and
 * gone before the lookup, so that false stays true: a server frozen and thawed would still read the COMMIT waiting
 * in that session's socket, and a session cut off by the network would wait in its transaction.
 */
export async function settleCommit(
  Client: PgClientClass,
  config: pg.ClientConfig,
  session: string,
  isStored: (c: pg.Client) => Promise<boolean>,
  budgetMs: number,
): Promise<boolean | null> {
  const deadline = Date.now() + budgetMs;
  while (Date.now() < deadline) {
    const c = new Client({ ...config, connectionTimeoutMillis: Math.max(100, deadline - Date.now()) });
    c.answerMs = Math.max(100, Math.min(c.answerMs || budgetMs, deadline - Date.now()));
    try {
      await c.connect();
      for (;;) {
        const r = await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [session]);
        if (!r.rowCount) break;
        if (Date.now() >= deadline) return null;
        await Bun.sleep(20);
      }
      return await isStored(c);
    } catch {
      await Bun.sleep(Math.min(200, Math.max(0, deadline - Date.now())));
    } finally {
      await c.end().catch(() => {});
    }
  }
  return null;
}
