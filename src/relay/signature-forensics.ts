/**
 * Signature forensics: once an inbound request has FAILED authentication, which of a sender's usual mistakes it was
 * (src/contract/diagnoses.ts). It runs after the verdict and returns only a code: it never turns a failure into a
 * success. Every finding needs a value made with the endpoint's secret (an HMAC keyed with it, or the secret itself),
 * so it tells nothing to a caller without one; digests are compared in constant time, so the comparisons cannot
 * leak an HMAC byte by byte either.
 *
 * Work per failure is fixed: per secret (current, and previous while the row keeps it) one HMAC of the body as it
 * came, and for a JSON body of at most FORENSICS_MAX_RESERIALIZE_BYTES one per re-serialisation (compact, 2- and
 * 4-space indented, trailing newline toggled): at most 10 HMACs of 64 KiB, or 2 of a larger body. A header value that
 * encodes no 32-byte digest costs none. The inbound path's failure limits bound how often this runs.
 */
import { FORENSICS_MAX_RESERIALIZE_BYTES, type DiagnosisCode } from '../contract/diagnoses.ts';
import { constantTimeEqual, hmacDigest, sameDigest } from '../lib/crypto.ts';
import type { LiveEndpoint } from './endpoint-cache.ts';

type Encoding = 'hex' | 'hex_uppercase' | 'base64_not_hex';
type Prefix = 'prefix_sha256' | 'prefix_v1';

const HEX64 = /^[0-9a-fA-F]{64}$/;
/** 32 bytes in base64 or base64url, padded or not. */
const BASE64_32 = /^[A-Za-z0-9+/]{43}=?$|^[A-Za-z0-9_-]{43}$/;
const PREFIX = /^(sha256=|v1[,=])\s*/i;
const BEARER = /^bearer\s+/i;
const UTF8 = new TextDecoder('utf-8', { fatal: true });
const NEWLINE = 0x0a;

/** The digest a header value carries, its encoding and prefix; null when it encodes no 32 bytes. */
function readSignature(value: string): { digest: Buffer; encoding: Encoding; prefix: Prefix | null } | null {
  let v = value;
  let prefix: Prefix | null = null;
  const m = PREFIX.exec(v);
  if (m) {
    prefix = m[1]!.toLowerCase().startsWith('sha256') ? 'prefix_sha256' : 'prefix_v1';
    v = v.slice(m[0].length);
  }
  if (HEX64.test(v)) return { digest: Buffer.from(v, 'hex'), encoding: /[A-F]/.test(v) ? 'hex_uppercase' : 'hex', prefix };
  if (!BASE64_32.test(v)) return null;
  const digest = Buffer.from(v, 'base64');
  return digest.byteLength === 32 ? { digest, encoding: 'base64_not_hex', prefix } : null;
}

/**
 * The body as a sender may have signed it instead of as it sent it, each with its code; none for a body larger than
 * the bound. JSON layouts only for a UTF-8 JSON body; a layout equal to the body itself (or to another) is left out.
 */
function rewrites(body: Uint8Array): [DiagnosisCode, Uint8Array | string][] {
  if (body.byteLength === 0 || body.byteLength > FORENSICS_MAX_RESERIALIZE_BYTES) return [];
  const out: [DiagnosisCode, Uint8Array | string][] = [];
  const last = body.byteLength - 1;
  if (body[last] === NEWLINE) out.push(['body_trailing_newline', body.subarray(0, body[last - 1] === 0x0d ? last - 1 : last)]);
  else {
    const longer = new Uint8Array(body.byteLength + 1);
    longer.set(body);
    longer[body.byteLength] = NEWLINE;
    out.push(['body_trailing_newline', longer]);
  }
  let text: string;
  let doc: unknown;
  try {
    text = UTF8.decode(body);
    doc = JSON.parse(text);
  } catch {
    return out;
  }
  const seen = new Set([text]);
  const layouts: [DiagnosisCode, string][] = [
    ['body_reserialized_compact', JSON.stringify(doc)],
    ['body_reserialized_pretty', JSON.stringify(doc, null, 2)],
    ['body_reserialized_pretty', JSON.stringify(doc, null, 4)],
  ];
  for (const [code, layout] of layouts) {
    if (seen.has(layout)) continue;
    seen.add(layout);
    out.push([code, layout]);
  }
  return out;
}

interface Key {
  secret: string;
  /** The previous secret after its rotation overlap ended: a match with it is `previous_secret`, whatever the form. */
  stale: boolean;
}

/** The endpoint's secrets: the current one, and the previous one while the row keeps it (within its overlap or after). */
function keysOf(ep: LiveEndpoint, now: number): Key[] {
  const keys: Key[] = [{ secret: ep.secret, stale: false }];
  if (ep.previousSecret) keys.push({ secret: ep.previousSecret, stale: (ep.previousSecretExpiresAt ?? 0) <= now });
  return keys;
}

/**
 * Which usual mistake a failed authentication was, or null (a random or foreign value, or none recognised). Call it
 * only for a failure already decided; `headerValue` is the endpoint header's value as received, `body` its exact
 * bytes. One finding at a time, the most basic first: a stale secret, then a re-serialised body, then a prefix, then
 * the encoding (a sender fixing one sees the next).
 */
export function diagnoseFailure(ep: LiveEndpoint, body: Uint8Array, headerValue: string, now: number): DiagnosisCode | null {
  const value = headerValue.trim();
  const keys = keysOf(ep, now);
  return ep.row.authMode === 'hmac_sha256' ? diagnoseSignature(keys, body, value) : diagnoseToken(keys, body, value);
}

function diagnoseSignature(keys: Key[], body: Uint8Array, value: string): DiagnosisCode | null {
  const sig = readSignature(value);
  if (!sig) {
    // No digest at all: perhaps the secret itself, sent as a static token would be.
    for (const k of keys) if (constantTimeEqual(value, k.secret)) return k.stale ? 'previous_secret' : 'secret_not_signature';
    return null;
  }
  const others = rewrites(body);
  let found: DiagnosisCode | null = null;
  for (const k of keys) {
    // Every digest is computed and compared, found or not: the work does not depend on what matched.
    const asSent = sameDigest(sig.digest, hmacDigest(k.secret, body));
    let rewritten: DiagnosisCode | null = null;
    for (const [code, bytes] of others) if (sameDigest(sig.digest, hmacDigest(k.secret, bytes)) && !rewritten) rewritten = code;
    if (found || (!asSent && !rewritten)) continue;
    if (k.stale) found = 'previous_secret';
    else if (rewritten && !asSent) found = rewritten;
    else found = sig.prefix ?? (sig.encoding === 'hex' ? null : sig.encoding);
  }
  return found;
}

function diagnoseToken(keys: Key[], body: Uint8Array, value: string): DiagnosisCode | null {
  const bearer = BEARER.exec(value);
  const bare = bearer ? value.slice(bearer[0].length).trim() : value;
  for (const k of keys) {
    if (!constantTimeEqual(bare, k.secret)) continue;
    if (k.stale) return 'previous_secret';
    if (bearer) return 'bearer_prefix';
  }
  const sig = readSignature(value);
  if (!sig) return null;
  for (const k of keys) if (sameDigest(sig.digest, hmacDigest(k.secret, body))) return k.stale ? 'previous_secret' : 'signature_not_token';
  return null;
}
