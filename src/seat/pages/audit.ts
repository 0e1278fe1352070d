/**
 * Audit: who did what in this store, humans and agents, through the contract's audit read (listAuditEntries):
 * filterable by actor kind, operation, grant and time, newest first, a page at a time. The Agents page shows a
 * grant's history with the same table.
 */
import { ACTOR_KINDS } from '../../contract/schemas/audit.ts';
import { problem, html, section, table, when, type Html } from '../html.ts';
import type { PageResult, SeatContext, SeatPage } from '../types.ts';

type Entry = {
  id: string;
  at: string;
  actorKind: string;
  actorLabel: string;
  grantId: string | null;
  operationId: string;
  targetId: string | null;
  transition: string | null;
  outcome: string;
  status: number;
  errorCode: string | null;
  refusalCode: string | null;
  surface: string | null;
};

/** The filters a request names, as the contract's query takes them (each passed through for it to validate). */
const FILTERS = ['actorKind', 'operationId', 'grantId', 'since', 'until'] as const;

/** A `datetime-local` value (no zone, read as UTC) as RFC 3339; anything else goes to the contract as it is. */
const asInstant = (v: string) => (/^\d{4}-\d\d-\d\dT\d\d:\d\d$/.test(v) ? `${v}:00Z` : v);

/** One page of audit rows as a table, with the link to the next page (`more`: the query that page needs). */
export async function auditSection(
  ctx: SeatContext,
  filters: Partial<Record<(typeof FILTERS)[number] | 'cursor', string>>,
  pageLink: (query: URLSearchParams) => string,
): Promise<{ body: Html; status: number }> {
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries(filters)) if (v) query[k] = k === 'since' || k === 'until' ? asInstant(v) : v;
  const a = await ctx.call({ operationId: 'listAuditEntries', query });
  if (a.status !== 200) return { body: problem(a), status: a.status };
  const { entries, nextCursor } = a.body.data as { entries: Entry[]; nextCursor: string | null };
  const next = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v && k !== 'cursor') next.set(k, v);
  if (nextCursor) next.set('cursor', nextCursor);
  const rows = entries.map((e) => [
    when(e.at),
    html`${e.actorKind}: ${e.actorLabel}`,
    e.grantId ? html`<code>${e.grantId}</code>` : '—',
    e.operationId,
    e.targetId ? html`<code>${e.targetId}</code>` : '—',
    [e.outcome, String(e.status), e.refusalCode ?? e.errorCode ?? '', e.transition ?? ''].filter(Boolean).join(' · '),
    e.surface ?? '—',
  ]);
  return {
    body: html`${table('Audit rows, newest first', ['Time', 'Who', 'Grant', 'Operation', 'Target', 'Outcome', 'Via'], rows)}${
      nextCursor ? html`<p><a href="${pageLink(next)}" rel="next">Older rows</a></p>` : ''
    }`,
    status: 200,
  };
}

export const page: SeatPage = {
  path: '/audit',
  title: 'Audit',
  async get(ctx): Promise<PageResult> {
    const p = ctx.url.searchParams;
    const filters = Object.fromEntries([...FILTERS, 'cursor'].map((k) => [k, p.get(k)?.trim() ?? ''])) as Record<(typeof FILTERS)[number] | 'cursor', string>;
    const self = `${ctx.base}/audit`;
    const { body, status } = await auditSection(ctx, filters, (q) => `${self}?${q}`);
    const input = (name: (typeof FILTERS)[number], label: string, attrs: Html = html``) =>
      html`<p><label for="a-${name}">${label}</label><br><input id="a-${name}" name="${name}" value="${filters[name]}"${attrs}></p>`;
    const form = html`<form method="get" action="${self}"><p><label for="a-actorKind">Who</label><br><select id="a-actorKind" name="actorKind"><option value="">everyone</option>${ACTOR_KINDS.map(
      (k) => html`<option value="${k}"${k === filters.actorKind ? html` selected` : ''}>${k}</option>`,
    )}</select></p>${input('operationId', 'Operation (e.g. createEndpoint, issueGrant)')}${input('grantId', 'Grant (gr_…)')}${input(
      'since',
      'From (UTC)',
      html` type="datetime-local"`,
    )}${input('until', 'Before (UTC)', html` type="datetime-local"`)}<button type="submit">Filter</button> <a href="${self}">Clear</a></form>`;
    return {
      title: 'Audit',
      status,
      html: html`<p>Every call, confirmation and grant change in this store, by people and by agents. Never inputs or secrets.</p>${section(
        ctx,
        'Filter',
        form,
      )}${body}`.markup,
    };
  },
};
