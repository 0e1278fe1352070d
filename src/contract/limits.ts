/** Per-minute rate limits by class, per grant and per store (DESIGN.md "Plans and limits"; configurable). */
import type { RateLimitClass } from './operations.ts';

export type RateLimits = Record<RateLimitClass, { grant: number; store: number }>;

export const DEFAULT_RATE_LIMITS: RateLimits = {
  simple_read: { grant: 120, store: 600 },
  rich_read: { grant: 30, store: 150 },
  recovery_preview: { grant: 20, store: 100 },
  endpoint_preview: { grant: 10, store: 50 },
};

/** How long an Idempotency-Key holds its stored response (DESIGN: 24 h); older keys are swept. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;

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

/** MCP sessions one grant may hold open; opening another closes its least recently used (`hookrelay mcp` reopens). */
export const MCP_SESSIONS_PER_GRANT = 8;
