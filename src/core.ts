/** The runtime every layer receives: storage, clock, ids, secret box, configuration, log. Built once by serve or a test. */
import type { Repo } from '../db/repo.ts';
import type { Clock } from './lib/clock.ts';
import { systemClock } from './lib/clock.ts';
import type { SecretBox } from './lib/crypto.ts';
import type { IdGenerator } from './lib/ids.ts';
import { createIdGenerator } from './lib/ids.ts';
import type { Log } from './lib/log.ts';
import { DEFAULT_RATE_LIMITS, DEFAULT_RETRY_SCHEDULE_MS, type RateLimits } from './contract/limits.ts';
import { silentLog } from './lib/log.ts';

export interface HandoffConfig {
  /** Per-attempt timeout towards the platform. */
  timeoutMs: number;
  /**
   * Delays before each retry of a transient failure, ms (DEFAULT_RETRY_SCHEDULE_MS): an event is tried
   * `retrySchedule.length + 1` times before it ends `failed` with SVC_HANDOFF_RETRY_EXHAUSTED.
   */
  retrySchedule: readonly number[];
  /** Handoffs in flight at once. */
  concurrency: number;
  /** Events leased per round; a round's attempts are recorded in one transaction. */
  batchSize: number;
  /** A paused store's first probe waits this long, doubling (with jitter) after each that fails, up to the max. */
  probeBaseDelayMs: number;
  probeMaxDelayMs: number;
}

/** Per `execute` of MCP code mode; each limit ends the run with its own stable error code. */
export interface SandboxLimits {
  /**
   * Time spent running agent code, ms: the CPU time of the sandbox process while it runs the code (waiting on API
   * calls, or for a core on a busy host, is not counted; src/mcp/code-mode.ts).
   */
  cpuMs: number;
  /** Memory agent code may take, bytes: the sandbox's WebAssembly memory cannot grow past its base plus this. */
  memoryBytes: number;
  /** `api.call` / `api.request` calls per run. */
  maxCalls: number;
  /** UTF-8 bytes of the JSON result (and, separately, of captured console output). */
  maxResultBytes: number;
}

export interface McpConfig {
  /** false: the code-mode sandbox is never loaded and the MCP endpoint answers 503 (HOOKRELAY_MCP_CODE_MODE=off). */
  codeMode: boolean;
  /** Browser origins allowed besides the public URL's own (HOOKRELAY_MCP_ALLOWED_ORIGINS, comma-separated). */
  allowedOrigins: string[];
  /**
   * Host names allowed besides the public URL's, loopback names and addresses (HOOKRELAY_MCP_ALLOWED_HOSTS,
   * comma-separated): a proxy that sends the name it reaches serve at (a container service name).
   */
  allowedHosts: string[];
  limits: SandboxLimits;
}

/** How the OAuth authorization server fetches a client's metadata document (src/oauth/client-metadata.ts). */
export interface OAuthConfig {
  /** Give up on a client's document after this long, ms (connection and body). */
  clientFetchTimeoutMs: number;
  /** The largest document read, bytes. */
  clientMaxBytes: number;
  /**
   * Tests only (no setting or variable sets it): a client's document may be on a loopback address, over http too.
   * Otherwise private, loopback and link-local addresses are refused.
   */
  loopbackClients: boolean;
  /** Tests only (no setting sets it): a PEM certificate authority trusted for clients' documents over https, in place of the system's. */
  clientCa: string | null;
}

/**
 * How long rows are kept, ms (hookrelay.toml `[retention]`; raw bodies are Config.bodyRetentionMs). The worker
 * sweeps past them in bounded batches; an event still waiting for its handoff is never swept.
 */
export interface RetentionConfig {
  /** Events that ended (delivered, failed, rejected, …) and their attempts, from their receipt. */
  events: number;
  audit: number;
  /** Intents, from when they ended (executed, refused, expired) or were previewed and never executed. */
  intents: number;
  /** Support, feature and expansion requests and customer data requests; diagnostics shares go when they expire. */
  requests: number;
  /** Records of failed authentications (the endpoint's recent failures), from the last one. */
  authFailures: number;
}

const DAY_MS = 86_400_000;

const DEFAULT_RETENTION: RetentionConfig = {
  events: 180 * DAY_MS,
  audit: 400 * DAY_MS,
  intents: 90 * DAY_MS,
  requests: 365 * DAY_MS,
  authFailures: 30 * DAY_MS,
};

