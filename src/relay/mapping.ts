/**
 * The related id's text, read at a dot path (src/lib/fields.ts) of a received body. A resource id is the store's
 * platform's to normalise (Platform.resourceId: for Shopify, a GID to its numeric id).
 */

/** A related id is sent as text: strings and numbers as they are, anything else unmappable. */
export function relatedIdText(value: unknown): string | null {
  if (typeof value === 'string' && value.length > 0 && value.length <= 255) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}
