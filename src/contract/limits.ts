/** Per-minute rate limits by class, per grant and per store (DESIGN.md "Plans and limits"; configurable). */
import type { RateLimitClass } from './operations.ts';

export type RateLimits = Record<RateLimitClass, { grant: number; store: number }>;

export const DEFAULT_RATE_LIMITS: RateLimits = {
  simple_read: { grant: 120, store: 600 },
  rich_read: { grant: 30, store: 150 },
  recovery_preview: { grant: 20, store: 100 },
  endpoint_preview: { grant: 10, store: 50 },
};

/** The longest life a grant may be issued with (DESIGN.md "The merchant's seat": TTL ≤ 90 d): grants are time-bounded. */
export const GRANT_MAX_TTL_MS = 90 * 86_400_000;

/** How long an Idempotency-Key holds its stored response (DESIGN: 24 h); older keys are swept. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;

/**
 * A key claimed by a request that never finished (its instance died) is taken over by a retry after this long;
 * until then a retry on another instance answers 409 `conflict` with Retry-After. Executes are short (no
 * network call waits inside one), and an intent executes once whatever the key does (compare-and-set).
 */
export const IDEMPOTENCY_STALE_MS = 2 * 60_000;

/** Largest Agent Operations API (and MCP) request body; larger bodies answer 413 `payload_too_large`. */
export const MAX_API_BODY_BYTES = 1024 * 1024;

/** The longest Idempotency-Key accepted, characters (server, OpenAPI and client check this one number). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 200;

/**
 * Failed authentication (bearer 401s under /agent/v1 and on the MCP endpoint, inbound 401s on /hooks), counted in
 * fixed windows per client address and per inbound endpoint. Only failures count and only failures are refused with
 * 429: a correct credential always passes, so an attacker sharing an address (NAT, proxy) or hammering an endpoint
 * cannot lock out a real caller. Grant tokens and endpoint secrets carry over 180 bits, so the limit protects the box
 * (disk, log, CPU), not the secrets. `windowMs` must stay within 30 minutes: a folded auth_failures row then holds
 * failures no further apart than the replacement-endpoint guidance's pair window.
 */
export const AUTH_FAILURE_LIMITS = {
  windowMs: 60_000,
  /** Failures per client address per window before further failures answer 429. */
  perClient: 30,
  /** Failures per inbound endpoint per window, from every address together, before 429. */
  perEndpoint: 60,
  /** Addresses and endpoints tracked at once; past it the oldest entry is dropped (an attacker rotating addresses). */
  maxTracked: 10_000,
  /** auth_failures rows per endpoint and code per window; further failures fold into the newest (count, at). */
  rowsPerEndpoint: 10,
  /** Audit rows for failed bearer authentication per address per window, and for all addresses together. */
  auditedPerClient: 10,
  auditedPerWindow: 100,
} as const;

/**
 * GET /auth/install per client address and window: past `perClient` requests it answers 429. An install writes
 * nothing (its state is signed, not stored), so this bounds only what answering costs; a merchant installs once.
 * Counted in memory per instance.
 */
export const APP_INSTALL_LIMITS = { windowMs: 60_000, perClient: 10 } as const;

/**
 * GET /oauth/authorize starts per client address and window: past `perClient` it answers 429. A start fetches a
 * stranger's metadata document and records a pending request, and anyone may send one; a person starts a few.
 * Counted in memory per instance.
 */
export const OAUTH_START_LIMITS = { windowMs: 60_000, perClient: 20 } as const;

/**
 * Connection codes that named no request, per store and window, on the Agents page's "Approve a connection": past
 * `perStore` the form refuses every code (429) until the window ends. 20^8 codes living 10 minutes make a guess
 * hopeless; this makes a run of guesses impossible. Counted in memory per instance.
 */
export const CONNECT_CODE_MISSES = { windowMs: 10 * 60_000, perStore: 10 } as const;

export type AuthFailureLimits = { readonly [K in keyof typeof AUTH_FAILURE_LIMITS]: number };

/**
 * MCP `execute` runs in flight: per store (its fair share) and per server (each is a sandbox process). A run
 * over either cap is refused with `sandbox_busy` and a retry delay instead of queueing.
 */
export const EXECUTE_CONCURRENCY = { perStore: 3, perServer: 8, retryAfterSeconds: 1 };

/** One `api.call` / `api.request` of code mode as JSON, at most: above it the call never leaves the sandbox. */
export const SANDBOX_MAX_CALL_BYTES = 2 * 1024 * 1024;

/**
 * What the OS lets one sandbox process take, on top of the run's own WebAssembly memory cap: its address space
 * (RLIMIT_AS via `ulimit -v`; Bun sizes its reservations to fit, and would not start below ~0.5 GiB) and its
 * resident memory, watched by the server, which ends the process past it (`sandbox_memory_limit`). Measured: a
 * run peaks near 115 MiB resident with the default 32 MiB sandbox memory, 45 MiB for `return 1`.
 */
