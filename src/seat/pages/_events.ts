/** What the Events and Recovery pages share: the store's endpoints by id, and an events table. */
import type { EventSummary } from '../../contract/schemas.ts';
import { html, when, type Html } from '../html.ts';
import type { SeatContext } from '../types.ts';

export interface EndpointName {
  id: string;
  name: string;
  triggerVariant: string;
  status: string;
}

/** The store's endpoints (setup state's summaries), by id; empty when the read is refused (the pages still work by id). */
export async function endpointNames(ctx: SeatContext): Promise<Map<string, EndpointName>> {
  const a = await ctx.call({ operationId: 'getSetupState' });
  const list = a.status === 200 ? ((a.body.data as { endpoints: EndpointName[] }).endpoints ?? []) : [];
  return new Map(list.map((e) => [e.id, e]));
}

/** An endpoint as people read it: its name and id (the id alone when it is gone). */
export function endpointLabel(id: string, names: Map<string, EndpointName>): Html {
  const ep = names.get(id);
  return ep ? html`${ep.name} <span class="muted"><code>${id}</code></span>` : html`<code>${id}</code>`;
}

/** The link to an event's detail on the Events page. */
export const eventHref = (ctx: Pick<SeatContext, 'base'>, id: string) => `${ctx.base}/events?${new URLSearchParams({ event: id })}`;

/** Events as a table readable without CSS; `action` adds a last cell per event (a replay button). */
export function eventsTable(ctx: SeatContext, events: EventSummary[], names: Map<string, EndpointName>, action?: (e: EventSummary) => Html): Html {
  if (!events.length) return html`<p>No events match.</p>`;
  return html`<table>
<thead><tr><th scope="col">Received</th><th scope="col">Event</th><th scope="col">External event id</th><th scope="col">Endpoint</th><th scope="col">Outcome</th><th scope="col">Code</th><th scope="col">Attempts</th>${action ? html`<th scope="col">Recovery</th>` : ''}</tr></thead>
<tbody>${events.map(
    (e) => html`<tr>
<td>${when(e.receivedAt)}</td>
<td><a href="${eventHref(ctx, e.id)}"><code>${e.id}</code></a>${e.isTest ? html` <span class="tag">test</span>` : ''}</td>
<td>${e.externalEventId === null ? html`<span class="muted">none</span>` : html`<code>${e.externalEventId}</code>`}</td>
<td>${endpointLabel(e.endpointId, names)}</td>
<td><span class="outcome outcome-${e.outcome}">${e.outcome}</span></td>
<td>${e.code === null ? '' : html`<code>${e.code}</code>`}</td>
<td>${e.attempts}</td>
${action ? html`<td>${action(e)}</td>` : ''}
</tr>`,
  )}</tbody>
</table>`;
}

/**
 * A time field's value (a datetime-local input: `2026-11-28T14:00`, read as UTC) as the contract's RFC 3339; other
 * text is passed on as it is, for the contract's validation to name.
 */
export function instantOf(value: string | null): string | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(v)) return `${v}:00Z`;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/.test(v)) return `${v}Z`;
  return v;
}

/** The value a datetime-local input shows for an RFC 3339 time in UTC (empty when none or not one). */
export function localOf(value: string | undefined): string {
  const m = value ? /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2})?/.exec(value) : null;
  return m ? m[1]! : '';
}
