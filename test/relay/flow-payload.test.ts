import { describe, expect, it } from 'bun:test';
import type { EventRow } from '../../db/types.ts';
import { FLOW_PAYLOAD_MAX_BYTES, TRIGGERS } from '../../src/contract/triggers.ts';
import { flowHandoff, flowPayloadBytes, flowPayloadFits, flowRefusal, type FlowPayload } from '../../src/platform/shopify/flow.ts';

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

describe('one size rule at receipt and at send', () => {
  it('refuses at receipt exactly the events whose payload the send would refuse, on both sides of the limit', () => {
    const endpoint = { triggerVariant: 'order', sourceLabel: 'Zapier' };
    const verdicts: boolean[] = [];
    for (const [text, n] of [
      ['x', FLOW_PAYLOAD_MAX_BYTES - 300],
      ['x', FLOW_PAYLOAD_MAX_BYTES],
      ['\u0001', 8_200],
      ['\u0001', 8_400],
      ['😀', 12_400],
      ['a', 255],
    ] as const) {
      const event = {
        id: 'evt_1',
        eventType: text.repeat(n),
        externalEventId: 'ext-1',
        resourceId: '4501',
        relatedResourceId: null,
        receivedAt: 0,
      } as EventRow;
      const sent = flowHandoff(endpoint, event);
      expect(sent.handle).toBe(TRIGGERS.order.handle);
      if (sent.ok) expect(flowPayloadBytes(sent.payload)).toBeLessThan(FLOW_PAYLOAD_MAX_BYTES);
      expect(flowRefusal(endpoint, event)).toBe(sent.ok ? null : 'SVC_PAYLOAD_TOO_LARGE');
      verdicts.push(sent.ok);
    }
    expect(new Set(verdicts)).toEqual(new Set([true, false]));
  });
});
