/**
 * Events: the store's receipts searched through the contract's listEvents (external event id, outcome, endpoint,
 * trigger, receipt window; a page at a time by its cursor), and one event's detail (getEventDetail: attempts, where
 * handoff stopped, confirmation, recovery options). Never a body: the contract returns none.
 */
import { EVENT_OUTCOMES, TRIGGER_VARIANTS, type EventSummary } from '../../contract/schemas.ts';
import { html, postForm, problem, queryOf, section, when, type Html } from '../html.ts';
import type { PageResult, SeatContext, SeatPage } from '../types.ts';
import { endpointLabel, endpointNames, eventHref, eventsTable, instantOf, localOf, type EndpointName } from './_events.ts';

const PAGE_SIZE = '50';

/** The search as the form and the links carry it (query names of this page), and as the contract's query. */
function searchOf(url: URL) {
  const q = url.searchParams;
  const text = (name: string) => q.get(name)?.trim() || undefined;
  const form = {
    externalEventId: text('externalEventId'),
    outcome: text('outcome'),
    endpointId: text('endpointId'),
    triggerVariant: text('triggerVariant'),
    since: instantOf(q.get('since')),
    until: instantOf(q.get('until')),
  };
  return { form, cursor: text('cursor') };
}

type Search = ReturnType<typeof searchOf>['form'];

function options(values: readonly string[], selected: string | undefined, labels: (v: string) => string = (v) => v): Html {
  return html`<option value="">any</option>${values.map((v) => html`<option value="${v}"${v === selected ? html` selected` : ''}>${labels(v)}</option>`)}`;
}

function searchForm(ctx: SeatContext, s: Search, names: Map<string, EndpointName>): Html {
  const endpointIds = [...names.keys()];
  if (s.endpointId && !names.has(s.endpointId)) endpointIds.push(s.endpointId);
  return html`<form method="get" action="${`${ctx.base}/events`}" class="search">
<p><label>External event id <input name="externalEventId" value="${s.externalEventId ?? ''}" maxlength="255"></label></p>
<p><label>Outcome <select name="outcome">${options(EVENT_OUTCOMES, s.outcome)}</select></label>
<label>Endpoint <select name="endpointId">${options(endpointIds, s.endpointId, (id) => {
    const ep = names.get(id);
    return ep ? `${ep.name} (${id})` : id;
  })}</select></label>
<label>Trigger <select name="triggerVariant">${options(TRIGGER_VARIANTS, s.triggerVariant)}</select></label></p>
<p><label>Received from <input type="datetime-local" name="since" value="${localOf(s.since)}"></label>
<label>until <input type="datetime-local" name="until" value="${localOf(s.until)}"></label> <span class="muted">(UTC)</span></p>
<p><button type="submit">Search</button> <a href="${`${ctx.base}/events`}">Clear</a></p>
</form>`;
}

async function list(ctx: SeatContext): Promise<PageResult> {
  const { form, cursor } = searchOf(ctx.url);
  const names = await endpointNames(ctx);
  const query: Record<string, string> = { limit: PAGE_SIZE };
  for (const [k, v] of Object.entries(form)) if (v) query[k] = v;
  if (cursor) query.cursor = cursor;
  const a = await ctx.call({ operationId: 'listEvents', query });
  const title = 'Events';
  if (a.status !== 200) {
    return { title, status: a.status, html: html`${section(ctx, 'Search', searchForm(ctx, form, names))}${problem(a)}`.markup };
  }
  const { events, nextCursor } = a.body.data as { events: EventSummary[]; nextCursor: string | null };
  const pages = html`<nav class="pages" aria-label="Result pages">
${cursor ? html`<a href="${`${ctx.base}/events${queryOf(form)}`}">Newest</a>` : ''}
${nextCursor ? html`<a href="${`${ctx.base}/events${queryOf({ ...form, cursor: nextCursor })}`}" rel="next">Older events</a>` : ''}
</nav>`;
  return {
    title,
    html: html`${section(ctx, 'Search', searchForm(ctx, form, names))}
${section(
  ctx,
  cursor ? 'Older events' : 'Newest events',
  html`<p class="muted">Newest first, ${PAGE_SIZE} a page. Event bodies are never shown here.</p>${eventsTable(ctx, events, names)}${pages}`,
)}`.markup,
  };
}

interface Attempt {
  number: number;
  destination: string;
  startedAt: string;
  finishedAt: string | null;
  outcome: string;
  httpStatus: number | null;
  code: string | null;
  message: string | null;
  retryAt: string | null;
}

interface EventDetail extends EventSummary {
  configVersion: number;
  duplicateOf: string | null;
  bodyBytes: number;
  deliveredAt: string | null;
  nextAttemptAt: string | null;
  handoffStoppedAt: string;
  handoffPause: { state: string; code: string | null; message: string | null; recommendedAction: string | null } | null;
  meaning: string;
  attemptsDetail: Attempt[];
  recoveryOptions: { action: string; operationId: string | null; available: boolean; reason: string }[];
  confirmation: { outcome: string; note?: string; confirmedAt: string; runs: number } | null;
}

