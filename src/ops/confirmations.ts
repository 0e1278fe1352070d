/**
 * What the reads show of downstream confirmations (Flow's "Confirm hookrelay event" action, recorded by
 * src/platform/shopify/confirmations.ts): an event's newest confirmation, and the confirmed share of a window's deliveries.
 */
import type { ConfirmationStore, ConfirmedShareRow } from '../../db/areas/confirmations.ts';
import type { EndpointStore } from '../../db/repo.ts';
import type { TriggerVariant } from '../contract/schemas.ts';
import { iso } from '../lib/clock.ts';
import { idFloor } from '../lib/ids.ts';

/** An event's newest confirmation as event detail and the event result show it; null when no run confirmed it. */
export async function eventConfirmation(repo: ConfirmationStore, storeId: string, eventId: string) {
  const found = await repo.eventConfirmation(storeId, eventId);
  if (!found) return null;
  const { latest, runs } = found;
  return { outcome: latest.outcome, ...(latest.note ? { note: latest.note } : {}), confirmedAt: iso(latest.confirmedAt), runs };
}

type Counts = Omit<ConfirmedShareRow, 'endpointId'>;

const withShare = (c: Counts) => ({
  delivered: c.delivered,
  confirmed: c.confirmed,
  errored: c.errored,
  share: c.delivered > 0 ? c.confirmed / c.delivered : null,
});

function add(into: Counts, c: Counts): void {
  into.delivered += c.delivered;
  into.confirmed += c.confirmed;
  into.errored += c.errored;
}

/**
 * Of the events received since `from` (ms) and delivered, how many a workflow run confirmed: for the store, per
 * endpoint (with its trigger) and per trigger. Endpoints are listed most delivered first.
 */
export async function confirmedShare(repo: ConfirmationStore & Pick<EndpointStore, 'listEndpoints'>, storeId: string, from: number) {
  const rows = await repo.confirmedShare(storeId, from, idFloor('evt', from));
  const variants = new Map((await repo.listEndpoints(storeId)).map((e) => [e.id, e.triggerVariant as TriggerVariant]));
  const total: Counts = { delivered: 0, confirmed: 0, errored: 0 };
  const byTrigger = new Map<TriggerVariant, Counts>();
  for (const r of rows) {
    add(total, r);
    const variant = variants.get(r.endpointId);
    if (!variant) continue;
    if (!byTrigger.has(variant)) byTrigger.set(variant, { delivered: 0, confirmed: 0, errored: 0 });
    add(byTrigger.get(variant)!, r);
  }
  return {
    ...withShare(total),
    byEndpoint: [...rows]
      .sort((a, b) => b.delivered - a.delivered || a.endpointId.localeCompare(b.endpointId))
      .map((r) => ({ endpointId: r.endpointId, triggerVariant: variants.get(r.endpointId) ?? null, ...withShare(r) })),
    byTrigger: [...byTrigger]
      .map(([triggerVariant, c]) => ({ triggerVariant, ...withShare(c) }))
      .sort((a, b) => a.triggerVariant.localeCompare(b.triggerVariant)),
  };
}
