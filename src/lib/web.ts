/** Pages and links for people (the install's landing page, the app page, the docs page): escaped HTML, absolute URLs. */
import { createHash } from 'node:crypto';

/** Text made safe for HTML content and attribute values. */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * Who may show a page in a frame: nobody (`none`), or Shopify's admin (`shopify-admin`: the app's own pages, which
 * Shopify shows inside its admin once the app is embedded; Shopify requires exactly these frame ancestors).
 */
export type Framing = 'none' | 'shopify-admin';

const SHOPIFY_ADMIN_ANCESTORS = 'https://admin.shopify.com https://*.myshopify.com';

/**
 * The security headers of every HTML answer, set here only: a Content-Security-Policy that loads nothing (no
 * script at all; a page's inline styles by their hash only), sends forms nowhere and says who may frame the page;
 * X-Frame-Options DENY where no one may; nosniff; and no Referer (the app's URLs carry the shop and Shopify's HMAC).
 */
function htmlHeaders(opts: { framing?: Framing; styles?: readonly string[] } = {}): Record<string, string> {
  const styles = opts.styles?.length ? opts.styles.map((s) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`).join(' ') : "'none'";
  const framing = opts.framing ?? 'none';
  const csp = [
    "default-src 'none'",
    `style-src ${styles}`,
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${framing === 'shopify-admin' ? SHOPIFY_ADMIN_ANCESTORS : "'none'"}`,
  ].join('; ');
  return {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    ...(framing === 'none' ? { 'X-Frame-Options': 'DENY' } : {}),
  };
}

/** An HTML answer with htmlHeaders; `headers` add to them (a cookie, caching), never replace them. */
export function htmlResponse(
  body: string,
  status: number,
  opts: { framing?: Framing; styles?: readonly string[]; headers?: Record<string, string> } = {},
): Response {
  return new Response(body, { status, headers: { ...opts.headers, ...htmlHeaders(opts) } });
}

/** A small HTML page: a title and paragraphs (already HTML: escape what they quote). Never cached. */
export function htmlPage(status: number, title: string, paragraphs: string[], headers: Record<string, string> = {}, framing: Framing = 'none'): Response {
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1>${paragraphs.map((p) => `<p>${p}</p>`).join('')}</body></html>`;
  return htmlResponse(body, status, { framing, headers: { 'Cache-Control': 'no-store', ...headers } });
}

/** `path` under the public URL (whatever trailing slashes it was given with). */
export const publicLink = (publicUrl: string, path: string) => `${publicUrl.replace(/\/+$/, '')}${path}`;

/** A redirect people follow (never cached). */
export const redirectTo = (location: string) => new Response(null, { status: 302, headers: { Location: location, 'Cache-Control': 'no-store' } });

/** The value of the cookie `name` a request carries, or null. */
export function cookieOf(req: Request, name: string): string | null {
  for (const part of (req.headers.get('cookie') ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return null;
}