const row = (label: string, value: Html | string | number) => html`<tr><th scope="row">${label}</th><td>${value}</td></tr>`;

function attemptsTable(attempts: Attempt[]): Html {
  if (!attempts.length) return html`<p>No handoff attempt yet.</p>`;
  return html`<table>
<thead><tr><th scope="col">#</th><th scope="col">Destination</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Outcome</th><th scope="col">HTTP</th><th scope="col">Code</th><th scope="col">Message</th><th scope="col">Retry at</th></tr></thead>
<tbody>${attempts.map(
    (t) =>
      html`<tr><td>${t.number}</td><td>${t.destination}</td><td>${when(t.startedAt)}</td><td>${when(t.finishedAt)}</td><td>${t.outcome}</td><td>${t.httpStatus ?? ''}</td><td>${t.code === null ? '' : html`<code>${t.code}</code>`}</td><td>${t.message ?? ''}</td><td>${when(t.retryAt)}</td></tr>`,
  )}</tbody>
</table>`;
}

/** The recovery options the contract gives, with the replay's preview form where it is available. */
function recovery(ctx: SeatContext, e: EventDetail): Html {
  return html`<ul class="options">${e.recoveryOptions.map((o) => {
    const form =
      o.action === 'replay' && o.available
        ? postForm(
            ctx,
            `${ctx.base}/recovery`,
            { action: 'replay-preview', eventId: e.id },
            'Preview a replay',
            html`<label>Reason (for the audit trail) <input name="reason" maxlength="500"></label> `,
          )
        : '';
    return html`<li><strong>${o.action.replaceAll('_', ' ')}</strong>${o.available ? '' : ' (not available)'}: ${o.reason}${form}</li>`;
  })}</ul>`;
}

async function detail(ctx: SeatContext, eventId: string): Promise<PageResult> {
  const [a, names] = await Promise.all([ctx.call({ operationId: 'getEventDetail', params: { eventId } }), endpointNames(ctx)]);
  const back = html`<p><a href="${`${ctx.base}/events`}">All events</a></p>`;
  if (a.status !== 200) return { title: 'Event', status: a.status, html: html`${back}${problem(a)}`.markup };
  const e = (a.body.data as { event: EventDetail }).event;
  const c = e.confirmation;
  const facts = html`<table class="facts"><tbody>
${row('Event', html`<code>${e.id}</code>`)}
${row('Receipt', html`<code>${e.receiptId}</code>`)}
${row('External event id', e.externalEventId === null ? html`<span class="muted">none</span>` : html`<code>${e.externalEventId}</code>`)}
${row('Event type', e.eventType ?? '')}
${row('Endpoint', html`${endpointLabel(e.endpointId, names)} (config version ${e.configVersion})`)}
${row('Outcome', html`<span class="outcome outcome-${e.outcome}">${e.outcome}</span>${e.code ? html` <code>${e.code}</code>` : ''}`)}
${row('What it means', e.meaning)}
${row('Received', when(e.receivedAt))}
${row('Delivered', when(e.deliveredAt))}
${row('Attempts', e.attempts)}
${row('Next attempt', when(e.nextAttemptAt))}
${row('Handoff stopped at', e.handoffStoppedAt)}
${e.handoffPause ? row('Handoff paused', html`<code>${e.handoffPause.code ?? ''}</code> ${e.handoffPause.message ?? ''} ${e.handoffPause.recommendedAction ?? ''}`) : ''}
${e.duplicateOf ? row('Duplicate of', html`<a href="${eventHref(ctx, e.duplicateOf)}"><code>${e.duplicateOf}</code></a>`) : ''}
${row('Body', `${e.bodyBytes} bytes, ${e.bodyRetention} (never shown here)`)}
</tbody></table>`;
  const confirmation = c
    ? html`<p>A workflow confirmed this event: <strong>${c.outcome}</strong>, ${when(c.confirmedAt)}${c.runs > 1 ? `, ${c.runs} runs` : ''}.</p>${c.note ? html`<blockquote>${c.note}</blockquote>` : ''}`
    : html`<p>No workflow run has confirmed this event (a workflow confirms it with the Flow action Confirm hookrelay event). Delivered alone does not mean the workflow finished.</p>`;
  return {
    title: `Event ${e.id}`,
    html: html`${back}${section(ctx, 'Receipt', facts)}${section(ctx, 'Handoff attempts', attemptsTable(e.attemptsDetail))}${section(ctx, 'Confirmation', confirmation)}${section(ctx, 'Recovery', recovery(ctx, e))}`
      .markup,
  };
}

export const page: SeatPage = {
  path: '/events',
  title: 'Events',
  get(ctx) {
    const id = ctx.url.searchParams.get('event');
    return id ? detail(ctx, id) : list(ctx);
  },
};
