import { describe, expect, it } from 'bun:test';
import { FLOW_PAYLOAD_MAX_BYTES } from '../../src/contract/triggers.ts';
import { flowPayloadBytes, flowPayloadFits, type FlowPayload } from '../../src/platform/shopify/flow.ts';

describe('flowPayloadFits', () => {
  it('agrees with the serialised size on both sides of the limit, whatever the characters cost', () => {
    const cases: FlowPayload[] = [
      { order_id: 4501, 'event type': 'order.flagged', source: 'Zapier' },
      { 'event type': 'x'.repeat(FLOW_PAYLOAD_MAX_BYTES) },
      { 'event type': 'x'.repeat(FLOW_PAYLOAD_MAX_BYTES - 30) },
      // A control character costs 6 bytes in JSON (\u0001), an emoji 4 bytes for 2 UTF-16 units.
      { 'event type': '\u0001'.repeat(8_400) },
      { 'event type': '\u0001'.repeat(8_000) },
      { 'event type': '😀'.repeat(12_400) },
      { 'event type': 'é'.repeat(25_000) },
      { n: Number.MAX_VALUE, m: -Number.MIN_VALUE, 'event type': 'a'.repeat(255) },
    ];
    const verdicts = cases.map((p) => [flowPayloadFits(p), flowPayloadBytes(p) < FLOW_PAYLOAD_MAX_BYTES]);
    for (const [fits, exact] of verdicts) expect(fits).toBe(exact!);
    // Both verdicts occur, so the check is exercised on each side.
    expect(new Set(verdicts.map(([f]) => f))).toEqual(new Set([true, false]));
  });
});
