/**
 * The Admin API version hookrelay speaks, and its window of support. Shopify releases a stable version each
 * quarter (YYYY-01, -04, -07, -10) and supports it for at least 12 months; after that a request naming it is
 * answered by the oldest supported version ("falls forward"), and the reply's X-Shopify-API-Version says which.
 * shopify/shopify.app.toml's `[webhooks] api_version` must name the same version (test/relay/extensions.test.ts).
 */
export const SHOPIFY_ADMIN_API_VERSION = '2026-10';

/** Warn this long before the version's support ends (doctor, setup state, serve's start-up line). */
const VERSION_WARNING_DAYS = 90;

const DAY_MS = 86_400_000;

export interface ApiVersionStatus {
  version: string;
  /** The first day of the version's quarter, UTC (YYYY-MM-DD). */
  releasedOn: string;
  /** Release + 12 months: the earliest day Shopify may stop serving it. */
  supportedUntil: string;
  /** Whole days until supportedUntil (negative once past). */
  daysLeft: number;
  /** `supported`; `ending_soon` within VERSION_WARNING_DAYS of the end; `unsupported` after it. */
  status: 'supported' | 'ending_soon' | 'unsupported';
}

/** Release and end of support of a `YYYY-MM` version; throws on anything else (a programming error). */
export function supportWindow(version: string): { releasedAt: number; supportedUntil: number } {
  const m = /^(\d{4})-(01|04|07|10)$/.exec(version);
  if (!m) throw new Error(`not a stable Shopify API version: ${version}`);
  const year = Number(m[1]);
  const month = Number(m[2]) - 1;
  return { releasedAt: Date.UTC(year, month, 1), supportedUntil: Date.UTC(year + 1, month, 1) };
}

/** Where `version` stands at `now` (ms): what doctor, setup state and the manifest show. */
export function apiVersionStatus(now: number, version: string = SHOPIFY_ADMIN_API_VERSION): ApiVersionStatus {
  const { releasedAt, supportedUntil } = supportWindow(version);
  const daysLeft = Math.floor((supportedUntil - now) / DAY_MS);
  const status = now >= supportedUntil ? 'unsupported' : daysLeft < VERSION_WARNING_DAYS ? 'ending_soon' : 'supported';
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return { version, releasedOn: day(releasedAt), supportedUntil: day(supportedUntil), daysLeft, status };
}
