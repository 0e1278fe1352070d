/**
 * Home: where the merchant lands (the app in the admin, the console). The store's setup state — readiness per
 * trigger, the checklist and the next recommended action as a link with real values — open alerts, a paused
 * handoff and why, the ready workflows the app ships (FLOW_TEMPLATES), and plan usage with each cap and what
 * happens at it. All from the contract's reads through
 * ctx.call (getSetupState, getTenantReliabilityHealth, getPlanUsage), every value escaped.
 */
import type { z } from 'zod';
import type { AlertSchema } from '../../contract/schemas/alerts.ts';
import type { PlanUsageStateSchema, SetupStateSchema } from '../../contract/schemas/setup.ts';
import type { ReliabilityHealthSchema } from '../../contract/schemas/reliability.ts';
import { FLOW_TEMPLATES } from '../../contract/templates.ts';
import { TRIGGERS } from '../../contract/triggers.ts';
import { escapeHtml as esc } from '../../lib/web.ts';
import type { SeatAnswer, SeatContext, SeatPage } from '../types.ts';

type SetupState = z.output<typeof SetupStateSchema>;
type PlanUsage = z.output<typeof PlanUsageStateSchema>;
type Reliability = z.output<typeof ReliabilityHealthSchema>;
type Alert = z.output<typeof AlertSchema>;
type Action = SetupState['nextRecommendedActions'][number];

const data = <T>(a: SeatAnswer): T | null => (a.status === 200 ? (a.body.data as T) : null);
const failure = (what: string, a: SeatAnswer) => {
  const err = a.body.error as { message?: string; code?: string } | undefined;
  return `<p class="notice bad" role="alert">${esc(what)} could not be read: ${esc(err?.message ?? `HTTP ${a.status}`)}</p>`;
};
const section = (ctx: SeatContext, heading: string, body: string) =>
  ctx.embedded
    ? `<s-section><section aria-label="${esc(heading)}"><h2>${esc(heading)}</h2>${body}</section></s-section>`
    : `<section aria-label="${esc(heading)}"><h2>${esc(heading)}</h2>${body}</section>`;
const when = (iso: string | null) => (iso ? `<time datetime="${esc(iso)}">${esc(iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC'))}</time>` : '');

/** The store's page in the Shopify admin for Flow, where the merchant turns a workflow on. */
const flowUrl = (shop: string) => `https://admin.shopify.com/store/${encodeURIComponent(shop.replace(/\.myshopify\.com$/, ''))}/apps/flow`;

/** Where a recommended action is done: a page of the seat, or Shopify Flow; null when there is nothing to open. */
function actionLink(ctx: SeatContext, a: Action): { href: string; label: string } | null {
  const ep = a.endpointId ? `/${encodeURIComponent(a.endpointId)}` : '';
  switch (a.action) {
    case 'create_endpoint':
    case 'create_replacement_endpoint':
      return { href: `${ctx.base}/endpoints`, label: 'Create an endpoint' };
    case 'prepare_endpoint_test':
      return { href: `${ctx.base}/endpoints${ep}`, label: 'Send a test event' };
    case 'enable_workflow':
      return { href: flowUrl(ctx.human.store.shopDomain), label: 'Open Shopify Flow' };
    default:
      if (a.operationId?.startsWith('createEndpoint') || a.operationId === 'createSecretRotationIntent')
        return { href: `${ctx.base}/endpoints${ep}`, label: 'Open the endpoint' };
      if (a.operationId?.includes('Replay')) return { href: `${ctx.base}/recovery`, label: 'Open Recovery' };
      return null;
  }
}

function nextAction(ctx: SeatContext, s: SetupState): string {
  const [first, ...rest] = s.nextRecommendedActions;
  if (!first) return '<p class="good">Setup is complete: nothing to do now.</p>';
  const link = actionLink(ctx, first);
  const button = link
    ? `<p><a class="button primary" href="${esc(link.href)}"${link.href.startsWith('https://') ? ' target="_top"' : ''}>${esc(link.label)}</a></p>`
    : '';
  const more = rest.length ? `<details><summary>${rest.length} more</summary><ul>${rest.map((a) => `<li>${esc(a.text)}</li>`).join('')}</ul></details>` : '';
  return `<p><strong>Next:</strong> ${esc(first.text)}</p>${button}${more}`;
}

