/**
 * hookrelay's own series. Counters are this process's since it started. What one store's traffic makes is kept
 * per store, so a scrape shows its grant's store only; the box's machinery (group commits) is box-wide.
 */
import { readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { type Counter, type Family, Registry } from './metrics.ts';

const PER_PROCESS = 'Counted by this process since it started; sum over instances for the deployment.';

/** Outcomes of an inbound request that reached an endpoint and authenticated (or failed to) against it. */
const INBOUND_OUTCOMES = ['accepted', 'duplicate_suppressed', 'held', 'test', 'rejected', 'auth_failed', 'unavailable'] as const;

/** Inbound refusals before authentication, by status: nobody's store can be named for them. */
const INBOUND_REFUSALS: Record<number, string> = {
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
};

/** Commit batches: receipts and auth failures in one transaction (the writer's maximum is 2048). */
const BATCH_BOUNDS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048];
const COMMIT_BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** An agent call's outcome from its HTTP status: a handful of values, whatever the error code. */
function callOutcome(status: number): string {
  if (status < 400) return 'ok';
  if (status === 401) return 'auth_failed';
  if (status === 402 || status === 403) return 'refused';
  if (status === 429) return 'rate_limited';
  return status >= 500 ? 'server_error' : 'invalid';
}

/** One store's series. */
class StoreSeries {
  readonly registry = new Registry();
  private readonly inbound: Family<Counter>;
  private readonly inboundChildren = new Map<string, Counter>();
  readonly authFailures: Family<Counter>;
  readonly handoffs: Family<Counter>;
  readonly agentCalls: Family<Counter>;
  readonly alertHandoffs: Family<Counter>;

  constructor() {
    const r = this.registry;
    this.inbound = r.counter(
      'hookrelay_inbound_requests_total',
      `Inbound requests to this grant's store's endpoints, by outcome (accepted, duplicate_suppressed, held, test, rejected, auth_failed, unavailable). ${PER_PROCESS}`,
      ['outcome'],
    );
    for (const o of INBOUND_OUTCOMES) this.inboundChildren.set(o, this.inbound.labels(o));
    this.authFailures = r.counter(
      'hookrelay_auth_failures_total',
      `Inbound requests to this grant's store's endpoints that failed authentication, by code (SVC_AUTH_HEADER_MISSING, SVC_AUTH_FAILED). ${PER_PROCESS}`,
      ['code'],
    );
    this.handoffs = r.counter(
      'hookrelay_handoff_attempts_total',
      `Handoff attempts of this grant's store's events, recorded, by result (delivered, retry, failed, no_workflow). ${PER_PROCESS}`,
      ['result'],
    );
    this.agentCalls = r.counter(
      'hookrelay_agent_calls_total',
      `Agent Operations API calls by this grant's store's grants, by operation and outcome (ok, invalid, refused, rate_limited, server_error). ${PER_PROCESS}`,
      ['operation', 'outcome'],
    );
    this.alertHandoffs = r.counter(
      'hookrelay_alert_handoffs_total',
      `Alert phases (raised, recovered) of this grant's store handed to Flow as the hookrelay-alert trigger, by phase and result (delivered, pending: to be tried again, failed: given up, skipped: no Flow destination or workflow). ${PER_PROCESS}`,
      ['phase', 'result'],
    );
  }

  inboundCounter(outcome: string): Counter {
    return this.inboundChildren.get(outcome) ?? this.inbound.labels(outcome);
  }
}

/** The series of one process. The module's `metrics` is the one the server records into. */
class Instruments {
  /** The box's machinery and requests no store can be named for. */
  readonly box = new Registry();
  private readonly stores = new Map<string, StoreSeries>();
  // A self-hosted box has one store: its series are found without a map lookup.
  private lastStoreId = '';
  private last: StoreSeries | null = null;
  private readonly unattributed = this.box.counter(
    'hookrelay_unattributed_requests_total',
    `Requests refused before any store could be named: inbound to unknown endpoints or refused before authentication, bearer failures on the agent API and /metrics; by surface and outcome. ${PER_PROCESS}`,
    ['surface', 'outcome'],
  );
  private readonly inboundRefusals = new Map(Object.entries(INBOUND_REFUSALS).map(([s, o]) => [Number(s), this.unattributed.labels('inbound', o)]));
  /** Group commits; a box with several stores keeps them out of scrapes (see forScrape). */
  readonly commits = new Registry();
  private readonly batchSize = this.commits
    .histogram('hookrelay_commit_batch_size', `Receipts and auth failures per group commit (one durable transaction). ${PER_PROCESS}`, BATCH_BOUNDS)
    .labels();
  private readonly commitSeconds = this.commits
    .histogram('hookrelay_commit_seconds', `Duration of each group commit, seconds, until it is durable. ${PER_PROCESS}`, COMMIT_BOUNDS)
    .labels();

