import { describe, expect, it } from 'bun:test';
import { fromThreadError, packCommitted, packReceipt, toThreadError, unpackCommitted, unpackReceipt } from '../../src/relay/relay-protocol.ts';
import { storageFault } from '../../src/relay/storage-health.ts';
import { eventRow } from '../helpers.ts';

describe('relay thread messages', () => {
  it('a receipt crosses as values and comes back whole, every field of its event included', () => {
    const event = eventRow({
      id: 'evt_1',
      externalEventId: 'ext-1',
      resourceId: '4501',
      relatedResourceId: 'gid://x',
      duplicateOf: 'evt_0',
      code: 'X',
      isTest: true,
      leaseUntil: 7,
      deliveredAt: 8,
      lastAttemptAt: 9,
    });
    const receipt = {
      event,
      body: new Uint8Array([1, 2, 3]),
      bodyExpiresAt: 11,
      dedupeSince: 12,
      capacity: { meter: 'accepted_events', periodStart: 13, hardLimit: 14 },
    };
    const back = unpackReceipt(structuredClone(packReceipt(receipt)));
    expect(back).toEqual(receipt);
    expect(Object.keys(back.event).sort()).toEqual(Object.keys(event).sort());
    expect(unpackReceipt(packReceipt({ ...receipt, body: null, dedupeSince: null, capacity: null }))).toEqual({
      ...receipt,
      body: null,
      dedupeSince: null,
      capacity: null,
    });
  });

  it("a commit's answer comes back whole", () => {
    const c = { eventId: 'evt_1', receiptId: 'rcpt_1', outcome: 'duplicate_suppressed', duplicateOf: 'evt_0', leased: false };
    expect(unpackCommitted(structuredClone(packCommitted(c)))).toEqual(c);
  });

  it('a storage error keeps the driver code that storageFault reads, from anywhere along its cause chain', () => {
    const driver = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const wrapped = new Error('Failed query', { cause: driver });
    const back = fromThreadError(structuredClone(toThreadError(wrapped)));
    expect(storageFault(back)).toBe('full');
    expect(storageFault(fromThreadError(toThreadError(new Error('a bug'))))).toBeNull();
  });
});
