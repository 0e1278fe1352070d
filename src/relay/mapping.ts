/**
 * Dot-path lookups into a received body and the related id's text. A resource id is the store's platform's to
 * normalise (Platform.resourceId: for Shopify, a GID to its numeric id).
 */

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

/** A related id is sent as text: strings and numbers as they are, anything else unmappable. */
export function relatedIdText(value: unknown): string | null {
  if (typeof value === 'string' && value.length > 0 && value.length <= 255) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}
