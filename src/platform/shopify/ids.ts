/** Shopify's resource ids: a positive integer, its digits, or a GID (`gid://shopify/Order/4501`). */

const GID = /^gid:\/\/shopify\/[A-Za-z]+\/(\d+)(\?.*)?$/;

/**
 * A Shopify resource id as a decimal string: from a positive integer, a digit string, or a GID. The Flow
 * reference is sent as a JSON number, so ids beyond Number.MAX_SAFE_INTEGER (and 0) are unmappable rather
 * than silently rounded to another resource's id.
 */
export function normalizeResourceId(value: unknown): string | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? String(value) : null;
  if (typeof value !== 'string') return null;
  const v = value.trim();
  const digits = /^\d+$/.test(v) ? v : GID.exec(v)?.[1];
  if (!digits || !/^[1-9]\d{0,15}$/.test(digits)) return null;
  return Number.isSafeInteger(Number(digits)) ? digits : null;
}
