/** Pages and links for people (the install's landing page, the app page, the docs page): escaped HTML, absolute URLs. */

/** Text made safe for HTML content and attribute values. */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A small HTML page: a title and paragraphs (already HTML: escape what they quote). Never cached. */
export function htmlPage(status: number, title: string, paragraphs: string[], headers: Record<string, string> = {}): Response {
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1>${paragraphs.map((p) => `<p>${p}</p>`).join('')}</body></html>`;
  return new Response(body, { status, headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', ...headers } });
}

/** `path` under the public URL (whatever trailing slashes it was given with). */
export const publicLink = (publicUrl: string, path: string) => `${publicUrl.replace(/\/+$/, '')}${path}`;

/** A redirect people follow (never cached). */
export const redirectTo = (location: string) => new Response(null, { status: 302, headers: { Location: location, 'Cache-Control': 'no-store' } });
