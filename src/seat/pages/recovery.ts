/**
 * Recovery: the store's failed events and its delivered events no workflow confirmed (listEvents), and replays as
 * the contract's intents: preview (createReplayIntent, createBulkReplayIntent) → the merchant reads what the preview
 * bound (count, sample, window, cost, warnings) and confirms → execute with the intent's id, its confirmation token
 * and an Idempotency-Key the confirm form carries, so a second submit of the same form is the same change, made once.
 * Refusals (a plan's cap, a filter matching too many) are shown as the contract words them, with its recommended action.
 */
import type { EventSummary } from '../../contract/schemas.ts';
import { field, html, newFormKey, postForm, problem, queryOf, section, when, type Html } from '../html.ts';
import type { PageResult, SeatAnswer, SeatContext, SeatPage } from '../types.ts';
import { endpointLabel, endpointNames, eventHref, eventsTable, instantOf, localOf, type EndpointName } from './_events.ts';

const PAGE_SIZE = '25';
/** Minutes a delivered event may go unconfirmed before this page lists it, unless the merchant chooses another. */
const DEFAULT_UNCONFIRMED_MINUTES = '60';
const BULK_OUTCOMES = ['failed', 'no_workflow', 'delivered'] as const;

interface Intent {
  id: string;
  kind: 'replay' | 'bulk_replay';
  targetId: string | null;
  preview: {
    summary: string;
    changes: { field: string; from: unknown; to: unknown }[];
    sideEffects: string[];
    meterCost: { meter: string; units: number }[];
    warnings: string[];
    selection?: {
      filter: { outcome: string; code?: string; endpointId?: string; since?: string; until?: string };
      count: number;
      excluded: { bodyNotRetained: number };
      window: { oldestReceivedAt: string; newestReceivedAt: string };
      throughEventId: string;
      asOf: string;
      sample: { id: string; endpointId: string; outcome: string; code: string | null; receivedAt: string }[];
    };
  };
  confirmation: { token: string; expiresAt: string } | null;
  result: { summary: string; resourceId: string | null; queued?: number; skipped?: number } | null;
}

const replayButton = (ctx: SeatContext, e: EventSummary): Html =>
  e.replayable
    ? postForm(ctx, `${ctx.base}/recovery`, { action: 'replay-preview', eventId: e.id }, 'Preview a replay')
    : html`<span class="muted">${e.bodyRetention === 'retained' ? 'not replayable' : `body ${e.bodyRetention}`}</span>`;

/** One listEvents read of this page, with its "older" link (each list pages by a cursor of its own). */
async function listPart(
  ctx: SeatContext,
  names: Map<string, EndpointName>,
  query: Record<string, string>,
  cursorName: string,
  label: string,
): Promise<{ html: Html; status: number }> {
  const cursor = ctx.url.searchParams.get(cursorName) ?? undefined;
  const a = await ctx.call({ operationId: 'listEvents', query: { ...query, limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } });
  if (a.status !== 200) return { html: problem(a), status: a.status };
  const { events, nextCursor } = a.body.data as { events: EventSummary[]; nextCursor: string | null };
  const keep = Object.fromEntries([...ctx.url.searchParams].filter(([k]) => !['done', 'intent', 'queued', 'skipped', 'event', cursorName].includes(k)));
  const part = html`${eventsTable(ctx, events, names, (e) => replayButton(ctx, e))}
<nav class="pages" aria-label="${label}">${cursor ? html`<a href="${`${ctx.base}/recovery${queryOf(keep)}`}">Newest</a> ` : ''}${
    nextCursor ? html`<a href="${`${ctx.base}/recovery${queryOf({ ...keep, [cursorName]: nextCursor })}`}" rel="next">Older</a>` : ''
  }</nav>`;
  return { html: part, status: 200 };
}

