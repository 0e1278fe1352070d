/** Alerts as the reliability reads show them: those open now, and those raised or recovered in the window. */
import type { AlertHandoffRow, AlertRow, AlertStore } from '../../db/areas/alerts.ts';
import type { EndpointStore } from '../../db/repo.ts';
import { ALERTS } from '../contract/limits.ts';
import type { Alert } from '../contract/schemas/alerts.ts';
import { iso, isoOrNull } from '../lib/clock.ts';
import { describeAlert } from '../relay/alerts.ts';
import type { OpContext } from './context.ts';

/** `open`: every alert open now, oldest first; `recent`: open or recovered since `from`, newest first (ALERTS.recentLimit). */
export async function alertsSince(
  ctx: OpContext<AlertStore & Pick<EndpointStore, 'listEndpoints'>>,
  from: number,
): Promise<{ open: Alert[]; recent: Alert[] }> {
  const { core, store } = ctx;
  const open = await core.repo.listOpenAlerts(store.id);
  const recent = await core.repo.listRecentAlerts(store.id, from, ALERTS.recentLimit);
  if (!open.length && !recent.length) return { open: [], recent: [] };
  const names = new Map((await core.repo.listEndpoints(store.id)).map((e) => [e.id, e.name]));
  const phases = new Map<string, AlertHandoffRow[]>();
  for (const h of await core.repo.listAlertHandoffs([...new Set([...open, ...recent].map((a) => a.id))]))
    phases.set(h.alertId, [...(phases.get(h.alertId) ?? []), h]);
  const view = (a: AlertRow): Alert => {
    const text = describeAlert(a, a.endpointId ? (names.get(a.endpointId) ?? null) : null, { publicUrl: core.config.publicUrl, shopDomain: store.shopDomain });
    const phase = (p: string) => (phases.get(a.id) ?? []).find((h) => h.phase === p)?.state as Alert['handoff']['raised'] | undefined;
    return {
      id: a.id,
      kind: a.kind as Alert['kind'],
      state: a.state as Alert['state'],
      endpoint: a.endpointId ? { id: a.endpointId, name: text.endpointName ?? '' } : null,
      since: iso(a.since),
      raisedAt: iso(a.raisedAt),
      recoveredAt: isoOrNull(a.recoveredAt),
      summary: a.state === 'recovered' ? text.recoveredSummary : text.summary,
      recommendedAction: a.state === 'recovered' ? text.recoveredAction : text.recommendedAction,
      handoff: { raised: phase('raised') ?? 'pending', recovered: phase('recovered') ?? null },
    };
  };
  return { open: open.map(view), recent: recent.map(view) };
}