  /** The store's series, made on first use. */
  store(storeId: string): StoreSeries {
    if (storeId === this.lastStoreId && this.last) return this.last;
    let s = this.stores.get(storeId);
    if (!s) this.stores.set(storeId, (s = new StoreSeries()));
    this.lastStoreId = storeId;
    return (this.last = s);
  }

  /** A receipt's outcome as committed, or `unavailable` when its commit failed. */
  inbound(storeId: string, outcome: string): void {
    this.store(storeId).inboundCounter(outcome).inc();
  }

  /** An inbound request that failed authentication against one of the store's endpoints. */
  inboundAuthFailure(storeId: string, code: string): void {
    const s = this.store(storeId);
    s.inboundCounter('auth_failed').inc();
    s.authFailures.labels(code).inc();
  }

  /** Any inbound answer; counts only the refusals made before authentication (others are counted with their store). */
  inboundReply(status: number): void {
    if (status >= 400) this.inboundRefusals.get(status)?.inc();
  }

  /** A bearer failure (no store known) on `surface`. */
  unauthenticated(surface: 'agent_api' | 'metrics', outcome = 'auth_failed'): void {
    this.unattributed.labels(surface, outcome).inc();
  }

  commit(size: number, seconds: number): void {
    this.batchSize.observe(size);
    this.commitSeconds.observe(seconds);
  }

  handoff(storeId: string, result: string, n = 1): void {
    this.store(storeId).handoffs.labels(result).inc(n);
  }

  /** A send of an alert phase (src/relay/alerts.ts), by what came of it. */
  alertHandoff(storeId: string, phase: string, result: string): void {
    this.store(storeId).alertHandoffs.labels(phase, result).inc();
  }

  /** An agent call as audited: its store when the grant authenticated, else box-wide as unattributed. */
  agentCall(storeId: string | null, operationId: string, status: number): void {
    const outcome = callOutcome(status);
    if (storeId) this.store(storeId).agentCalls.labels(operationId, outcome).inc();
    else this.unauthenticated('agent_api', outcome);
  }
}

/** The process's series: what the server records and /metrics renders. */
export const metrics = new Instruments();

/** Process figures read now, and this instance's name (hostname, pid). */
export function processRegistry(version: string): Registry {
  const r = new Registry();
  const cpu = process.cpuUsage();
  r.gauge('process_resident_memory_bytes', 'Resident memory of this process, bytes.').labels().set(process.memoryUsage().rss);
  r.counter('process_cpu_seconds_total', 'User and system CPU time of this process, seconds.')
    .labels()
    .inc((cpu.user + cpu.system) / 1e6);
  r.gauge('process_start_time_seconds', 'Start of this process, seconds since the Unix epoch.')
    .labels()
    .set(Math.floor(performance.timeOrigin) / 1000);
  const fds = openFds();
  if (fds != null) r.gauge('process_open_fds', 'Open file descriptors of this process.').labels().set(fds);
  r.gauge('hookrelay_build_info', 'The version of hookrelay this process runs; always 1.', ['version']).labels(version).set(1);
  r.gauge(
    'hookrelay_instance_info',
    "Names this process; always 1. Counters are this process's (sum them across instances); gauges read from the database are the database's, the same on every instance.",
    ['hostname', 'pid'],
  )
    .labels(hostname(), String(process.pid))
    .set(1);
  return r;
}

/** Open descriptors where /proc exists (Linux); null elsewhere, and the family is left out. */
function openFds(): number | null {
  try {
    // readdirSync holds one descriptor of its own while it lists the directory.
    return readdirSync('/proc/self/fd').length - 1;
  } catch {
    return null;
  }
}