function bulkForm(ctx: SeatContext, names: Map<string, EndpointName>, f: Record<string, string | undefined> = {}): Html {
  const sel = (v: string, current: string | undefined) => (v === current ? html` selected` : '');
  return postForm(
    ctx,
    `${ctx.base}/recovery`,
    { action: 'bulk-preview' },
    'Preview the bulk replay',
    html`<p><label>Outcome <select name="outcome">${BULK_OUTCOMES.map((o) => html`<option value="${o}"${sel(o, f.outcome ?? 'failed')}>${o}</option>`)}</select></label>
<label>Endpoint <select name="endpointId"><option value="">any</option>${[...names.values()].map(
      (e) => html`<option value="${e.id}"${sel(e.id, f.endpointId)}>${e.name} (${e.id})</option>`,
    )}</select></label>
<label>Code <input name="code" value="${f.code ?? ''}" maxlength="100" placeholder="SVC_HANDOFF_RETRY_EXHAUSTED"></label></p>
<p><label>Received from <input type="datetime-local" name="since" value="${localOf(f.since)}"></label>
<label>until <input type="datetime-local" name="until" value="${localOf(f.until)}"></label> <span class="muted">(UTC)</span></p>
<p><label>Reason (for the audit trail) <input name="reason" value="${f.reason ?? ''}" maxlength="500"></label></p>
<p class="muted">Nothing is replayed until you confirm the preview.</p>`,
  );
}

/** What the last execute did, as its redirect carries it (counts only: the page reads the events again below). */
function doneBanner(ctx: SeatContext): Html {
  const q = ctx.url.searchParams;
  const done = q.get('done');
  const n = (name: string) => {
    const v = Number.parseInt(q.get(name) ?? '', 10);
    return Number.isSafeInteger(v) && v >= 0 ? v : null;
  };
  if (done === 'replay') {
    const id = q.get('event') ?? '';
    return html`<div class="done" role="status"><p>Replay confirmed: event <a href="${eventHref(ctx, id)}"><code>${id}</code></a> is queued for another handoff.</p></div>`;
  }
  if (done === 'bulk') {
    const queued = n('queued') ?? 0;
    const skipped = n('skipped') ?? 0;
    return html`<div class="done" role="status"><p>Bulk replay confirmed (intent <code>${q.get('intent') ?? ''}</code>): ${queued} ${queued === 1 ? 'event' : 'events'} queued for another handoff${
      skipped
        ? `; ${skipped} previewed ${skipped === 1 ? 'event was' : 'events were'} left alone (replayed, attempted again or no longer retained since the preview)`
        : ''
    }.</p></div>`;
  }
  return html``;
}

async function overview(ctx: SeatContext, opts: { notice?: Html; status?: number; bulk?: Record<string, string | undefined> } = {}): Promise<PageResult> {
  const names = await endpointNames(ctx);
  const minutesText = ctx.url.searchParams.get('unconfirmedFor')?.trim() || DEFAULT_UNCONFIRMED_MINUTES;
  const [failed, unconfirmed] = await Promise.all([
    listPart(ctx, names, { outcome: 'failed' }, 'failedCursor', 'Pages of failed events'),
    listPart(ctx, names, { unconfirmedFor: minutesText }, 'unconfirmedCursor', 'Pages of unconfirmed events'),
  ]);
  const minutesForm = html`<form method="get" action="${`${ctx.base}/recovery`}"><label>Delivered more than <input type="number" name="unconfirmedFor" min="1" max="43200" value="${minutesText}"> minutes ago</label> <button type="submit">Show</button></form>`;
  // A list the contract refused (a malformed cursor or minutes in the link) says so, and so does the page's status.
  const refusedList = [failed, unconfirmed].find((p) => p.status !== 200);
  return {
    title: 'Recovery',
    status: opts.status ?? refusedList?.status,
    html: html`${opts.notice ?? doneBanner(ctx)}
${section(ctx, 'Failed events', html`<p class="muted">Handoff stopped for these. Fix the cause (see each event), then replay one, or many at once below.</p>${failed.html}`)}
${section(
  ctx,
  'Delivered, never confirmed',
  html`<p class="muted">Handed to Flow, but no workflow run confirmed them (the Flow action Confirm hookrelay event): workflows that did not finish.</p>${minutesForm}${unconfirmed.html}`,
)}
${section(ctx, 'Bulk replay', html`<p>Replay every retained event a filter selects, as one replay execution.</p>${bulkForm(ctx, names, opts.bulk)}`)}`.markup,
  };
}