function checklist(s: SetupState): string {
  const items = s.checklist
    .map(
      (c) =>
        `<li><span class="${c.done ? 'good' : 'warn'}" aria-hidden="true">${c.done ? '✓' : '○'}</span> <span class="visually-hidden">${c.done ? 'Done: ' : 'To do: '}</span>${esc(c.text)}</li>`,
    )
    .join('');
  const done = s.checklist.filter((c) => c.done).length;
  return `<p class="muted">${done} of ${s.checklist.length} done.</p><ul class="checklist">${items}</ul>`;
}

function readiness(s: SetupState): string {
  const used = new Set(s.endpoints.filter((e) => e.status === 'active').map((e) => e.triggerVariant));
  const rows = s.triggerReadiness
    .map((t) => {
      const name = (TRIGGERS as Record<string, { name: string } | undefined>)[t.triggerVariant]?.name ?? t.handle;
      const flow =
        t.hasEnabledFlow === null
          ? '<span class="muted">not reported yet</span>'
          : t.hasEnabledFlow
            ? '<span class="good">enabled</span>'
            : '<span class="warn">no enabled workflow</span>';
      const endpoints = s.endpoints.filter((e) => e.triggerVariant === t.triggerVariant && e.status === 'active').length;
      return `<tr><td>${esc(name)}<br><code>${esc(t.handle)}</code></td><td>${endpoints}${used.has(t.triggerVariant) ? '' : ' <span class="muted">(none)</span>'}</td><td>${flow}</td><td>${when(t.updatedAt) || '<span class="muted">—</span>'}</td></tr>`;
    })
    .join('');
  return `<table><caption class="muted">Each trigger starts the merchant's Flow workflows; an endpoint hands its events to one.</caption><thead><tr><th scope="col">Trigger</th><th scope="col">Active endpoints</th><th scope="col">Flow workflow</th><th scope="col">Reported</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** The workflow templates the app ships, each with what it does, and where to find them in Flow. */
function templates(ctx: SeatContext): string {
  const items = FLOW_TEMPLATES.map((t) => `<li><strong>${esc(t.name)}</strong><br><span class="muted">${esc(t.description)}</span></li>`).join('');
  return `<ul>${items}</ul><p><a class="button" href="${esc(flowUrl(ctx.human.store.shopDomain))}" target="_top">Open Shopify Flow</a> <span class="muted">then Templates, and search hookrelay.</span></p>`;
}

function handoff(s: SetupState): string {
  const h = s.handoff;
  if (h.state === 'active') return '';
  return `<div class="notice bad" role="status"><p><strong>Handoff is paused</strong> since ${when(h.since)} (${esc(h.reason ?? 'unknown')}, <code>${esc(h.code ?? '')}</code>). Events wait queued; none is lost or failed.</p>
<p>${esc(h.message ?? '')}</p>${h.recommendedAction ? `<p><strong>What to do:</strong> ${esc(h.recommendedAction)}</p>` : ''}${h.nextProbeAt ? `<p class="muted">hookrelay asks again at ${when(h.nextProbeAt)} (${h.probes} probes so far).</p>` : ''}</div>`;
}

function alerts(list: readonly Alert[]): string {
  if (!list.length) return '<p class="good">No open alerts.</p>';
  return `<ul>${list
    .map(
      (a) =>
        `<li><span class="badge warn">${esc(a.kind.replace(/_/g, ' '))}</span> ${esc(a.summary)}${a.endpoint ? ` — endpoint ${esc(a.endpoint.name)} (<code>${esc(a.endpoint.id)}</code>)` : ''}<br><span class="muted">Since ${when(a.since)}.</span> ${esc(a.recommendedAction)}</li>`,
    )
    .join('')}</ul>`;
}

const METER_NAMES: Record<string, string> = {
  accepted_events: 'Accepted events',
  diagnostics_shares: 'Diagnostics shares',
  replay_executions: 'Replays',
  executed_actions: 'Executed changes',
  action_previews: 'Previews',
  simple_reads: 'Simple reads',
  rich_reads: 'Rich reads',
};

/** What happens when a meter reaches its cap, in the merchant's words. */
function atCap(meter: string, resetAt: string): string {
  if (meter === 'accepted_events')
    return `Events past the cap are kept and held (not handed to Flow) until the period resets on ${resetAt.slice(0, 10)} or the plan grows; none is dropped.`;
  return `Further ones are refused until the period resets on ${resetAt.slice(0, 10)} or the plan grows.`;
}

function usage(ctx: SeatContext, u: PlanUsage): string {
  const rows = u.meters
    .filter((m) => m.limit !== null || m.used > 0 || m.meter === 'accepted_events')
    .map((m) => {
      const pct = m.limit ? Math.min(100, Math.round((m.used / m.limit) * 100)) : 0;
      const bar = m.limit
        ? `<br><progress max="${m.limit}" value="${Math.min(m.used, m.limit)}" aria-label="${esc(METER_NAMES[m.meter] ?? m.meter)}: ${pct}%">${pct}%</progress>`
        : '';
      const cls = m.enforcement === 'exhausted' ? 'bad' : m.enforcement === 'ok' ? '' : 'warn';
      return `<tr><th scope="row">${esc(METER_NAMES[m.meter] ?? m.meter)}</th><td>${m.used.toLocaleString('en-US')} of ${m.limit === null ? 'unlimited' : m.limit.toLocaleString('en-US')}${bar}</td><td class="${cls}">${esc(m.enforcement)}</td><td>${m.limit === null ? '<span class="muted">No cap on this plan.</span>' : esc(atCap(m.meter, m.resetAt))}</td></tr>`;
    })
    .join('');
  const plan = `<p>Plan <strong>${esc(u.plan)}</strong> (${esc(u.billingStatus)}), period ${when(u.periodStart)} to ${when(u.periodEnd)}. <a href="${esc(`${ctx.base}/plan`)}">Plan and billing</a></p>`;
  const exhausted = u.enforcement === 'exhausted' ? `<p class="notice bad" role="status">${esc(u.retryGuidance)}</p>` : '';
  return `${plan}${exhausted}<table><thead><tr><th scope="col">Meter</th><th scope="col">Used</th><th scope="col">State</th><th scope="col">At the cap</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export const page: SeatPage = {
  path: '',
  title: 'Home',
  async get(ctx) {
    const [setupA, healthA, usageA] = await Promise.all([
      ctx.call({ operationId: 'getSetupState' }),
      ctx.call({ operationId: 'getTenantReliabilityHealth', query: { window: '24h' } }),
      ctx.call({ operationId: 'getPlanUsage' }),
    ]);
    const setup = data<SetupState>(setupA);
    const health = data<Reliability>(healthA);
    const use = data<PlanUsage>(usageA);
    const parts: string[] = [];
    if (setup) {
      parts.push(handoff(setup));
      parts.push(section(ctx, 'Next step', nextAction(ctx, setup)));
    } else parts.push(failure('Setup state', setupA));
    parts.push(section(ctx, 'Open alerts', health ? alerts(health.alerts.open) : failure('Alerts', healthA)));
    if (setup) {
      parts.push(section(ctx, 'Setup checklist', checklist(setup)));
      parts.push(section(ctx, 'Triggers', readiness(setup)));
    }
    parts.push(section(ctx, 'Ready workflows', templates(ctx)));
    parts.push(section(ctx, 'Plan usage', use ? usage(ctx, use) : failure('Plan usage', usageA)));
    return { title: `hookrelay on ${ctx.human.store.shopDomain}`, html: parts.join('') };
  },
};
