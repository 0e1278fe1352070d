import { afterEach, describe, expect, it, spyOn } from 'bun:test';
import { ManualClock } from '../../src/lib/clock.ts';
import { createIdGenerator, idFloor } from '../../src/lib/ids.ts';

const B32 = '0123456789abcdefghjkmnpqrstvwxyz';

/** The 80 random bits of an id, as a number. */
function randomOf(id: string): bigint {
  let n = 0n;
  for (const c of id.slice(id.indexOf('_') + 11)) n = n * 32n + BigInt(B32.indexOf(c));
  return n;
}

/** Bytes as an 80-bit big-endian number, and its 16 base32 digits one by one (the format, digit by digit). */
function digits(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  for (let i = 0; i < 16; i++, n >>= 5n) out = B32[Number(n & 31n)]! + out;
  return out;
}

describe('createIdGenerator', () => {
  let spy: ReturnType<typeof spyOn> | null = null;
  afterEach(() => spy?.mockRestore());

  /** The generator's random bytes pinned to `bytes` (its first byte's top bit is cleared, as the generator does). */
  function pinned(bytes: number[]) {
    spy = spyOn(crypto, 'getRandomValues').mockImplementation(<T extends ArrayBufferView | null>(a: T): T => {
      (a as unknown as Uint8Array).set(bytes);
      return a;
    });
  }

  it('writes the time and the random bits in base32, most significant first', () => {
    const bytes = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x0f, 0xed];
    pinned(bytes);
    const clock = new ManualClock();
    const id = createIdGenerator(clock).next('evt');
    expect(id).toBe(`${idFloor('evt', clock.now())}${digits(new Uint8Array(bytes))}`);
    expect(id).toMatch(/^evt_[0-9a-hjkmnp-tv-z]{26}$/);
  });

  it('counts up within a millisecond, across every byte boundary, and sorts as text in order', () => {
    // The lower half's bytes all at 0xff but the last two: the count carries into the upper half within 512 ids.
    const start = [0x7f, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xfe, 0x00];
    pinned(start);
    const clock = new ManualClock();
    const ids = createIdGenerator(clock);
    const minted = Array.from({ length: 1500 }, (_, i) => ids.next(i % 2 ? 'rcpt' : 'evt').replace(/^[a-z]+_/, ''));
    const first = randomOf(`x_${minted[0]}`);
    for (const [i, id] of minted.entries()) {
      expect(randomOf(`x_${id}`)).toBe(first + BigInt(i));
      const bytes = new Uint8Array(10);
      let n = first + BigInt(i);
      for (let k = 9; k >= 0; k--, n >>= 8n) bytes[k] = Number(n & 255n);
      expect(id.slice(10)).toBe(digits(bytes));
    }
    expect([...minted].sort()).toEqual(minted);
    // A new millisecond starts from new random bits and still sorts after.
    clock.advance(1);
    expect(ids.next('evt') > `evt_${minted.at(-1)}`).toBe(true);
  });
});