const meterList = (cost: Intent['preview']['meterCost']) => html`<ul>${cost.map((m) => html`<li>${m.units} × ${m.meter.replaceAll('_', ' ')}</li>`)}</ul>`;
const list = (items: string[]) => html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`;

/** The preview the merchant confirms, and the form that executes exactly it (once, whatever the submits). */
function confirmPage(ctx: SeatContext, intent: Intent, names: Map<string, EndpointName>, eventId?: string): PageResult {
  const p = intent.preview;
  const s = p.selection;
  const bulk = intent.kind === 'bulk_replay';
  const selection = s
    ? html`<table class="facts"><tbody>
<tr><th scope="row">Events to replay</th><td><strong>${s.count}</strong></td></tr>
<tr><th scope="row">Left out (body no longer retained)</th><td>${s.excluded.bodyNotRetained}</td></tr>
<tr><th scope="row">Received</th><td>${when(s.window.oldestReceivedAt)} to ${when(s.window.newestReceivedAt)}</td></tr>
<tr><th scope="row">Filter</th><td>outcome ${s.filter.outcome}${s.filter.endpointId ? html`, endpoint ${endpointLabel(s.filter.endpointId, names)}` : ''}${s.filter.code ? html`, code <code>${s.filter.code}</code>` : ''}</td></tr>
<tr><th scope="row">Newest event included</th><td><code>${s.throughEventId}</code> (nothing received after the preview is replayed)</td></tr>
</tbody></table>
<h3>Sample (the oldest ${s.sample.length})</h3>
<table><thead><tr><th scope="col">Event</th><th scope="col">Endpoint</th><th scope="col">Outcome</th><th scope="col">Code</th><th scope="col">Received</th></tr></thead>
<tbody>${s.sample.map(
        (e) =>
          html`<tr><td><a href="${eventHref(ctx, e.id)}"><code>${e.id}</code></a></td><td>${endpointLabel(e.endpointId, names)}</td><td>${e.outcome}</td><td>${e.code ?? ''}</td><td>${when(e.receivedAt)}</td></tr>`,
      )}</tbody></table>`
    : eventId
      ? html`<p>Event <a href="${eventHref(ctx, eventId)}"><code>${eventId}</code></a>.</p>`
      : '';
  const form = intent.confirmation
    ? html`<p class="muted">This confirmation works once, until ${when(intent.confirmation.expiresAt)}.</p>${postForm(
        ctx,
        `${ctx.base}/recovery`,
        {
          action: bulk ? 'bulk-execute' : 'replay-execute',
          ...(eventId ? { eventId } : {}),
          intentId: intent.id,
          confirmationToken: intent.confirmation.token,
          // One key per preview shown: the same form submitted twice is one execute (the second gets its answer).
          idempotencyKey: newFormKey(),
        },
        bulk ? `Replay ${s?.count ?? ''} events` : 'Replay this event',
      )}<p><a href="${`${ctx.base}/recovery`}">Cancel</a> (nothing is replayed)</p>`
    : html`<p>This preview cannot be confirmed.</p>`;
  return {
    title: bulk ? 'Confirm the bulk replay' : 'Confirm the replay',
    html: html`${section(
      ctx,
      'What this replay does',
      html`<p><strong>${p.summary}</strong></p>${selection}
<h3>Cost</h3>${meterList(p.meterCost)}
<h3>Side effects</h3>${list(p.sideEffects)}
${p.warnings.length ? html`<h3>Warnings</h3>${list(p.warnings)}` : ''}`,
    )}${section(ctx, 'Confirm', form)}`.markup,
  };
}

async function previewReplay(ctx: SeatContext): Promise<PageResult> {
  const eventId = field(ctx, 'eventId') ?? '';
  const reason = field(ctx, 'reason');
  const a = await ctx.call({
    operationId: 'createReplayIntent',
    params: { eventId },
    body: { mode: 'preview', input: reason === undefined ? {} : { reason } },
  });
  if (a.status !== 201) return overview(ctx, { notice: refused('The replay was not previewed', a), status: a.status });
  return confirmPage(ctx, (a.body.data as { intent: Intent }).intent, await endpointNames(ctx), eventId);
}

async function previewBulk(ctx: SeatContext): Promise<PageResult> {
  const f = {
    outcome: field(ctx, 'outcome') ?? 'failed',
    endpointId: field(ctx, 'endpointId'),
    code: field(ctx, 'code'),
    since: instantOf(field(ctx, 'since') ?? null),
    until: instantOf(field(ctx, 'until') ?? null),
  };
  const reason = field(ctx, 'reason');
  const filter = Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
  const a = await ctx.call({
    operationId: 'createBulkReplayIntent',
    body: { mode: 'preview', input: { filter, ...(reason === undefined ? {} : { reason }) } },
  });
  if (a.status !== 201) {
    const notice = html`${refused('The bulk replay was not previewed', a)}${splitForm(ctx, a, { ...f, reason })}`;
    return overview(ctx, { notice, status: a.status, bulk: { ...f, reason } });
  }
  return confirmPage(ctx, (a.body.data as { intent: Intent }).intent, await endpointNames(ctx));
}

/**
 * A filter that matched more than one bulk replay takes: the same filter up to the time the contract suggests (its
 * oldest share), as one button; the rest is a second replay afterwards.
 */
function splitForm(ctx: SeatContext, a: SeatAnswer, f: Record<string, string | undefined>): Html {
  const refusal = a.body.refusal as { code?: string } | null | undefined;
  const details = (a.body.error as { details?: { suggestedUntil?: unknown; max?: unknown } } | undefined)?.details;
  if (refusal?.code !== 'bulk_replay_too_many' || typeof details?.suggestedUntil !== 'string') return html``;
  const until = details.suggestedUntil;
  const keep = Object.entries({ ...f, until }).filter(([, v]) => v !== undefined) as [string, string][];
  return postForm(
    ctx,
    `${ctx.base}/recovery`,
    { action: 'bulk-preview', ...Object.fromEntries(keep) },
    `Preview the oldest ${typeof details.max === 'number' ? details.max : ''} (received before ${until})`,
  );
}

async function execute(ctx: SeatContext, bulk: boolean): Promise<PageResult> {
  const eventId = field(ctx, 'eventId') ?? '';
  const a = await ctx.call({
    operationId: bulk ? 'createBulkReplayIntent' : 'createReplayIntent',
    params: bulk ? undefined : { eventId },
    body: { mode: 'execute', intentId: field(ctx, 'intentId') ?? '', confirmationToken: field(ctx, 'confirmationToken') ?? '' },
    idempotencyKey: field(ctx, 'idempotencyKey'),
  });
  if (a.status !== 200) return overview(ctx, { notice: refused('The replay was not made', a), status: a.status });
  const intent = (a.body.data as { intent: Intent }).intent;
  const done = bulk
    ? { done: 'bulk', intent: intent.id, queued: String(intent.result?.queued ?? 0), skipped: String(intent.result?.skipped ?? 0) }
    : { done: 'replay', intent: intent.id, event: eventId };
  return { redirect: `${ctx.base}/recovery${queryOf(done)}` };
}

const refused = (what: string, a: SeatAnswer) => html`<div class="refused"><h2>${what}</h2>${problem(a)}</div>`;

export const page: SeatPage = {
  path: '/recovery',
  title: 'Recovery',
  get: (ctx) => overview(ctx),
  async post(ctx) {
    switch (field(ctx, 'action')) {
      case 'replay-preview':
        return previewReplay(ctx);
      case 'bulk-preview':
        return previewBulk(ctx);
      case 'replay-execute':
        return execute(ctx, false);
      case 'bulk-execute':
        return execute(ctx, true);
      default:
        return overview(ctx, { notice: html`<div class="problem" role="alert"><p>Unknown action.</p></div>`, status: 400 });
    }
  },
};
