/** The human docs page: discovery pointers and the operation table, generated from the contract. */
import { OPERATIONS } from '../contract/operations.ts';
import { escapeHtml as esc, htmlResponse, publicLink } from '../lib/web.ts';

/** The page's one inline style, allowed by its hash (htmlHeaders). */
const STYLE =
  'body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.3rem .6rem;text-align:left}';

/** GET /docs (and /): the page, with the security headers every HTML answer carries. */
export function docsResponse(publicUrl: string): Response {
  return htmlResponse(docsPage(publicUrl), 200, { styles: [STYLE] });
}

function docsPage(publicUrl: string): string {
  const base = esc(publicLink(publicUrl, ''));
  const rows = OPERATIONS.map(
    (o) =>
      `<tr><td><code>${o.method}</code></td><td><code>${esc(o.path)}</code></td><td>${o.operationId}</td><td>${o.scopes.join(', ') || '—'}</td><td>${o.effect}</td><td>${o.confirmation ? 'required' : 'no'}</td></tr>`,
  ).join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>hookrelay — Agent Operations API</title>
<style>${STYLE}</style></head>
<body><h1>hookrelay — Agent Operations API</h1>
<p>Machine-readable: <a href="${base}/agent/v1/manifest">manifest</a> (read first) · <a href="${base}/agent/v1/openapi.json">OpenAPI 3.1</a> · MCP at <code>${base}/agent/v1/mcp</code> · <a href="${base}/status">status</a>.</p>
<p>Every operation except the manifest needs <code>Authorization: Bearer &lt;grant token&gt;</code>. <code>delivered</code> means handed to Shopify Flow, not that downstream work completed.</p>
<table><thead><tr><th>Method</th><th>Path</th><th>operationId</th><th>Scopes</th><th>Effect</th><th>Confirmation</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`;
}