export interface Config {
  /** Base of endpoint URLs, e.g. `https://relay.example.com`. */
  publicUrl: string;
  maxBodyBytes: number;
  dedupeWindowMs: number;
  bodyRetentionMs: number;
  retention: RetentionConfig;
  /** Where each operator setting in effect came from, when not its default (src/settings.ts); plan usage shows it. */
  settingSources: Readonly<Record<string, 'file' | 'environment' | 'flag'>>;
  /** Overrides `https://<shop>` for the Shopify destination (tests, proxies). */
  shopifyAdminUrl: string | null;
  handoff: HandoffConfig;
  /** Per-minute limits per grant and per store, by class (DESIGN defaults). */
  rateLimits: RateLimits;
  /** Bun.serve closes a connection silent this long, s (max 255). */
  idleTimeoutSeconds: number;
  mcp: McpConfig;
  oauth: OAuthConfig;
  /** Reads an environment variable by name (the store's token variable); injected so tests need no real env. */
  env: (name: string) => string | undefined;
  /** The Shopify app's client id stored with `hookrelay store set --app-client-id` (HOOKRELAY_SHOPIFY_CLIENT_ID wins), or null. */
  appClientId: string | null;
  /**
   * Secret values this process holds that `env` does not show (the password of a --database-url), redacted from
   * free text with those it does (src/held-secrets.ts).
   */
  heldSecrets: readonly string[];
}

export interface Core {
  repo: Repo;
  clock: Clock;
  ids: IdGenerator;
  box: SecretBox;
  config: Config;
  log: Log;
}

/** The runtime without storage: for a module that reaches the storage only through another (the inbound path, via the writer). */
export type Runtime = Omit<Core, 'repo'>;

/**
 * The runtime with storage narrowed to the areas a module uses (db/repo.ts), e.g. `CoreWith<EventReads>`: a
 * full Core fits anywhere, and a module's signature says which storage it touches.
 */
export type CoreWith<R> = Runtime & { repo: R };

export function defaultConfig(overrides: Partial<Config> = {}): Config {
  return {
    publicUrl: 'http://127.0.0.1:8787',
    maxBodyBytes: 1024 * 1024,
    dedupeWindowMs: 24 * 3600_000,
    bodyRetentionMs: 30 * 86400_000,
    retention: DEFAULT_RETENTION,
    settingSources: {},
    shopifyAdminUrl: null,
    handoff: { timeoutMs: 10_000, retrySchedule: DEFAULT_RETRY_SCHEDULE_MS, concurrency: 8, batchSize: 256, probeBaseDelayMs: 5_000, probeMaxDelayMs: 300_000 },
    env: (name) => process.env[name],
    appClientId: null,
    heldSecrets: [],
    rateLimits: DEFAULT_RATE_LIMITS,
    idleTimeoutSeconds: 120,
    mcp: DEFAULT_MCP,
    oauth: { clientFetchTimeoutMs: 5_000, clientMaxBytes: 64 * 1024, loopbackClients: false, clientCa: null },
    ...overrides,
  };
}

export const DEFAULT_MCP: McpConfig = {
  codeMode: true,
  allowedOrigins: [],
  allowedHosts: [],
  limits: { cpuMs: 2_000, memoryBytes: 32 * 1024 * 1024, maxCalls: 50, maxResultBytes: 256 * 1024 },
};

/** MCP settings from the environment (`hookrelay serve`): HOOKRELAY_MCP_CODE_MODE=off, HOOKRELAY_MCP_ALLOWED_ORIGINS and _HOSTS. */
export function mcpConfigFromEnv(env: Record<string, string | undefined>): McpConfig {
  const list = (v: string | undefined) =>
    (v ?? '')
      .split(',')
      .map((o) => o.trim())
      .filter(Boolean);
  return {
    ...DEFAULT_MCP,
    codeMode: !/^(off|false|0|no)$/i.test(env.HOOKRELAY_MCP_CODE_MODE?.trim() ?? ''),
    allowedOrigins: list(env.HOOKRELAY_MCP_ALLOWED_ORIGINS),
    allowedHosts: list(env.HOOKRELAY_MCP_ALLOWED_HOSTS).map((h) => h.toLowerCase()),
  };
}

export function createCore(parts: Pick<Core, 'repo' | 'box'> & Partial<Core>): Core {
  const clock = parts.clock ?? systemClock;
  return {
    clock,
    ids: parts.ids ?? createIdGenerator(clock),
    config: parts.config ?? defaultConfig(),
    log: parts.log ?? silentLog,
    ...parts,
  };
}
