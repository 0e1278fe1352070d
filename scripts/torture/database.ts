/**
 * Part 5, database: signed senders, an agent and a /status watcher against `serve` on a PostgreSQL of the suite's own
 * (test/fixtures/private-postgres.ts), which is frozen (SIGSTOP), stopped abruptly, killed and restarted under that
 * load; `serve` is never restarted. Every answer must be 202 or 503 (the API's 200, 429 or 503), never a 500 or a
 * hang; a receipt refused without saying it may have been recorded must not be stored; /status must say degraded
 * while the database is away and operational again once it is back.
 */
import pg from 'pg';
import { api, sign } from '../bench/_lib.ts';
import { privatePostgresUnavailable, startPrivatePostgres } from '../../test/fixtures/private-postgres.ts';
import { Box, log } from './_box.ts';
import type { Rand } from './_rand.ts';

export interface DatabaseOptions {
  bin: string;
  rand: Rand;
  /** How long the database stays frozen. */
  freezeMs: number;
  /** Rounds of each abrupt stop (SIGQUIT, kill -9 of every postgres process, fast restart). */
  stopRounds: number;
  senders: number;
  keep: boolean;
}

type Fault = 'freeze' | 'stop -m immediate' | 'kill -9' | 'restart -m fast';

export interface RoundFigures {
  fault: Fault;
  /** From the fault to the database answering again. */
  downMs: number;
  /** From the fault to the first /status that said degraded (null: none did). */
  degradedAfterMs: number | null;
  /** From the database's return to the first 202, and to /status operational (null: not within RECOVERY_MS). */
  accepting202AfterMs: number | null;
  operationalAfterMs: number | null;
  /** Answers of the receipt requests in flight during the round (fault to recovery). */
  answers: Record<string, number>;
  /** The slowest receipt answer of the round. */
  slowestMs: number;
}

export interface DatabaseFigures {
  /** Why the part did not run (no PostgreSQL binaries): not a failure. */
  skipped?: string;
  postgres?: string;
  rounds: RoundFigures[];
  /** Answers by HTTP status (`network`: the connection failed; `none`: no answer within ANSWER_BOUND_MS). */
  hooks: Record<string, number>;
  api: Record<string, number>;
  status: Record<string, number>;
  /** Answers other than the allowed ones (hooks 202/503, API 200/429/503, /status 200/503). */
  unexpected: number;
  /** 5xx other than 503, answered or in serve's request log, whichever is larger. */
  serverErrors: number;
  /** Requests without an answer within ANSWER_BOUND_MS. */
  unanswered: number;
  slowestHookMs: number;
  slowestStatusMs: number;
  /** Attempts answered 503 saying nothing was recorded / saying it may have been recorded (naming the event). */
  refused: number;
  refusedMaybe: number;
  /** Refused-may-have-been-recorded attempts whose event was in fact stored (the sender's retry was a duplicate). */
  refusedMaybeStored: number;
  /** Stored events from an attempt answered 503 that said nothing was recorded: must be 0. */
  refusedButStored: number;
  /** Stored events from an attempt whose connection failed (no answer to read): a sender would retry; not a fault. */
  storedAfterCutConnection: number;
  acknowledged: number;
  /** 202 answered, not stored: must be 0. */
  lost: number;
  /** An external id stored twice, neither as a duplicate: must be 0. */
  secondEvents: number;
  /** Retries of a refused receipt answered `duplicate_suppressed`. */
  retriesDeduplicated: number;
  /** /status answers slower than STATUS_BOUND_MS. */
  statusSlow: number;
  /** /status `operational` answered while the database was away (past STATUS_GRACE_MS into the fault). */
  statusDishonest: number;
  /** Rounds after which receipts or /status did not come back within RECOVERY_MS. */
  notRecovered: number;
  /** Rounds whose database was away past STATUS_GRACE_MS without any /status saying degraded. */
  statusSilent: number;
  /** serve exits during the part (it is never meant to stop). */
  serverDeaths: number;
  /** Log lines outside the one-line format (a stack trace's lines), and "unhandled error" lines. */
  stackTraceLines: number;
  unhandledErrors: number;
  errorLines: number;
  /** A few distinct ERROR/WARN lines, times stripped. */
  errorSamples: string[];
}

const SHOP = 'database.myshopify.com';
const ANSWER_BOUND_MS = 20_000;
const STATUS_BOUND_MS = 5_000;
/** /status's read probe gives up after 2 s: from then on it must say degraded. */
const STATUS_GRACE_MS = 3_000;
const RECOVERY_MS = 30_000;
const SECRET_KEY = 'cd'.repeat(32);

interface Attempt {
  ext: string;
  start: number;
  end: number | null;
  status: number | 'network' | 'none';
  eventId: string | null;
  outcome: string | null;
  duplicateOf: string | null;
}

