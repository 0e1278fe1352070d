/** Prefixed identifiers. Time-ordered (48-bit ms + 80 random bits, Crockford base32) so ids sort by creation. */
import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';

const B32 = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix = 'st' | 'ep' | 'evt' | 'rcpt' | 'int' | 'gr' | 'diag' | 'sup' | 'af' | 'exp' | 'feat' | 'aud' | 'alr';

export interface IdGenerator {
  next(prefix: IdPrefix): string;
}

/** Monotonic within one process: ids made in the same millisecond still sort in creation order. */
export function createIdGenerator(clock: Clock = systemClock): IdGenerator {
  let lastMs = -1;
  let time = '';
  const rand = new Uint8Array(10);
  return {
    next(prefix) {
      let ms = clock.now();
      if (ms <= lastMs) {
        ms = lastMs;
        increment(rand);
      } else {
        crypto.getRandomValues(rand);
        rand[0]! &= 0x7f; // headroom so increments never overflow in practice
        time = encodeTime(ms);
      }
      lastMs = ms;
      return `${prefix}_${time}${encodeRandom(rand)}`;
    },
  };
}

/** The smallest id with this prefix minted at `ms`: a lower bound for time ranges over time-ordered ids. */
export function idFloor(prefix: IdPrefix, ms: number): string {
  return `${prefix}_${encodeTime(Math.max(0, ms))}`;
}

function increment(bytes: Uint8Array): void {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 255) {
      bytes[i]!++;
      return;
    }
    bytes[i] = 0;
  }
}

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = B32[ms % 32]! + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

/** 80 bits as 16 base32 characters, most significant first: two 40-bit halves of 8 characters each. */
function encodeRandom(bytes: Uint8Array): string {
  return encode40(bytes, 0) + encode40(bytes, 5);
}

/** Five bytes as eight 5-bit digits, by shifts and masks (float division per digit cost more than the rest). */
function encode40(b: Uint8Array, at: number): string {
  const b0 = b[at]!,
    b1 = b[at + 1]!,
    b2 = b[at + 2]!,
    b3 = b[at + 3]!,
    b4 = b[at + 4]!;
  return (
    B32[b0 >> 3]! +
    B32[((b0 & 7) << 2) | (b1 >> 6)]! +
    B32[(b1 >> 1) & 31]! +
    B32[((b1 & 1) << 4) | (b2 >> 4)]! +
    B32[((b2 & 15) << 1) | (b3 >> 7)]! +
    B32[(b3 >> 2) & 31]! +
    B32[((b3 & 3) << 3) | (b4 >> 5)]! +
    B32[b4 & 31]!
  );
}

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base62 of random bytes: used for secrets and tokens, never for ids. */
export function randomBase62(byteCount: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(byteCount));
  return base62(bytes);
}

export function base62(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  while (n > 0n) {
    out = B62[Number(n % 62n)]! + out;
    n /= 62n;
  }
  return out.padStart(Math.ceil((bytes.length * 8) / Math.log2(62)), '0');
}
