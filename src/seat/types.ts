/**
 * The merchant's seat (issue 37): one set of server-rendered pages for two faces — App Home, embedded in the Shopify
 * admin under /app (the human is the staff user of an ID token), and the self-hosted console under /console (the
 * human holds a session from a `hookrelay console` sign-in link). A page acts only through `SeatContext.call`, which
 * is the contract's `invoke` with the human as principal (actorKind `human`): same scopes, idempotency, metering and
 * audit as an agent, no second authority. These are the shapes the session front (src/seat/session.ts, router.ts),
 * the pages (src/seat/pages/*.ts) and the browser suite agree on.
 */
import type { StoreRow } from '../../db/types.ts';
import type { Core } from '../core.ts';

/** Which face a request came through. */
export type Face = 'embedded' | 'console';

/** The person acting: a Shopify staff user (embedded: `sub` of the ID token) or the holder of a console session. */
export interface Human {
  face: Face;
  store: StoreRow;
  /** The audit actor's label: `shopify-staff:<sub>` embedded, the console link's `--actor` (default user@host). */
  actor: string;
  /** The session id (console) or the ID token's `sid` (embedded), for sign-out and audit joins. */
  sessionId: string;
}

/** A contract operation called from a page, as `invoke` answers it (the envelope and status, never thrown). */
export interface SeatAnswer {
  status: number;
  /** The contract's envelope: `data` on success, `error` and `refusal` otherwise. */
  body: Record<string, unknown>;
  /** A stored answer given again for its Idempotency-Key (a double submit): a secret it held reads as redacted. */
  replayed?: boolean;
}

/** What a page's call names: the operation and its raw input (validated by the pipeline, once). */
export interface SeatCall {
  operationId: string;
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  /** Writes send one (a form carries it so a double submit is one change). */
  idempotencyKey?: string;
}

export interface SeatContext {
  core: Core;
  human: Human;
  /** The request's URL and its form fields (POST, already checked for CSRF by the router). */
  url: URL;
  form: URLSearchParams | null;
  /** Calls one contract operation as the human. */
  call(c: SeatCall): Promise<SeatAnswer>;
  /** The base path of this face (`/app` or `/console`): links are `${base}/events` and so on. */
  base: string;
  /** The CSRF token a console form must carry (hidden field `csrf`); embedded pages use the ID token instead. */
  csrf: string | null;
  /** The CSP nonce of this answer, for the page's one inline script, if any. */
  nonce: string;
  /** The public URL serve advertises, for real links (never a `{public URL}` placeholder). */
  publicUrl: string;
  /** Whether the Shopify CDN parts (App Bridge, Polaris web components) are put in the head (embedded only). */
  embedded: boolean;
}

/** What a page answers: HTML for the layout's main area, or a redirect after a write (POST → 303 → GET). */
export type PageResult = { html: string; title: string; status?: number } | { redirect: string };

/** One page of the seat: its path under the base (`''` is Home), its nav title, GET and an optional POST. */
export interface SeatPage {
  path: string;
  title: string;
  get(ctx: SeatContext): Promise<PageResult>;
  post?(ctx: SeatContext): Promise<PageResult>;
}
