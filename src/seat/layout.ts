/**
 * The seat's page frame: the head (the CSP nonce on the one inline style and script; embedded, the app's
 * `shopify-api-key` and Shopify's App Bridge and Polaris scripts), the nav of the pages, and the security headers
 * of every seat answer (src/seat/router.ts sends them). The stylesheet is the project's own, inline under the nonce,
 * so a page is readable and usable with no CDN; Polaris web components (`<s-page>`, `<s-section>`, `<s-button>`)
 * render as their content where Polaris' script is absent.
 */
import { escapeHtml as esc } from '../lib/web.ts';
import type { SeatContext } from './types.ts';

export const APP_BRIDGE_SRC = 'https://cdn.shopify.com/shopifycloud/app-bridge.js';
const POLARIS_SRC = 'https://cdn.shopify.com/shopifycloud/polaris.js';

/** The project's own stylesheet: plain, readable, and enough on its own (no CDN). */
const STYLESHEET = `
:root{color-scheme:light;--fg:#1a1a1a;--muted:#5c5f62;--line:#d9d9d9;--bg:#f6f6f7;--card:#fff;--accent:#005bd3;--bad:#b3261e;--warn:#8a6100;--good:#1a7f37}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
.seat-skip{position:absolute;left:-999px}.seat-skip:focus{left:8px;top:8px;background:#fff;padding:4px 8px;z-index:2}
header.seat-top{background:var(--card);border-bottom:1px solid var(--line);padding:8px 16px;display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}
header.seat-top .seat-brand{font-weight:600;margin-right:8px}
nav.seat-nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:4px 12px;margin:0;padding:0}
nav.seat-nav a{text-decoration:none;padding:4px 2px}
nav.seat-nav a[aria-current=page]{font-weight:600;border-bottom:2px solid var(--accent)}
.seat-who{margin-left:auto;color:var(--muted);font-size:13px;display:flex;gap:8px;align-items:center}
main{max-width:1100px;margin:0 auto;padding:16px}
h1{font-size:22px;margin:8px 0 16px}h2{font-size:17px;margin:0 0 8px}
section,.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:16px;margin:0 0 16px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:13px}
code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f1f1f1;border-radius:4px;padding:1px 4px;overflow-wrap:anywhere}
pre{padding:8px;white-space:pre-wrap}
button,.button{font:inherit;border:1px solid var(--line);background:#fff;border-radius:6px;padding:6px 12px;cursor:pointer;color:var(--fg);text-decoration:none;display:inline-block}
button.primary,.button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{border-color:var(--bad);color:var(--bad)}
input,select,textarea{font:inherit;padding:5px 8px;border:1px solid #8c9196;border-radius:6px;max-width:100%}
label{display:block;margin:8px 0 4px;font-weight:500}input[type=radio]+label,input[type=checkbox]+label{display:inline;margin:0 0 0 4px}
.muted{color:var(--muted)}.bad{color:var(--bad)}.warn{color:var(--warn)}.good{color:var(--good)}
.badge{display:inline-block;font-size:12px;padding:0 8px;border-radius:10px;border:1px solid currentColor}
.notice{border-left:4px solid var(--warn);padding:8px 12px;background:#fff8e6;margin:0 0 16px}
.notice.bad{border-color:var(--bad);background:#fdecea;color:var(--fg)}
progress{width:100%;max-width:240px;height:10px;accent-color:var(--accent)}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
ul.checklist{list-style:none;padding:0;margin:0}ul.checklist li{padding:4px 0}
s-page,s-section{display:block}
dl.consent-facts dt{font-weight:600;margin-top:8px}dl.consent-facts dd{margin:0 0 8px}
.user-code{font:600 32px/1.2 ui-monospace,SFMono-Regular,Menlo,monospace;letter-spacing:.12em;margin:8px 0 16px}
`;

/**
 * The embedded page's script: every link inside the app and every form carries a fresh ID token from App Bridge
 * (`shopify.idToken()`), since a navigation inside the admin's frame sends no Authorization header and no cookie.
 * Without App Bridge (CDN blocked) the first load's token is used while it lasts; a form's URL carries it too, so
 * the links of the page the form answers keep it. A form's `action` and `submit()` are read from the element's
 * attribute and prototype: a field named `action` or `submit` (the pages have them) shadows the properties.
 */
const EMBEDDED_SCRIPT = `(()=>{const q=new URLSearchParams(location.search);let last=q.get('id_token');
const fresh=async()=>{try{if(window.shopify&&shopify.idToken){last=await shopify.idToken()}}catch(e){}return last};
const keep=(u)=>{for(const k of ['embedded','shop','host','locale']){const v=q.get(k);if(v&&!u.searchParams.has(k))u.searchParams.set(k,v)}};
document.addEventListener('click',async(e)=>{const a=e.target.closest&&e.target.closest('a[href]');if(!a||e.defaultPrevented||e.button!==0||e.metaKey||e.ctrlKey)return;
const u=new URL(a.href,location.href);if(u.origin!==location.origin||!u.pathname.startsWith('/app'))return;e.preventDefault();keep(u);const t=await fresh();if(t)u.searchParams.set('id_token',t);location.assign(u.toString())});
document.addEventListener('submit',async(e)=>{const f=e.target;if(!(f instanceof HTMLFormElement)||f.dataset.tokened)return;e.preventDefault();const t=await fresh();
let i=f.querySelector('input[name=id_token]');if(!i){i=document.createElement('input');i.type='hidden';i.name='id_token';f.appendChild(i)}i.value=t||'';
const u=new URL(f.getAttribute('action')||location.href,location.href);keep(u);if(t)u.searchParams.set('id_token',t);f.setAttribute('action',u.toString());f.dataset.tokened='1';if(e.submitter&&e.submitter.name){const s=document.createElement('input');s.type='hidden';s.name=e.submitter.name;s.value=e.submitter.value;f.appendChild(s)}HTMLFormElement.prototype.submit.call(f)});})();`;