export const SANDBOX_PROCESS = { addressSpaceBytes: 1024 * 1024 * 1024, residentBytes: 256 * 1024 * 1024 };

/**
 * A sandbox process whose run ended by itself (a result or the code's own error) may wait for the next run of the
 * same grant and memory size, never another's: so JavaScriptCore's compiled QuickJS serves many runs (each still in
 * a fresh QuickJS instance with fresh memory), and a sandbox escape could act only as the grant that caused it.
 * Bounds: how long it waits idle, how many runs it serves, its resident memory after a run (past it, it ends) and
 * how many wait on the server at once (past it, the one idle longest ends).
 */
export const SANDBOX_REUSE = { idleMs: 30_000, runs: 100, residentBytes: 128 * 1024 * 1024, idleProcesses: 8 };

/**
 * The most events one bulk replay intent hands off again. A preview matching more is refused (`bulk_replay_too_many`)
 * with the receipt time that splits the oldest this many off, so one mistaken filter cannot re-run a store's history.
 */
export const BULK_REPLAY_MAX_EVENTS = 5000;

/** The seven published usage meters, in the order plan usage lists them. */
export const METERS = [
  'accepted_events',
  'diagnostics_shares',
  'replay_executions',
  'simple_reads',
  'rich_reads',
  'action_previews',
  'executed_actions',
] as const;

/**
 * Delays before each retry of a transient handoff failure (network, timeout, HTTP 5xx or 429): eleven retries over
 * about 31 hours (24.6 at the least, with jitter), like Svix's 5 s … 10 h. Each delay is shortened by up to
 * RETRY_JITTER at random so retries of one outage spread out. A platform's Retry-After is a floor. An operator
 * changes it without rebuilding: HOOKRELAY_RETRY_SCHEDULE=5s,30s,2m,… (serve).
 */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  30_000,
  2 * 60_000,
  10 * 60_000,
  30 * 60_000,
  3600_000,
  2 * 3600_000,
  4 * 3600_000,
  8 * 3600_000,
  8 * 3600_000,
  8 * 3600_000,
];

/** The share of a retry delay jitter may take off (0.2: a delay d waits between 0.8 d and d). */
export const RETRY_JITTER = 0.2;

/**
 * Reading a request body, on every route (src/lib/body.ts). The whole body must arrive within `deadlineMs` of the
 * start of reading: past it the answer is 408 `request_timeout` and the connection is closed. A body sent without a
 * Content-Length (chunked) is read as a stream, which holds a read buffer of Bun's while it waits for data
 * (docs/reliability.md): at most `streamsInFlight` are read at once, and at most `streamsPerClient` of them from one
 * client address (src/lib/auth-failures.ts's clientKey: an IPv4 address, an IPv6 /64), so that one client stalling
 * uploads cannot hold the whole bound and shut every other chunked sender out; past either the answer is 503
 * `server_busy` with Retry-After. A body with a Content-Length costs only the bytes that arrived, so it is not
 * counted: counting those would let a few stalled connections refuse every sender.
 */
export const BODY_READ = { deadlineMs: 15_000, streamsInFlight: 64, streamsPerClient: 16, retryAfterSeconds: 2 } as const;

/** Silence watch (an endpoint's expectedEvery): the shortest and the longest quiet time an endpoint may expect. */
export const SILENCE_WATCH = { minMs: 5 * 60_000, maxMs: 30 * 86_400_000 } as const;

/**
 * Alerts (src/relay/alerts.ts): the sweep runs every `sweepEveryMs` in serve. A burst of failed authentications is
 * `authBurst.failures` or more on one endpoint within `authBurst.windowMs`; it recovers once the endpoint authenticates
 * a receipt after its newest failure, or a whole window passes without one. Each phase's handoff to Flow is retried
 * after each delay of `retrySchedule` (a send that got no answer, a 5xx), then given up (`failed`); a send is leased
 * for `leaseMs`, after which another instance may take it (and says so: the phase may have been sent twice).
 */
export const ALERTS = {
  sweepEveryMs: 60_000,
  authBurst: { windowMs: 10 * 60_000, failures: 5 },
  retrySchedule: [30_000, 2 * 60_000, 10 * 60_000, 3600_000, 6 * 3600_000] as readonly number[],
  leaseMs: 60_000,
  /** Alerts a reliability read lists as recent, at most (newest first). */
  recentLimit: 50,
} as const;

/**
 * Typed fields per endpoint (src/contract/fields.ts): at most `max`; a text-like value (text, email, url, datetime)
 * longer than `maxChars` is of the wrong type, so the fields alone never approach Flow's payload limit. The edit
 * preview's dry run reads the store's last `dryRunEvents` events with a retained body.
 */
export const ENDPOINT_FIELDS = { max: 20, maxChars: 255, dryRunEvents: 50 } as const;
