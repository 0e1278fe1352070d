/** The Admin API version's window: release on the quarter's first day, supported 12 months, warned of 90 days ahead. */
import { describe, expect, it } from 'bun:test';
import { apiVersionStatus, SHOPIFY_ADMIN_API_VERSION, supportWindow } from '../../src/platform/shopify/version.ts';

const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`);

describe('SHOPIFY_ADMIN_API_VERSION', () => {
  it('is 2026-10, supported until 2027-10-01', () => {
    expect(SHOPIFY_ADMIN_API_VERSION).toBe('2026-10');
    const w = supportWindow(SHOPIFY_ADMIN_API_VERSION);
    expect(new Date(w.releasedAt).toISOString()).toBe('2026-10-01T00:00:00.000Z');
    expect(new Date(w.supportedUntil).toISOString()).toBe('2027-10-01T00:00:00.000Z');
  });

  it('is supported, then ending soon 90 days before the end, then unsupported from the end', () => {
    expect(apiVersionStatus(day('2026-11-25'))).toEqual({
      version: '2026-10',
      releasedOn: '2026-10-01',
      supportedUntil: '2027-10-01',
      daysLeft: 310,
      status: 'supported',
    });
    expect(apiVersionStatus(day('2027-07-02')).status).toBe('supported'); // 91 days left
    expect(apiVersionStatus(day('2027-07-04'))).toMatchObject({ daysLeft: 89, status: 'ending_soon' });
    expect(apiVersionStatus(day('2027-09-30') + 86_399_000)).toMatchObject({ daysLeft: 0, status: 'ending_soon' });
    expect(apiVersionStatus(day('2027-10-01'))).toMatchObject({ daysLeft: 0, status: 'unsupported' });
    expect(apiVersionStatus(day('2027-12-01')).daysLeft).toBeLessThan(0);
  });

  it('derives the window of any stable version, and refuses what is not one', () => {
    expect(apiVersionStatus(day('2026-11-25'), '2025-10')).toMatchObject({ supportedUntil: '2026-10-01', status: 'unsupported' });
    expect(apiVersionStatus(day('2026-11-25'), '2026-01')).toMatchObject({ supportedUntil: '2027-01-01', status: 'ending_soon' });
    for (const bad of ['2026-11', 'unstable', '26-10', '2026-1']) expect(() => supportWindow(bad)).toThrow();
  });
});
