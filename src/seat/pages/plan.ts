/**
 * Plan: the store's meters this period (getPlanUsage), what happens at each cap, and the paid plans a merchant may
 * choose when this box bills through Shopify (getBillingHandoff; each plan behind the app's signed subscription
 * link: the merchant then approves the charge in their Shopify admin, which no agent can do). Nothing to buy on
 * `unlimited`, nor where the operator sets plans (billing off).
 */
import { PLANS } from '../../contract/plans.ts';
import type { BillingMode } from '../../contract/platform.ts';
import { appPlatform } from '../../platform/registry.ts';
import { html, problem, section, when, type Html } from '../html.ts';
import type { PageResult, SeatContext, SeatPage } from '../types.ts';

interface Meter {
  meter: string;
  used: number;
  limit: number | null;
  remaining: number | null;
  resetAt: string;
  enforcement: 'ok' | 'warning' | 'grace' | 'exhausted';
}

interface Usage {
  plan: string;
  billingStatus: string;
  periodStart: string;
  periodEnd: string;
  meters: Meter[];
  enforcement: Meter['enforcement'];
  retryGuidance: string;
}

interface Handoff {
  billing: BillingMode;
  currentPlan: string;
  note: string;
}

const ENFORCEMENT: Record<Meter['enforcement'], string> = {
  ok: 'within the plan',
  warning: 'over 80% used',
  grace: 'over the limit, within the grace',
  exhausted: 'at the cap',
};

const label = (meter: string) => meter.replaceAll('_', ' ');
const count = (n: number) => n.toLocaleString('en');

function metersTable(meters: Meter[]): Html {
  return html`<table>
<thead><tr><th scope="col">Meter</th><th scope="col">Used</th><th scope="col">Limit</th><th scope="col">Remaining</th><th scope="col">State</th></tr></thead>
<tbody>${meters.map(
    (m) =>
      html`<tr><th scope="row">${label(m.meter)}</th><td>${count(m.used)}</td><td>${m.limit === null ? 'no cap' : count(m.limit)}</td><td>${m.remaining === null ? '—' : count(m.remaining)}</td><td><span class="enforcement enforcement-${m.enforcement}">${ENFORCEMENT[m.enforcement]}</span></td></tr>`,
  )}</tbody>
</table>`;
}

/** What each capped meter does at its cap, for this plan. */
function atTheCap(usage: Usage): Html {
  const capped = usage.meters.filter((m) => m.limit !== null);
  if (!capped.length) return html`<p>Nothing is capped on the <strong>${usage.plan}</strong> plan: every meter is counted, none holds or refuses anything.</p>`;
  const grace = PLANS[usage.plan]?.eventGrace ?? 0;
  const lines = capped.map((m) => {
    switch (m.meter) {
      case 'accepted_events':
        return html`<li><strong>Accepted events</strong> (${count(m.limit!)}${grace ? `, then ${Math.round(grace * 100)}% grace` : ''}): events over the cap are <strong>held</strong>, stored and never dropped, and handed off when the period resets or the plan grows.</li>`;
      case 'replay_executions':
        return html`<li><strong>Replays</strong> (${count(m.limit!)}, a bulk replay counts one): further replays are refused (402) until the period resets.</li>`;
      case 'diagnostics_shares':
        return html`<li><strong>Diagnostics shares</strong> (${count(m.limit!)}): further shares are refused (402) until the period resets.</li>`;
      default:
        return html`<li><strong>${label(m.meter)}</strong> (${count(m.limit!)}): refused at the cap until the period resets.</li>`;
    }
  });
  return html`<ul>${lines}</ul><p>The period resets ${when(usage.periodEnd)}.</p>`;
}

async function options(ctx: SeatContext, usage: Usage): Promise<Html> {
  const a = await ctx.call({ operationId: 'getBillingHandoff' });
  if (a.status !== 200) return problem(a);
  const h = a.body.data as Handoff;
  if (usage.plan === 'unlimited') return html`<p>Nothing to buy: the <strong>unlimited</strong> plan caps nothing.</p>`;
  if (h.billing === 'off') return html`<p>This hookrelay does not bill through Shopify: its operator sets the plan (<code>hookrelay plan set</code>).</p>`;
  const choices = await appPlatform.planChoices(ctx.core, ctx.human.store.shopDomain);
  if (!choices.length) return html`<p>${h.note}</p>`;
  return html`<p>Choose a plan; Shopify then asks you to approve the charge in your admin. Only you can approve it: no agent can.</p>
<table>
<thead><tr><th scope="col">Plan</th><th scope="col">Price</th><th scope="col">Events every 30 days</th><th scope="col">Replays</th><th scope="col"></th></tr></thead>
<tbody>${choices.map(
    (c) =>
      html`<tr><th scope="row">${c.plan}</th><td>US$${c.priceUsd} every 30 days</td><td>${count(c.acceptedEventsPer30Days)}</td><td>${count(c.replayExecutions)}</td><td>${
        c.plan === usage.plan ? html`<strong>current plan</strong>` : html`<a href="${c.href}" target="_top" class="button">Choose ${c.plan}</a>`
      }</td></tr>`,
  )}</tbody>
</table>`;
}

async function get(ctx: SeatContext): Promise<PageResult> {
  const a = await ctx.call({ operationId: 'getPlanUsage' });
  if (a.status !== 200) return { title: 'Plan', status: a.status, html: problem(a).markup };
  const usage = a.body.data as Usage;
  const state =
    usage.enforcement === 'ok'
      ? ''
      : html`<div class="${usage.enforcement === 'exhausted' ? 'problem' : 'notice'}" role="status"><p>${usage.retryGuidance}</p></div>`;
  return {
    title: 'Plan',
    html: html`${state}${section(
      ctx,
      'Current plan',
      html`<p>Plan <strong>${usage.plan}</strong>, billing ${usage.billingStatus}. This period: ${when(usage.periodStart)} to ${when(usage.periodEnd)}.</p>${metersTable(usage.meters)}`,
    )}${section(ctx, 'At the cap', atTheCap(usage))}${section(ctx, 'Plans', await options(ctx, usage))}`.markup,
  };
}

export const page: SeatPage = { path: '/plan', title: 'Plan', get };
