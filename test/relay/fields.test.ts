import { describe, expect, it } from 'bun:test';
import type { FieldType } from '../../src/contract/triggers.ts';
import { readFields } from '../../src/lib/fields.ts';

/** Fields from `[name, path, type]` rows. */
const specs = (...rows: [string, string, FieldType][]) => rows.map(([name, path, type]) => ({ name, path, type }));

describe('readFields', () => {
  const doc = {
    a: { s: 'hi', n: 0, b: false, e: 'x@y.io', u: 'https://example.com/a?b=1', d: '2026-06-17T12:00:00.000+02:00' },
    bad: { n: '3', b: 0, e: 'x@', u: 'javascript:alert(1)', d: '17 June 2026', s: 'x'.repeat(256), ftp: 'ftp://example.com' },
    list: [{ sku: 'A-1' }],
  };
  it('keeps each value of its declared type as given, zero and false included', () => {
    const r = readFields(
      specs(
        ['s', 'a.s', 'text'],
        ['n', 'a.n', 'number'],
        ['b', 'a.b', 'boolean'],
        ['e', 'a.e', 'email'],
        ['u', 'a.u', 'url'],
        ['d', 'a.d', 'datetime'],
        ['sku', 'list.0.sku', 'text'],
      ),
      doc,
    );
    expect(r.values.map((v) => v.value)).toEqual(['hi', 0, false, 'x@y.io', 'https://example.com/a?b=1', '2026-06-17T12:00:00.000+02:00', 'A-1']);
    expect(r.missing).toEqual([]);
    expect(r.wrongType).toEqual([]);
  });

  it('counts a value of another type (never coerced) apart from a missing or null one', () => {
    const r = readFields(
      specs(
        ['n', 'bad.n', 'number'],
        ['b', 'bad.b', 'boolean'],
        ['e', 'bad.e', 'email'],
        ['u', 'bad.u', 'url'],
        ['ftp', 'bad.ftp', 'url'],
        ['d', 'bad.d', 'datetime'],
        ['long', 'bad.s', 'text'],
        ['obj', 'a', 'text'],
        ['gone', 'a.nope', 'text'],
        ['past_list', 'list.1.sku', 'text'],
      ),
      { ...doc, a: { ...doc.a, nope: null } },
    );
    expect(r.values).toEqual([]);
    expect(r.wrongType).toEqual(['n', 'b', 'e', 'u', 'ftp', 'd', 'long', 'obj']);
    expect(r.missing).toEqual(['gone', 'past_list']);
  });

  it('finds every field missing when no body is retained', () => {
    expect(readFields(specs(['n', 'a.n', 'number']), undefined)).toEqual({ values: [], missing: ['n'], wrongType: [] });
  });
});
