/** Prefixed identifiers. Time-ordered (48-bit ms + 80 random bits, Crockford base32) so ids sort by creation. */
import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';

const B32 = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix = 'st' | 'ep' | 'evt' | 'rcpt' | 'int' | 'gr' | 'diag' | 'sup' | 'af' | 'exp' | 'feat' | 'aud' | 'alr';

export interface IdGenerator {
  next(prefix: IdPrefix): string;
}

/**
 * Monotonic within one process: ids made in the same millisecond still sort in creation order. Such an id is the
 * last one plus one: mostly only its last bytes change, so the text of its time and upper 40 random bits is kept
 * from the last id and only the lower half is encoded again (a receipt mints two ids).
 */
export function createIdGenerator(clock: Clock = systemClock): IdGenerator {
  let lastMs = -1;
  /** The time and the upper half of the random bits, as text: what ids of one millisecond mostly share. */
  let head = '';
  let time = '';
  const rand = new Uint8Array(10);
  return {
    next(prefix) {
      let ms = clock.now();
      if (ms <= lastMs) {
        ms = lastMs;
        if (increment(rand) < 5) head = time + encode40(rand, 0);
      } else {
        crypto.getRandomValues(rand);
        rand[0]! &= 0x7f; // headroom so increments never overflow in practice
        time = encodeTime(ms);
        head = time + encode40(rand, 0);
      }
      lastMs = ms;
      return `${prefix}_${head}${encode40(rand, 5)}`;
    },
  };
}

/** The smallest id with this prefix minted at `ms`: a lower bound for time ranges over time-ordered ids. */
export function idFloor(prefix: IdPrefix, ms: number): string {
  return `${prefix}_${encodeTime(Math.max(0, ms))}`;
}

/** Adds one to the big-endian number; returns the index of the most significant byte it changed. */
function increment(bytes: Uint8Array): number {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 255) {
      bytes[i]!++;
      return i;
    }
    bytes[i] = 0;
  }
  return 0;
}

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = B32[ms % 32]! + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

/** Each 10-bit value as its two base32 characters, most significant first. */
const PAIRS = Array.from({ length: 1024 }, (_, v) => B32[v >> 5]! + B32[v & 31]!);

/**
 * Five bytes as eight 5-bit digits, most significant first: four 10-bit pairs, by shifts and masks (float division
 * per digit cost more than the rest; a character per digit, twice the concatenations).
 */
function encode40(b: Uint8Array, at: number): string {
  const b0 = b[at]!,
    b1 = b[at + 1]!,
    b2 = b[at + 2]!,
    b3 = b[at + 3]!,
    b4 = b[at + 4]!;
  return PAIRS[(b0 << 2) | (b1 >> 6)]! + PAIRS[((b1 & 63) << 4) | (b2 >> 4)]! + PAIRS[((b2 & 15) << 6) | (b3 >> 2)]! + PAIRS[((b3 & 3) << 8) | b4]!;
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
