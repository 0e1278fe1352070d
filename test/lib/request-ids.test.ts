import { describe, expect, it } from 'bun:test';
import { nextRequestId } from '../../src/lib/request-ids.ts';

describe('nextRequestId', () => {
  it("is the process's prefix and a counter of ten base-36 digits, one up each time, across the kept digits' boundaries", () => {
    const ids = Array.from({ length: 3000 }, nextRequestId);
    const prefix = ids[0]!.slice(0, 20);
    let last = Number.parseInt(ids[0]!.slice(20), 36);
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-z]{26}$/);
    for (const id of ids.slice(1)) {
      expect(id.slice(0, 20)).toBe(prefix);
      const n = Number.parseInt(id.slice(20), 36);
      expect(n).toBe(last + 1);
      expect(id.slice(20)).toBe(n.toString(36).padStart(10, '0'));
      last = n;
    }
  });
});
