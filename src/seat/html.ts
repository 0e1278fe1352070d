/**
 * The seat's one tagged template: every interpolated value is escaped (src/lib/web.ts escapeHtml) unless it is markup
 * this template made (`Html`) or was explicitly marked safe; and the small parts every page's forms and tables share.
 */
import { randomUUID } from 'node:crypto';
import { escapeHtml } from '../lib/web.ts';
import type { SeatAnswer, SeatContext } from './types.ts';

/** Markup already safe: made by `html`, or marked with `trusted` (a constant of the page, never data). */
export class Html {
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup;
  }
}

type Part = string | number | boolean | null | undefined | Html | readonly Part[];

const render = (v: Part): string =>
  v == null || v === false ? '' : v instanceof Html ? v.markup : Array.isArray(v) ? v.map(render).join('') : escapeHtml(String(v));

/** HTML with every value escaped; arrays are joined, null, undefined and false are nothing. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** A constant string of markup (never data from a request, an agent or a sender). */
export const trusted = (markup: string) => new Html(markup);

/** The hidden CSRF field of a POST form (console), or nothing (embedded: the ID token carries the proof). */
const csrfField = (ctx: SeatContext) => (ctx.csrf === null ? html`` : html`<input type="hidden" name="csrf" value="${ctx.csrf}">`);

/** A fresh Idempotency-Key for a form: a double submit of the form sends the same key, so it is one change. */
export const newFormKey = () => `seat-${randomUUID()}`;

/** A POST form to `action` with its hidden fields (the CSRF field first) and one submit button (or the buttons given). */
export function postForm(ctx: SeatContext, action: string, hidden: Record<string, string>, button: string | Html, body: Html = html``): Html {
  return html`<form method="post" action="${action}">${csrfField(ctx)}${Object.entries(hidden).map(
    ([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`,
  )}${body}${button instanceof Html ? button : html`<button type="submit">${button}</button>`}</form>`;
}

/**
 * A section of a page: embedded, inside Polaris's `<s-section>` (readable as plain content without its script), with
 * no heading of the wrapper's own: the section's h2 is its one heading, with or without the CDN.
 */
export function section(ctx: SeatContext, heading: string, body: Html): Html {
  const plain = html`<section><h2>${heading}</h2>${body}</section>`;
  return ctx.embedded ? html`<s-section>${plain}</s-section>` : plain;
}

/** A table with a caption and a header row: readable without CSS. */
export function table(caption: string, head: readonly string[], rows: readonly (readonly Part[])[]): Html {
  if (!rows.length) return html`<p>${caption}: none.</p>`;
  return html`<table><caption>${caption}</caption><thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead><tbody>${rows.map(
    (r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`,
  )}</tbody></table>`;
}

/** A form field's value, trimmed; undefined when absent or empty. */
export function field(ctx: SeatContext, name: string): string | undefined {
  const v = ctx.form?.get(name)?.trim();
  return v ? v : undefined;
}

/** A query string of the non-empty values, for links that keep a page's filters. */
export function queryOf(values: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** A refusal or error answer of the contract, said plainly: what happened and the recommended action. */
export function problem(answer: SeatAnswer): Html {
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
/**
 * A secret or token shown this once: a read-only input, and a copy button whose tiny script runs with the page's
 * nonce (without the script the button does nothing and the person selects the input's text by hand).
 */
export function shownOnce(ctx: SeatContext, id: string, label: string, value: string): Html {
  return html`<p><label for="${id}">${label}</label><br><input id="${id}" type="text" readonly size="60" autocomplete="off" spellcheck="false" value="${value}">
<button type="button" id="${id}-copy">Copy</button></p>
<script nonce="${ctx.nonce}">(function(){var i=document.getElementById(${trusted(JSON.stringify(id))});var b=document.getElementById(${trusted(
    JSON.stringify(`${id}-copy`),
  )});i.addEventListener('focus',function(){i.select()});b.addEventListener('click',function(){i.select();if(navigator.clipboard){navigator.clipboard.writeText(i.value).then(function(){b.textContent='Copied'})}else{document.execCommand('copy');b.textContent='Copied'}})})();</script>`;
}
