/** What the CLI may show of private material: the last four characters, never more. */

/** `****abcd`: all but the last four characters hidden (all of it when shorter than 12). */
export function mask(value: string): string {
  return value.length < 12 ? '****' : `****${value.slice(-4)}`;
}

const TOKEN_LIKE = /^(hrg_|whsec_)[A-Za-z0-9]{8,}/;

/**
 * A copy of `doc` with every `secret` field and every string that looks like a grant token or endpoint secret
 * masked. Every command's output passes through this except create-endpoint, the one that prints a secret.
 */
export function redactSecrets(doc: unknown): unknown {
  if (typeof doc === 'string') return TOKEN_LIKE.test(doc) ? mask(doc) : doc;
  if (Array.isArray(doc)) return doc.map(redactSecrets);
  if (doc && typeof doc === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(doc)) {
      out[k] = k === 'secret' && typeof v === 'string' ? mask(v) : redactSecrets(v);
    }
    return out;
  }
  return doc;
}