/** What the layout needs besides the page's own HTML. */
export interface LayoutInput {
  ctx: SeatContext;
  title: string;
  main: string;
  nav: readonly { path: string; title: string }[];
  /** The app's client id (embedded: the `shopify-api-key` meta). */
  clientId: string | null;
}

/** A seat page: head, nav and main. Every value is escaped here or was by the page. */
export function renderLayout({ ctx, title, main, nav, clientId }: LayoutInput): string {
  const current = ctx.url.pathname.slice(ctx.base.length).replace(/\/+$/, '');
  const links = nav
    .map((p) => {
      const here = p.path === '' ? current === '' : current === p.path || current.startsWith(`${p.path}/`);
      return `<li><a href="${esc(ctx.base + p.path)}"${here ? ' aria-current="page"' : ''}>${esc(p.title)}</a></li>`;
    })
    .join('');
  const nonce = esc(ctx.nonce);
  const shopify =
    ctx.embedded && clientId
      ? `<meta name="shopify-api-key" content="${esc(clientId)}"><script src="${APP_BRIDGE_SRC}"></script><script src="${POLARIS_SRC}" async></script>`
      : '';
  const signOut =
    ctx.human.face === 'console' && ctx.csrf
      ? `<form method="post" action="${esc(`${ctx.base}/sign-out`)}"><input type="hidden" name="csrf" value="${esc(ctx.csrf)}"><button type="submit">Sign out</button></form>`
      : '';
  const script = ctx.embedded ? `<script nonce="${nonce}">${EMBEDDED_SCRIPT}</script>` : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)} · hookrelay</title>${shopify}<style nonce="${nonce}">${STYLESHEET}</style>${script}</head>
<body><a class="seat-skip" href="#main">Skip to content</a><header class="seat-top"><span class="seat-brand">hookrelay</span>
<nav class="seat-nav" aria-label="hookrelay"><ul>${links}</ul></nav><div class="seat-who"><span>${esc(ctx.human.store.shopDomain)} · ${esc(ctx.human.actor)}</span>${signOut}</div></header>
<main id="main"><s-page><h1>${esc(title)}</h1>${main}</s-page></main></body></html>`;
}

/** A page of the seat's own (sign-in, refusals) without nav: same head and stylesheet. */
export function renderBare(opts: { title: string; main: string; nonce: string; head?: string }): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(opts.title)} · hookrelay</title>${opts.head ?? ''}<style nonce="${esc(opts.nonce)}">${STYLESHEET}</style></head>
<body><main id="main"><h1>${esc(opts.title)}</h1>${opts.main}</main></body></html>`;
}

/**
 * The security headers of every seat answer: a CSP with this answer's nonce for its one style and script (and
 * Shopify's CDN when embedded), frame-ancestors the shop's admin and admin.shopify.com when embedded, `'none'` for
 * the console; nosniff; no Referer (a first load's URL carries the ID token); never cached. `formTo`: where a form's
 * answer may redirect besides this origin (the OAuth consent's form ends at the client's redirect_uri).
 */
export function seatHeaders(opts: { nonce: string; embeddedShop: string | null; embedded: boolean; formTo?: string }): Record<string, string> {
  const n = `'nonce-${opts.nonce}'`;
  const cdn = opts.embedded ? ' https://cdn.shopify.com' : '';
  const ancestors = opts.embedded ? (opts.embeddedShop ? `https://${opts.embeddedShop} https://admin.shopify.com` : 'https://admin.shopify.com') : "'none'";
  const csp = [
    "default-src 'none'",
    `script-src ${n}${cdn}`,
    `style-src ${n}${cdn}`,
    `img-src 'self' data:${cdn}`,
    `font-src 'self'${cdn}`,
    `connect-src 'self'${cdn}`,
    `form-action 'self'${formSource(opts.formTo)}`,
    "base-uri 'none'",
    `frame-ancestors ${ancestors}`,
  ].join('; ');
  return {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
    ...(opts.embedded ? {} : { 'X-Frame-Options': 'DENY' }),
  };
}

/** A CSP source for a URL a form's redirect may reach: its origin (http, https) or its scheme (an app's own); none else. */
function formSource(to: string | undefined): string {
  if (!to || !URL.canParse(to)) return '';
  const u = new URL(to);
  if (u.protocol === 'http:' || u.protocol === 'https:') return ` ${u.origin}`;
  return /^[a-z][a-z0-9+.-]*:$/.test(u.protocol) ? ` ${u.protocol}` : '';
}
