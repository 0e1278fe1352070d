/** Raw bodies are freed as soon as the inbound path is done with them (releaseBody), not at the next collection. */
import { describe, expect, it } from 'bun:test';
import { readCapped, releaseBody } from '../../src/lib/body.ts';

const post = (body: string | ReadableStream, headers: Record<string, string> = {}) =>
  new Request('http://relay.test/hooks/x', { method: 'POST', body, headers });

describe('releaseBody', () => {
  it('frees a body readCapped read, with or without Content-Length', async () => {
    const declared = (await readCapped(post('{"a":1}', { 'content-length': '7' }), 1024))!;
    const streamed = (await readCapped(post(new Blob(['{"a":', '1}']).stream()), 1024))!;
    for (const body of [declared, streamed]) {
      expect(new TextDecoder().decode(body)).toBe('{"a":1}');
      releaseBody(body);
      expect((body.buffer as ArrayBuffer).detached).toBe(true);
      expect(body.byteLength).toBe(0);
      releaseBody(body); // twice is harmless
    }
  });

  it('leaves alone a view into a larger buffer (someone else may read the rest)', () => {
    const whole = new Uint8Array([1, 2, 3, 4]);
    const part = whole.subarray(1, 3);
    releaseBody(part);
    expect((whole.buffer as ArrayBuffer).detached).toBe(false);
    expect([...whole]).toEqual([1, 2, 3, 4]);
  });
});