interface StatusAnswer {
  start: number;
  end: number;
  status: number | 'network' | 'none';
  says: string | null;
}

export async function databasePart(o: DatabaseOptions): Promise<DatabaseFigures> {
  const why = privatePostgresUnavailable();
  if (why) {
    log(`database: skipped: ${why}`);
    return { ...emptyFigures(), skipped: why };
  }
  const db = await startPrivatePostgres({ name: 'torture-pg' });
  const t0 = Date.now();
  const now = () => Date.now() - t0;
  let box: Box | null = null;
  try {
    const adminClient = new pg.Client({ connectionString: db.url });
    await adminClient.connect();
    const version = (await adminClient.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v;
    await adminClient.query('CREATE DATABASE hookrelay');
    await adminClient.end();
    const url = db.urlOf('hookrelay');
    const env = { HOOKRELAY_DATABASE_URL: url, HOOKRELAY_SECRET_KEY: SECRET_KEY };
    const cli = (args: string[]) => {
      const base: Record<string, string> = {};
      for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HOOKRELAY_')) base[k] = v;
      const r = Bun.spawnSync([o.bin, ...args], { env: { ...base, NO_COLOR: '1', ...env }, stdout: 'pipe', stderr: 'pipe' });
      if (r.exitCode !== 0) throw new Error(`hookrelay ${args[0]} exited ${r.exitCode}: ${r.stderr.toString().slice(0, 400)}`);
      return JSON.parse(r.stdout.toString());
    };
    cli(['init', '--shop', SHOP, '--plan', 'scale']);
    const token: string = cli(['grant', 'issue', '--shop', SHOP, '--tier', 'admin_assistant', '--ttl', '2h', '--label', 'torture']).token;
    const b = new Box({ bin: o.bin, name: 'database', env });
    box = b;
    await b.start();
    const created = await api(b.base, token, 'POST', '/agent/v1/endpoints', { triggerVariant: 'generic', name: 'torture database' });
    const hookUrl = `${b.base}/hooks/${created.data.endpoint.id}`;
    const secret: string = created.data.secret;

    const attempts: Attempt[] = [];
    const apiAnswers: { start: number; status: number | 'network' | 'none' }[] = [];
    const statuses: StatusAnswer[] = [];
    let running = true;
    let serverDeaths = 0;

    // Each sender retries a refused receipt (same bytes, same external id) as a real sender would, then moves on.
    const sender = async (s: number) => {
      for (let n = 0; running; n++) {
        const ext = `db-${s}-${n}`;
        const body = JSON.stringify({ event_type: 'torture.database', external_event_id: ext, order: { id: n + 1 }, sender: s });
        while (running) {
          const a: Attempt = { ext, start: now(), end: null, status: 'none', eventId: null, outcome: null, duplicateOf: null };
          attempts.push(a);
          try {
            const res = await fetch(hookUrl, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-hookrelay-signature': sign(secret, body) },
              body,
              signal: AbortSignal.timeout(ANSWER_BOUND_MS),
            });
            const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
            a.end = now();
            a.status = res.status;
            a.eventId = typeof json.eventId === 'string' ? json.eventId : null;
            a.outcome = typeof json.status === 'string' ? json.status : null;
            a.duplicateOf = typeof json.duplicateOf === 'string' ? json.duplicateOf : null;
            if (res.status === 202) break;
          } catch (err) {
            a.status = err instanceof Error && err.name === 'TimeoutError' ? 'none' : 'network';
            if (a.status === 'network') a.end = now();
          }
          await Bun.sleep(200);
        }
      }
    };
    const agent = async () => {
      while (running) {
        const start = now();
        const entry: (typeof apiAnswers)[number] = { start, status: 'none' };
        apiAnswers.push(entry);
        try {
          const res = await fetch(`${b.base}/agent/v1/setup-state`, {
            headers: { authorization: `Bearer ${token}` },
            signal: AbortSignal.timeout(ANSWER_BOUND_MS),
          });
          await res.arrayBuffer();
          entry.status = res.status;
        } catch (err) {
          entry.status = err instanceof Error && err.name === 'TimeoutError' ? 'none' : 'network';
        }
        await Bun.sleep(700);
      }
    };
    const watcher = async () => {
      while (running) {
        const start = now();
        let status: StatusAnswer['status'] = 'none';
        let says: string | null = null;
        try {
          const res = await fetch(`${b.base}/status`, { signal: AbortSignal.timeout(ANSWER_BOUND_MS) });
          status = res.status;
          says = ((await res.json().catch(() => ({}))) as { status?: string }).status ?? null;
        } catch (err) {
          status = err instanceof Error && err.name === 'TimeoutError' ? 'none' : 'network';
        }
        statuses.push({ start, end: now(), status, says });
        if (!b.alive()) {
          serverDeaths++;
          log(`database: serve died (${b.proc?.exitCode ?? b.proc?.signalCode}); restarting it`);
          await b.start().catch(() => {});
        }
        await Bun.sleep(250);
      }
    };
    const load = [...Array.from({ length: o.senders }, (_, s) => sender(s)), agent(), watcher()];

    const faults: Fault[] = ['freeze'];
    for (let r = 0; r < o.stopRounds; r++) faults.push('stop -m immediate', 'kill -9', 'restart -m fast');
    const rounds: RoundFigures[] = [];
    let notRecovered = 0;
    let statusSilent = 0;
    /** Windows in which the database was away: [fault, back]. */
    const away: [number, number][] = [];
    /** Each round, from its fault to its recovery. */
    const windows: [number, number][] = [];
    await Bun.sleep(1500);
    for (const [i, fault] of faults.entries()) {
      await Bun.sleep(o.rand.int(500, 1500));
      const at = now();
      /** When the database could answer again at the earliest (thawed, or its process started). */
      let resumed: number;
      if (fault === 'freeze') {
        db.freeze();
        await Bun.sleep(o.freezeMs);
        resumed = now();
        db.thaw();
      } else {
        if (fault === 'kill -9') await db.kill();
        else await db.stop(fault === 'restart -m fast' ? 'fast' : 'immediate');
        if (fault !== 'restart -m fast') await Bun.sleep(o.rand.int(1000, 3000));
        resumed = now();
        await db.start();
      }
      const back = now();
      away.push([at, resumed]);
      const recovered = async (pred: () => number | null): Promise<number | null> => {
        const until = Date.now() + RECOVERY_MS;
        while (Date.now() < until) {
          const t = pred();
          if (t !== null) return t;
          await Bun.sleep(50);
        }
        return null;
      };
      const first202 = await recovered(() => attempts.find((a) => a.start >= back && a.status === 202)?.end ?? null);
      const operational = await recovered(() => statuses.find((s) => s.start >= back && s.status === 200)?.end ?? null);
      if (first202 === null || operational === null) notRecovered++;
      const end = now();
      const degraded = statuses.find((s) => s.start >= at && s.says === 'degraded');
      if (resumed - at > STATUS_GRACE_MS && !(degraded && degraded.end <= resumed + 1000)) statusSilent++;
      const round: RoundFigures = {
        fault,
        downMs: back - at,
        degradedAfterMs: degraded ? degraded.end - at : null,
        accepting202AfterMs: first202 === null ? null : first202 - back,
        operationalAfterMs: operational === null ? null : operational - back,
        answers: {},
        slowestMs: 0,
      };
      rounds.push(round);
      windows.push([at, end]);
      log(
        `database: round ${i + 1}/${faults.length} ${fault}: down ${round.downMs} ms, /status degraded after ${round.degradedAfterMs ?? '-'} ms, ` +
          `202 again ${round.accepting202AfterMs ?? '-'} ms and operational ${round.operationalAfterMs ?? '-'} ms after`,
      );
    }
    await Bun.sleep(1000);
    running = false;
    await Promise.all(load);
    // Each round's answers, once every request in flight has its own: those in flight at any moment of the round.
    for (const [i, [from, to]] of windows.entries()) {
      const during = attempts.filter((a) => a.start < to && (a.end ?? Infinity) >= from);
      rounds[i]!.answers = countBy(during.map((a) => String(a.status)));
      rounds[i]!.slowestMs = Math.max(0, ...during.map((a) => (a.end ?? a.start + ANSWER_BOUND_MS) - a.start));
    }

    // Every stored receipt of the senders, to match against what each attempt was told.
    const reader = new pg.Client({ connectionString: url });
    await reader.connect();
    const rows = (
      await reader.query<{ id: string; ext: string; outcome: string; duplicate_of: string | null }>(
        "SELECT id, external_event_id AS ext, outcome, duplicate_of FROM events WHERE external_event_id LIKE 'db-%'",
      )
    ).rows;
    await reader.end();
    const storedIds = new Set(rows.map((r) => r.id));
    const byExt = new Map<string, typeof rows>();
    for (const r of rows) byExt.set(r.ext, [...(byExt.get(r.ext) ?? []), r]);
    const attemptsOf = new Map<string, Attempt[]>();
    for (const a of attempts) attemptsOf.set(a.ext, [...(attemptsOf.get(a.ext) ?? []), a]);

    const acked = attempts.filter((a) => a.status === 202 && a.eventId);
    const refused = attempts.filter((a) => a.status === 503 && !a.eventId);
    const refusedMaybe = attempts.filter((a) => a.status === 503 && a.eventId);
    // A stored event no answer named came from an attempt refused without an id, or cut before its answer.
    const named = new Set(attempts.flatMap((a) => (a.eventId ? [a.eventId] : [])));
    let refusedButStored = 0;
    let storedAfterCutConnection = 0;
    for (const r of rows) {
      if (named.has(r.id)) continue;
      const tries = attemptsOf.get(r.ext) ?? [];
      if (tries.some((a) => a.status === 'network' || a.status === 'none')) storedAfterCutConnection++;
      else refusedButStored++;
    }
    const secondEvents = [...byExt.values()].filter((list) => list.filter((r) => r.outcome !== 'duplicate_suppressed').length > 1).length;

    const hooks = countBy(attempts.map((a) => String(a.status)));
    const apiCounts = countBy(apiAnswers.map((a) => String(a.status)));
    const statusCounts = countBy(statuses.map((s) => String(s.status)));
    const unexpected =
      attempts.filter((a) => typeof a.status === 'number' && a.status !== 202 && a.status !== 503).length +
      apiAnswers.filter((a) => typeof a.status === 'number' && ![200, 429, 503].includes(a.status)).length +
      statuses.filter((s) => typeof s.status === 'number' && s.status !== 200 && s.status !== 503).length;
    const answered5xx = [...attempts, ...apiAnswers, ...statuses].filter((a) => typeof a.status === 'number' && a.status >= 500 && a.status !== 503).length;
    const serverLog = b.serverLog();
    const lines = serverLog.split('\n').filter((l) => l.length);
    const logged5xx = lines.filter((l) => / (5(?!03)\d\d) [\d.]+ms\b/.test(l)).length;
    // Judged when the answer was given: an `operational` written while the database could not answer is a lie.
    const inAway = (t: number) => away.some(([from, to]) => t >= from + STATUS_GRACE_MS && t < to);
    const samples = new Set<string>();
    for (const l of lines)
      if (/\b(ERROR|WARN)\b/.test(l) && samples.size < 8)
        samples.add(
          l
            .replace(/^\S+ /, '')
            .replace(/\b(request|support)=\S+/g, '')
            .slice(0, 200),
        );

    return {
      postgres: version,
      rounds,
      hooks,
      api: apiCounts,
      status: statusCounts,
      unexpected,
      serverErrors: Math.max(answered5xx, logged5xx),
      unanswered: [...attempts, ...apiAnswers, ...statuses].filter((a) => a.status === 'none').length,
      slowestHookMs: Math.max(0, ...attempts.map((a) => (a.end ?? ANSWER_BOUND_MS + a.start) - a.start)),
      slowestStatusMs: Math.max(0, ...statuses.map((s) => s.end - s.start)),
      refused: refused.length,
      refusedMaybe: refusedMaybe.length,
      refusedMaybeStored: refusedMaybe.filter((a) => storedIds.has(a.eventId!)).length,
      refusedButStored,
      storedAfterCutConnection,
      acknowledged: acked.length,
      lost: acked.filter((a) => !storedIds.has(a.eventId!)).length,
      secondEvents,
      retriesDeduplicated: acked.filter((a) => a.outcome === 'duplicate_suppressed').length,
      statusSlow: statuses.filter((s) => s.end - s.start > STATUS_BOUND_MS).length,
      statusDishonest: statuses.filter((s) => s.says === 'operational' && inAway(s.end)).length,
      notRecovered,
      statusSilent,
      serverDeaths,
      stackTraceLines: lines.filter((l) => !/^\d{4}-\d\d-\d\dT/.test(l)).length,
      unhandledErrors: lines.filter((l) => /unhandled error|uncaught/i.test(l)).length,
      errorLines: lines.filter((l) => /\bERROR\b/.test(l)).length,
      errorSamples: [...samples],
    };
  } finally {
    await box?.dispose(o.keep);
    await db.destroy();
  }
}

function emptyFigures(): DatabaseFigures {
  return {
    rounds: [],
    hooks: {},
    api: {},
    status: {},
    unexpected: 0,
    serverErrors: 0,
    unanswered: 0,
    slowestHookMs: 0,
    slowestStatusMs: 0,
    refused: 0,
    refusedMaybe: 0,
    refusedMaybeStored: 0,
    refusedButStored: 0,
    storedAfterCutConnection: 0,
    acknowledged: 0,
    lost: 0,
    secondEvents: 0,
    retriesDeduplicated: 0,
    statusSlow: 0,
    statusDishonest: 0,
    notRecovered: 0,
    statusSilent: 0,
    serverDeaths: 0,
    stackTraceLines: 0,
    unhandledErrors: 0,
    errorLines: 0,
    errorSamples: [],
  };
}

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
