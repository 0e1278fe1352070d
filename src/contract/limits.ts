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

/** Largest Agent Operations API (and MCP) request body; larger bodies answer 413 `payload_too_large`. */
export const MAX_API_BODY_BYTES = 1024 * 1024;

/** The longest Idempotency-Key accepted, characters (server, OpenAPI and client check this one number). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 200;
