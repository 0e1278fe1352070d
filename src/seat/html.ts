/**
 * The seat's one HTML template: `html` escapes every interpolated value (escapeHtml) unless it is markup this module
 * made (another `html` result, or `raw` for a constant the page author wrote). Lists are joined; null, undefined and
 * false render nothing.
 */
import { escapeHtml } from '../lib/web.ts';
import type { SeatContext } from './types.ts';

/** Markup already safe to put in a page. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type HtmlValue = string | number | boolean | null | undefined | Html | readonly HtmlValue[];

function render(v: HtmlValue): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

/** A tagged template: `html\`<td>${name}</td>\`` with `name` escaped. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Markup the page author wrote as a constant (never a value that came from a request, an agent or a sender). */
export const raw = (text: string) => new Html(text);

/** A query string of the non-empty values, for links that keep a page's filters. */
export function queryOf(values: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/**
 * A part of a page: a plain `<section>` with its heading, or, embedded, Polaris's `<s-section>` around the same
 * heading and content (without the CDN script the element is inert and its content reads as it is).
 */
export function section(ctx: Pick<SeatContext, 'embedded'>, heading: string, body: HtmlValue): Html {
  return ctx.embedded ? html`<s-section><h2>${heading}</h2>${body}</s-section>` : html`<section><h2>${heading}</h2>${body}</section>`;
}

/** The hidden CSRF field a console form carries (none embedded: the ID token authenticates the request). */
export const csrfField = (ctx: Pick<SeatContext, 'csrf'>) => (ctx.csrf === null ? html`` : html`<input type="hidden" name="csrf" value="${ctx.csrf}">`);

/** A POST form to a seat page, with its CSRF field. */
export function postForm(ctx: Pick<SeatContext, 'csrf' | 'base'>, page: string, fields: HtmlValue, opts: { className?: string } = {}): Html {
  return html`<form method="post" action="${`${ctx.base}/${page}`}"${opts.className ? html` class="${opts.className}"` : ''}>${csrfField(ctx)}${fields}</form>`;
}

/** A refusal or error answer of the contract, said plainly: what happened and the recommended action. */
export function problem(answer: { status: number; body: Record<string, unknown> }): Html {
  const error = answer.body.error as { code?: string; message?: string; supportCode?: string; details?: unknown } | undefined;
  const refusal = answer.body.refusal as { code: string; reason: string; recommendedAction: string } | null | undefined;
  const retry = typeof answer.body.retryAfterSeconds === 'number' ? answer.body.retryAfterSeconds : null;
  const fields = Array.isArray(error?.details)
    ? (error.details as { path?: unknown; message?: unknown }[]).flatMap((d) => (typeof d.path === 'string' ? [`${d.path}: ${String(d.message ?? '')}`] : []))
    : [];
  return html`<div class="problem" role="alert">
<p><strong>${refusal?.reason ?? error?.message ?? 'The request was not completed.'}</strong> <span class="code">(${answer.status} ${refusal?.code ?? error?.code ?? ''})</span></p>
${fields.length ? html`<ul>${fields.map((f) => html`<li>${f}</li>`)}</ul>` : ''}
${refusal ? html`<p>What to do: ${refusal.recommendedAction}</p>` : ''}
${retry !== null ? html`<p>Try again in ${retry} s.</p>` : ''}
${error?.supportCode ? html`<p class="muted">Support code: <code>${error.supportCode}</code></p>` : ''}
</div>`;
}

/** A time as the contract gives it (RFC 3339, UTC), in a `<time>` element; an em dash for none. */
export const when = (iso: string | null | undefined) =>
  iso ? html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')}</time>` : html`—`;
