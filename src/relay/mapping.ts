/** Dot-path lookups and id normalisation for the Flow payload. No transforms beyond GID -> numeric id. */

/** Value at a dot path (`order.id`, `line_items.0.sku`); undefined when any step is missing. */
export function getPath(root: unknown, path: string): unknown {
  let cur: unknown = root;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(key)) return undefined;
      cur = cur[Number(key)];
    } else {
      if (!Object.hasOwn(cur, key)) return undefined;
      cur = (cur as Record<string, unknown>)[key];
    }
  }
  return cur;
}

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

/** A related id is sent as text: strings and numbers as they are, anything else unmappable. */
export function relatedIdText(value: unknown): string | null {
  if (typeof value === 'string' && value.length > 0 && value.length <= 255) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}
