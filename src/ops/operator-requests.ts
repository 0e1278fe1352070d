/**
 * What agents ask of the operator of this server: support, feature and expansion requests and diagnostics shares,
 * and what Shopify asks of them on a customer's behalf: customer data requests (customers/data_request, with the
 * date they must be answered by). All kept in the `records` table, as `hookrelay requests` lists and shows them,
 * the operator notification carries them and /metrics counts them (RecordStore's reads across stores).
 */
import type { RecordStore, ShopRecordRow } from '../../db/repo.ts';
import type { RecordRow } from '../../db/types.ts';
import { AppError } from '../contract/errors.ts';
import { iso, isoOrNull } from '../lib/clock.ts';
import { type HeldSecrets, redactDocument, redactText } from '../lib/redact.ts';

/** The kinds an operator reads, by the name the CLI and /metrics give them, and the record kind each is kept as. */
export const REQUEST_KINDS = {
  support: 'support_request',
  feature: 'feature_request',
  expansion: 'expansion_request',
  diagnostics: 'diagnostics_share',
  data_request: 'customer_data_request',
} as const;

/**
 * How long the operator has to give the merchant what a customer data request asks for: Shopify's compliance
 * webhooks require the data to be provided within 30 days of the request.
 */
const DATA_REQUEST_DEADLINE_MS = 30 * 86_400_000;

export type RequestKind = keyof typeof REQUEST_KINDS;
export const REQUEST_KIND_NAMES = Object.keys(REQUEST_KINDS) as RequestKind[];

const KIND_OF_RECORD = Object.fromEntries(Object.entries(REQUEST_KINDS).map(([k, v]) => [v, k])) as Record<string, RequestKind>;

/** `requests list --limit`: default and most. */
export const REQUESTS_LIST_DEFAULT = 100;
export const REQUESTS_LIST_MAX = 1000;

/** The longest one-line summary a listing shows; `requests show` has the whole request. */
const SUMMARY_MAX = 200;

/** The storage these reads take. */
type Sql = RecordStore;

/** A request as the operator sees it: its kind, store, time and what the agent wrote (redacted when stored, and again here). */
export interface OperatorRequest {
  id: string;
  kind: RequestKind;
  shop: string | null;
  createdAt: string;
  /** Diagnostics shares only: until when the package is kept for reading. */
  expiresAt: string | null;
  /** Support requests only: low, normal, high, critical. */
  urgency: string | null;
  /** Customer data requests only: the date the merchant must have the customer's data by (30 days after Shopify's request). */
  dueBy: string | null;
  /** One line: category and summary, capability and problem, expansion kind and summary, or the package's size. */
  summary: string;
}

export interface OperatorRequestDetail extends OperatorRequest {
  /** The stored document: a support request's category, urgency, summary and links; a request's fields; a package. */
  body: unknown;
}

const KIND_LIST = Object.values(REQUEST_KINDS);

/**
 * The newest requests first, at most `limit`: of one store or all, of some kinds or all four, created at or after
 * `since` (ms) when given. Each with a one-line summary; never more than was stored (already redacted text).
 */
export async function listRequests(
  core: { repo: Sql },
  filter: { storeId?: string; kinds?: readonly RequestKind[]; since?: number; limit: number },
  held?: HeldSecrets,
): Promise<OperatorRequest[]> {
  const kinds = (filter.kinds?.length ? filter.kinds : REQUEST_KIND_NAMES).map((k) => REQUEST_KINDS[k]);
  const rows = await core.repo.listRecords({ kinds, storeId: filter.storeId, since: filter.since, limit: filter.limit });
  return rows.map((r) => overview(r, parseBody(r.body, held)));
}

/** One request by id, whichever store filed it, with its whole stored document; not_found (exit 6) for any other id. */
export async function getRequest(core: { repo: Sql }, id: string, held?: HeldSecrets): Promise<OperatorRequestDetail> {
  const row = await core.repo.findRecord(id, KIND_LIST);
  if (!row) throw new AppError('not_found', `No request ${id}: see hookrelay requests list.`);
  return requestDetail(row, row.shopDomain, held);
}

/** The detail of a record just written (the operator notification), or read back. */
export function requestDetail(row: RecordRow, shop: string | null, held?: HeldSecrets): OperatorRequestDetail {
  const body = parseBody(row.body, held);
  return { ...overview({ ...row, shopDomain: shop }, body), body };
}

/** How many requests of each kind a store holds (every kind present, 0 when none): one indexed GROUP BY, for /metrics. */
export async function countRequests(core: { repo: Sql }, storeId: string): Promise<Record<RequestKind, number>> {
  const rows = await core.repo.countRecords(storeId, KIND_LIST);
  const counts = Object.fromEntries(REQUEST_KIND_NAMES.map((k) => [k, 0])) as Record<RequestKind, number>;
  for (const r of rows) counts[KIND_OF_RECORD[r.kind]!] = Number(r.n);
  return counts;
}

/**
 * The stored JSON with every string through the free-text redactor once more: bodies were redacted when stored,
 * and redacting again changes nothing, except for a record kept before the redactor learnt a shape or a value
 * `held` (src/held-secrets.ts) was set.
 */
function parseBody(text: string, held?: HeldSecrets): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    doc = { text };
  }
  const redact = (s: string) => redactText(s, held);
  return redactDocument(doc, { text: redact, secretField: redact }) as Record<string, unknown>;
}

function overview(row: ShopRecordRow, body: Record<string, unknown>): OperatorRequest {
  const kind = KIND_OF_RECORD[row.kind]!;
  return {
    id: row.id,
    kind,
    shop: row.shopDomain,
    createdAt: iso(row.createdAt),
    expiresAt: isoOrNull(row.expiresAt),
    urgency: kind === 'support' ? String(body.urgency ?? '') || null : null,
    dueBy: kind === 'data_request' ? iso(requestedAt(row, body) + DATA_REQUEST_DEADLINE_MS) : null,
    summary: oneLine(summaryOf(kind, body)),
  };
}

function summaryOf(kind: RequestKind, b: Record<string, unknown>): string {
  switch (kind) {
    case 'support':
      return `${b.category ?? 'other'}: ${b.summary ?? ''}`;
    case 'feature':
      return `${b.capability ?? ''}: ${b.problem ?? ''}`;
    case 'expansion':
      return `${b.kind ?? ''}: ${b.summary ?? ''}`;
    case 'diagnostics': {
      const n = (v: unknown) => (Array.isArray(v) ? v.length : 0);
      return `${n(b.events)} events, ${n(b.endpoints)} endpoints, window ${b.window ?? '?'}${b.note ? `: ${b.note}` : ''}`;
    }
    case 'data_request':
      return `customer ${b.customerId ?? '(none named)'}${Array.isArray(b.ordersRequested) && b.ordersRequested.length ? `, orders ${b.ordersRequested.join(', ')}` : ''}: ${b.eventCount ?? 0} events held, ${b.bodiesRetained ?? 0} bodies retained`;
  }
}

/** When Shopify sent a customer data request (the record's requestedAt), else when it was recorded. */
function requestedAt(row: ShopRecordRow, body: Record<string, unknown>): number {
  const at = typeof body.requestedAt === 'string' ? Date.parse(body.requestedAt) : Number.NaN;
  return Number.isFinite(at) ? at : row.createdAt;
}

/** Whitespace folded to single spaces, cut at SUMMARY_MAX characters. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > SUMMARY_MAX ? `${flat.slice(0, SUMMARY_MAX - 1)}…` : flat;
}
