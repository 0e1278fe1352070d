import { describe, expect, it } from 'bun:test';
import { readFields } from '../../src/lib/fields.ts';

describe('readFields', () => {
  const doc = {
    a: { s: 'hi', n: 0, b: false, e: 'x@y.io', u: 'https://example.com/a?b=1', d: '2026-06-17T12:00:00.000+02:00' },
    bad: { n: '3', b: 0, e: 'x@', u: 'javascript:alert(1)', d: '17 June 2026', s: 'x'.repeat(256), ftp: 'ftp://example.com' },
    list: [{ sku: 'A-1' }],
  };
  it('keeps each value of its declared type as given, zero and false included', () => {
    const r = readFields(
      [
        { name: 's', path: 'a.s', type: 'text' },
        { name: 'n', path: 'a.n', type: 'number' },
        { name: 'b', path: 'a.b', type: 'boolean' },
        { name: 'e', path: 'a.e', type: 'email' },
        { name: 'u', path: 'a.u', type: 'url' },
        { name: 'd', path: 'a.d', type: 'datetime' },
        { name: 'sku', path: 'list.0.sku', type: 'text' },
      ],
      doc,
    );
    expect(r.values.map((v) => v.value)).toEqual(['hi', 0, false, 'x@y.io', 'https://example.com/a?b=1', '2026-06-17T12:00:00.000+02:00', 'A-1']);
    expect(r.missing).toEqual([]);
    expect(r.wrongType).toEqual([]);
  });

  it('counts a value of another type (never coerced) apart from a missing or null one', () => {
    const r = readFields(
      [
        { name: 'n', path: 'bad.n', type: 'number' },
        { name: 'b', path: 'bad.b', type: 'boolean' },
        { name: 'e', path: 'bad.e', type: 'email' },
        { name: 'u', path: 'bad.u', type: 'url' },
        { name: 'ftp', path: 'bad.ftp', type: 'url' },
        { name: 'd', path: 'bad.d', type: 'datetime' },
        { name: 'long', path: 'bad.s', type: 'text' },
        { name: 'obj', path: 'a', type: 'text' },
        { name: 'gone', path: 'a.nope', type: 'text' },
        { name: 'past_list', path: 'list.1.sku', type: 'text' },
      ],
      { ...doc, a: { ...doc.a, nope: null } },
    );
    expect(r.values).toEqual([]);
    expect(r.wrongType).toEqual(['n', 'b', 'e', 'u', 'ftp', 'd', 'long', 'obj']);
    expect(r.missing).toEqual(['gone', 'past_list']);
  });

  it('finds every field missing when no body is retained', () => {
    expect(readFields([{ name: 'n', path: 'a.n', type: 'number' }], undefined)).toEqual({ values: [], missing: ['n'], wrongType: [] });
  });
});
