/**
 * Alerts: what hookrelay says without being asked. A sweep (every minute in serve, on the injected clock) looks at
 * each store: an endpoint silent past its watch (expectedEvery), a handoff paused for credentials, an uninstall, a
 * burst of failed authentications. A condition that starts raises an alert once (one per store and open key, across
 * instances); one that ends recovers it once; a new breach raises a new one. Each phase is handed to the store's
 * Flow as the `hookrelay-alert` trigger, through the same platform module as events (credentials, cost budget,
 * pause), journaled `sending` under a lease before the send, retried on a short schedule, and counted on no meter.
 */
import type { AlertHandoffResult, AlertRow, AlertStore, LeasedAlertHandoff } from '../../db/areas/alerts.ts';
import type { PlatformLinkRow, PlatformLinkStore } from '../../db/areas/platform-links.ts';
import type { EndpointStore, EventReads, ReadinessStore, Signals, TenantStore } from '../../db/repo.ts';
import type { EndpointRow, StoreRow } from '../../db/types.ts';
import { diagnosisFor, isDiagnosisCode } from '../contract/diagnoses.ts';
import { ALERTS } from '../contract/limits.ts';
import { PAUSE_CODES, type PauseCode, pauseAction } from '../contract/platform.ts';
import type { AlertKind } from '../contract/triggers.ts';
import { durationText } from '../contract/durations.ts';
import { ALERT_TRIGGER } from '../contract/triggers.ts';
import type { CoreWith } from '../core.ts';
import { iso } from '../lib/clock.ts';
import { metrics } from '../lib/instruments.ts';
import { platformOf } from '../platform/registry.ts';
import type { HandoffOutcome, TriggerRequest } from '../platform/types.ts';
import { HandoffPauses } from './pauses.ts';

type AlertCore = CoreWith<
  AlertStore &
    Pick<EndpointStore, 'listEndpoints' | 'getEndpoint'> &
    Pick<EventReads, 'latestEvent' | 'listAuthFailures' | 'countAuthFailures'> &
    Pick<ReadinessStore, 'listTriggerReadiness'> &
    Pick<TenantStore, 'listStores' | 'getStore'> &
    Signals & { links: PlatformLinkStore }
>;

/** Where alert triggers go: the platform's send (and its budget), as the event handoff uses them. */
export interface TriggerSender {
  send(req: TriggerRequest, timeoutMs: number): Promise<HandoffOutcome>;
  pace?(wants: readonly { store: StoreRow; wanted: number }[]): Promise<{ granted: number; later: number[] }[]>;
}

/** What an alert's row keeps of its breach (alerts.detail): facts, never a secret, a body or a header value. */
interface AlertDetail {
  endpointName?: string;
  expectedEveryMs?: number;
  lastReceiptAt?: number | null;
  code?: string;
  failures?: number;
  windowMs?: number;
  /** auth_failures: what signature forensics recognised in the newest failure (a DIAGNOSES code), and the preset it fixes for. */
  diagnosis?: string;
  senderProfile?: string;
  /** Why it recovered, one line (set at recovery). */
  recovery?: string;
}

/** A condition holding now, keyed by the alert's open key. */
interface Condition {
  kind: AlertKind;
  endpoint: EndpointRow | null;
  since: number;
  detail: AlertDetail;
}

export interface SweepResult {
  raised: number;
  recovered: number;
  /** Phases handed off this sweep, by what came of them. */
  handoffs: Record<AlertHandoffResult['state'], number>;
}

/** Per sweep, at most this many phases are sent (a backlog goes on at the next sweep). */
const HANDOFFS_PER_SWEEP = 100;
const LEASE_BATCH = 20;
/** A text field of a trigger: Flow's single-line text. */
const MAX_TEXT = 255;

const openKey = (endpointId: string | null, kind: AlertKind) => `${endpointId ?? 'store'}:${kind}`;
const clip = (s: string) => (s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT - 1)}…` : s);
const detailOf = (a: Pick<AlertRow, 'detail'>): AlertDetail => (a.detail ? (JSON.parse(a.detail) as AlertDetail) : {});

/**
 * The alert sweep of one process. `sweep()` evaluates every store, raises and recovers, then hands the due phases
 * off; calls while one runs share it. Instances on one PostgreSQL each sweep: the storage makes them agree.
 */
export class AlertWatch {
  private running: Promise<SweepResult> | null = null;
  /** The event handoff's pauses: a send refused for credentials pauses the store for events too. */
  private readonly pauses: HandoffPauses;

  constructor(
    private readonly core: AlertCore,
    /** What sends the alert trigger (tests give their own); by default the store's platform's destination. */
    private readonly sender: TriggerSender | null = null,
  ) {
    this.pauses = new HandoffPauses(core, (store) => platformOf(store.destination).destination(core));
  }

  sweep(): Promise<SweepResult> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }

  /** Resolves once no sweep runs (serve's stop waits for it before closing the storage). */
  async idle(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  private async pass(): Promise<SweepResult> {
    const { repo, clock } = this.core;
    const now = clock.now();
    const result: SweepResult = { raised: 0, recovered: 0, handoffs: { pending: 0, delivered: 0, failed: 0, skipped: 0 } };
    const paused = await repo.links.listPaused();
    const links = new Map(paused.map((l) => [l.storeId, l]));
    const open = Map.groupBy(await repo.listOpenAlerts(), (a) => a.storeId);
    // Only a store with something to look at can raise or recover (evaluate() finds nothing in the others): read
    // once for every store, rather than two queries each for thousands of quiet stores.
    const watched = new Set(await repo.storesToWatch(now - ALERTS.authBurst.windowMs));
    const looked = (s: StoreRow) => watched.has(s.id) || open.has(s.id) || links.get(s.id)?.pauseReason === 'credentials' || s.uninstalledAt != null;
    for (const store of (await repo.listStores()).filter(looked)) {
      const mine = open.get(store.id) ?? [];
      const { conditions, endpoints, lastReceipt } = await this.evaluate(store, links.get(store.id) ?? null, new Set(mine.map((a) => a.openKey!)), now);
      const openKeys = new Set(mine.map((a) => a.openKey));
      for (const [key, c] of conditions) {
        if (openKeys.has(key)) continue;
        const alert: AlertRow = {
          id: this.core.ids.next('alr'),
          storeId: store.id,
          endpointId: c.endpoint?.id ?? null,
          kind: c.kind,
          state: 'open',
          openKey: key,
          since: c.since,
          raisedAt: now,
          recoveredAt: null,
          detail: JSON.stringify(c.detail),
        };
        if (!(await repo.raiseAlert(alert, { phase: 'raised', at: now }))) continue; // raised by another instance
        result.raised++;
        this.core.log.warn(
          `alert raised: ${alert.id} ${c.kind} store=${store.shopDomain}${alert.endpointId ? ` endpoint=${alert.endpointId}` : ''} since ${iso(c.since)}`,
        );
      }
      for (const a of mine) {
        if (conditions.has(a.openKey!)) continue;
        const recovery = recoveryOf(a, endpoints.get(a.endpointId ?? ''), lastReceipt.get(a.endpointId ?? ''), links.get(store.id) ?? null);
        if (!(await repo.recoverAlert(store.id, a.id, now, JSON.stringify({ ...detailOf(a), recovery })))) continue;
        result.recovered++;
        this.core.log.info(`alert recovered: ${a.id} ${a.kind} store=${store.shopDomain}: ${recovery}`);
      }
    }
    await this.handOff(now, paused, result);
    await repo.pruneAlerts(now - this.core.config.retention.events, 1000);
    return result;
  }

  /**
   * The conditions holding for the store now. A burst of failed authentications raises at ALERTS.authBurst.failures
   * within its window, and holds (once open) while failures keep coming within a window and no receipt authenticated
   * after the newest: a sender failing slowly does not flap the alert.
   */
  private async evaluate(store: StoreRow, link: PlatformLinkRow | null, open: Set<string>, now: number) {
    const { repo } = this.core;
    const conditions = new Map<string, Condition>();
    const endpoints = new Map((await repo.listEndpoints(store.id)).filter((e) => e.status === 'active').map((e) => [e.id, e]));
    const lastReceipt = new Map<string, number | null>();
    const receivedAt = async (endpointId: string) => {
      if (!lastReceipt.has(endpointId)) lastReceipt.set(endpointId, (await repo.latestEvent(store.id, endpointId))?.receivedAt ?? null);
      return lastReceipt.get(endpointId)!;
    };

    for (const ep of endpoints.values()) {
      if (ep.expectedEveryMs == null) continue;
      const last = await receivedAt(ep.id);
      // Quiet since the last receipt, or since the watch began when that is later (a receipt after the endpoint's last
      // edit is later than any watch start: the versions are read only when none came since).
      const watchStart = last != null && last >= ep.updatedAt ? null : await this.watchStart(ep);
      const quietFrom = Math.max(last ?? Number.NEGATIVE_INFINITY, watchStart ?? ep.createdAt);
      if (now - quietFrom <= ep.expectedEveryMs) continue;
      conditions.set(openKey(ep.id, 'silence'), {
        kind: 'silence',
        endpoint: ep,
        since: last ?? quietFrom,
        detail: { endpointName: ep.name, expectedEveryMs: ep.expectedEveryMs, lastReceiptAt: last },
      });
    }

    const { windowMs, failures } = ALERTS.authBurst;
    for (const w of await repo.countAuthFailures(store.id, now - windowMs)) {
      const ep = endpoints.get(w.endpointId);
      const key = openKey(w.endpointId, 'auth_failures');
      if (!ep || (!open.has(key) && w.n < failures)) continue;
      const last = await receivedAt(ep.id);
      if (last != null && last > w.last) continue; // the sender authenticates again
      // What signature forensics recognised in the newest failure (a code, never a value), for the recommended action.
      const diagnosis = (await repo.listAuthFailures(store.id, ep.id, 1))[0]?.diagnosis ?? undefined;
      conditions.set(key, {
        kind: 'auth_failures',
        endpoint: ep,
        since: w.first,
        detail: { endpointName: ep.name, failures: w.n, windowMs, diagnosis, senderProfile: ep.senderProfile ?? undefined },
      });
    }

    if (link?.pauseReason === 'credentials') {
      conditions.set(openKey(null, 'handoff_paused'), {
        kind: 'handoff_paused',
        endpoint: null,
        since: link.pausedSince ?? now,
        detail: { code: link.pauseCode ?? undefined },
      });
    }
    if (store.uninstalledAt != null)
      conditions.set(openKey(null, 'uninstalled'), { kind: 'uninstalled', endpoint: null, since: store.uninstalledAt, detail: {} });
    return { conditions, endpoints, lastReceipt };
  }

  /** When the endpoint's current watch began: the first of the newest run of config versions with a watch. */
  private async watchStart(ep: EndpointRow): Promise<number> {
    let start = ep.updatedAt;
    for (const v of await this.core.repo.listEndpointVersions(ep.id)) {
      if ((JSON.parse(v.config) as { expectedEvery?: string | null }).expectedEvery == null) break;
      start = v.createdAt;
    }
    return start;
  }

  /**
   * Sends the due phases, a lease at a time, until none is left (a recovered phase becomes due once its raised one
   * is sent) or HANDOFFS_PER_SWEEP went. Stores paused (credentials, uninstall, outage) keep theirs for later; so does
   * a store a send just paused.
   */
  private async handOff(now: number, paused: PlatformLinkRow[], result: SweepResult): Promise<void> {
    const { timeoutMs } = this.core.config.handoff;
    // A send may renew a refused token once: two calls and a token request, each up to the timeout.
    const leaseUntil = now + Math.max(ALERTS.leaseMs, 3 * timeoutMs + 30_000);
    const skip = new Set(paused.map((l) => l.storeId));
    for (let sent = 0; sent < HANDOFFS_PER_SWEEP; ) {
      const leased = await this.core.repo.leaseAlertHandoffs(now, leaseUntil, Math.min(LEASE_BATCH, HANDOFFS_PER_SWEEP - sent), [...skip]);
      if (!leased.length) return;
      for (const l of leased) {
        const r = await this.send(l);
        if (r.lastError === 'credentials') skip.add(l.alert.storeId);
        result.handoffs[r.state]++;
        metrics.alertHandoff(l.alert.storeId, l.handoff.phase, r.state);
      }
      sent += leased.length;
    }
  }

  private async send({ handoff, alert, takenOver }: LeasedAlertHandoff): Promise<AlertHandoffResult> {
    const { repo, clock, log, config } = this.core;
    const label = `alert ${alert.id} (${alert.kind}) ${handoff.phase}`;
    const record = async (r: AlertHandoffResult) => {
      // Fenced: a holder whose lease was taken over meanwhile writes nothing (the new holder decides).
      if (!(await repo.finishAlertHandoff(handoff, r))) log.warn(`${label}: its lease was taken over; the result is left to the new holder`);
      return r;
    };
    const unsent = (nextAttemptAt: number, lastError: string | null): AlertHandoffResult => ({
      state: 'pending',
      attempts: handoff.attempts - 1,
      nextAttemptAt,
      lastError,
      deliveredAt: null,
    });
    const skipped = (lastError: string): AlertHandoffResult => ({
      state: 'skipped',
      attempts: handoff.attempts - 1,
      nextAttemptAt: null,
      lastError,
      deliveredAt: null,
    });
    if (takenOver)
      log.warn(
        `${label}: the previous send's lease ran out before its result was recorded; it may have reached Flow, and is sent again (attempt ${handoff.attempts})`,
      );

    const store = await repo.getStore(alert.storeId);
    if (!store || !platformOf(store.destination).startsAlerts) return record(skipped('no_flow_destination'));
    const sender = this.sender ?? platformOf(store.destination).destination(this.core);
    const readiness = (await repo.listTriggerReadiness(store.id)).find((r) => r.handle === ALERT_TRIGGER.handle);
    if (readiness && !readiness.hasEnabledFlow) return record(skipped('no_workflow'));
    if (sender.pace) {
      const { granted, later } = (await sender.pace([{ store, wanted: 1 }]).catch(() => null))?.[0] ?? { granted: 1, later: [] as number[] };
      if (granted < 1) return record(unsent(later[0] ?? clock.now() + 1000, null));
    }

    const payload = await this.payload(alert, handoff.phase as 'raised' | 'recovered', store);
    let outcome: HandoffOutcome;
    try {
      outcome = await sender.send({ store, handle: ALERT_TRIGGER.handle, payload }, config.handoff.timeoutMs);
    } catch {
      outcome = { kind: 'retry', httpStatus: null, errorClass: 'network', message: 'The send failed unexpectedly.' };
    }
    const at = clock.now();
    switch (outcome.kind) {
      case 'delivered':
        log.info(`${label}: handed to Flow`);
        return record({ state: 'delivered', attempts: handoff.attempts, nextAttemptAt: null, lastError: null, deliveredAt: at });
      case 'deferred':
        return record(unsent(outcome.until, 'throttled'));
      case 'no_workflow':
        return record(skipped('no_workflow'));
      case 'paused': {
        // The store's credentials failed: it pauses for events too, and this phase waits for the resume.
        const probeAt = await this.pauses.pause(store, outcome.pause);
        log.warn(`${label}: ${outcome.pause.code}; it waits for the store's handoff to resume`);
        return record(outcome.sent ? { ...unsent(probeAt, 'credentials'), attempts: handoff.attempts } : unsent(probeAt, 'credentials'));
      }
      case 'retry': {
        const delay = ALERTS.retrySchedule[handoff.attempts - 1];
        if (delay !== undefined) {
          return record({
            state: 'pending',
            attempts: handoff.attempts,
            nextAttemptAt: at + Math.max(delay, outcome.retryAfterMs ?? 0),
            lastError: outcome.errorClass,
            deliveredAt: null,
          });
        }
        log.warn(`${label}: given up after ${handoff.attempts} attempts (${outcome.errorClass}${outcome.httpStatus ? ` HTTP ${outcome.httpStatus}` : ''})`);
        return record({ state: 'failed', attempts: handoff.attempts, nextAttemptAt: null, lastError: outcome.errorClass, deliveredAt: null });
      }
      case 'failed':
        log.warn(`${label}: refused by the platform (${outcome.errorClass}): ${outcome.message}`);
        return record({ state: 'failed', attempts: handoff.attempts, nextAttemptAt: null, lastError: outcome.errorClass, deliveredAt: null });
    }
  }

  /** The trigger's fields: every one the alert extension declares, each a single line of text. */
  private async payload(alert: AlertRow, phase: 'raised' | 'recovered', store: StoreRow): Promise<Record<string, string>> {
    const endpoint = alert.endpointId ? await this.core.repo.getEndpoint(store.id, alert.endpointId) : null;
    const text = describeAlert(alert, endpoint?.name ?? null, { publicUrl: this.core.config.publicUrl, shopDomain: store.shopDomain });
    const values: Record<(typeof ALERT_TRIGGER.textFields)[number], string> = {
      'alert id': alert.id,
      kind: alert.kind,
      phase,
      'endpoint id': alert.endpointId ?? '',
      'endpoint name': alert.endpointId ? (text.endpointName ?? '') : '',
      since: iso(alert.since),
      summary: phase === 'recovered' ? text.recoveredSummary : text.summary,
      'recommended action': phase === 'recovered' ? text.recoveredAction : text.recommendedAction,
    };
    return Object.fromEntries(ALERT_TRIGGER.textFields.map((k) => [k, clip(values[k])]));
  }
}

/**
 * What an alert says to people: a summary of the breach, of its recovery, and what to do (before and after the recovery: the reads and the trigger say the same). `endpointName`: the
 * endpoint's name now (null when it is gone: the name recorded with the breach is used).
 */
export function describeAlert(alert: AlertRow, endpointName: string | null, where: { publicUrl: string; shopDomain: string }) {
  const d = detailOf(alert);
  const name = endpointName ?? d.endpointName ?? null;
  const ep = alert.endpointId ? `endpoint "${name ?? alert.endpointId}" (${alert.endpointId})` : '';
  const since = iso(alert.since);
  const pauseActionOf = (code: string | undefined) =>
    pauseAction(Object.hasOwn(PAUSE_CODES, code ?? '') ? (code as PauseCode) : 'SVC_CREDENTIALS_MISSING', where);
  let summary: string;
  let recommendedAction: string;
  switch (alert.kind as AlertKind) {
    case 'silence':
      summary = `The ${ep} has received nothing since ${d.lastReceiptAt != null ? since : `its watch began at ${since}`}: longer than the ${durationText(d.expectedEveryMs ?? 0)} it expects.`;
      recommendedAction = `Check the sender feeding ${alert.endpointId}: a zap, scenario or workflow switched off, out of operations or without its credentials stops without a word. Once fixed, send a test event; if quiet this long is normal, lengthen expectedEvery (an endpoint edit intent).`;
      break;
    case 'auth_failures':
      summary = `${d.failures ?? 0} requests to the ${ep} failed authentication within ${durationText(d.windowMs ?? ALERTS.authBurst.windowMs)}, the first at ${since}.`;
      recommendedAction = isDiagnosisCode(d.diagnosis)
        ? `The sender of ${alert.endpointId} authenticates wrongly, and its newest failure looks like ${d.diagnosis}: ${diagnosisFor(d.diagnosis, d.senderProfile ?? null).fix} If it cannot be fixed, create a replacement endpoint.`
        : `The sender of ${alert.endpointId} authenticates wrongly: check it uses the endpoint's current secret (the new one after a rotation) and header, and signs the exact bytes it sends. Setup state names what was recognised. If it cannot be fixed, create a replacement endpoint.`;
      break;
    case 'handoff_paused':
      summary = `Handoff to Shopify Flow for ${where.shopDomain} is paused since ${since} (${d.code ?? 'credentials'}): events wait, none fail.`;
      recommendedAction = pauseActionOf(d.code);
      break;
    case 'uninstalled':
      summary = `The app was uninstalled from ${where.shopDomain} at ${since}: events wait for an install again.`;
      recommendedAction = pauseActionOf('SVC_APP_UNINSTALLED');
      break;
    default:
      summary = `Alert ${alert.kind} since ${since}.`;
      recommendedAction = 'Read the reliability reads for details.';
  }
  const recoveredSummary = `Recovered${alert.recoveredAt != null ? ` at ${iso(alert.recoveredAt)}` : ''}: ${d.recovery ?? 'its condition ended'}. ${summary}`;
  return { endpointName: name, summary, recoveredSummary, recommendedAction, recoveredAction: 'Nothing to do: it recovered by itself.' };
}

/** Why an open alert's condition no longer holds, one line. */
function recoveryOf(alert: AlertRow, endpoint: EndpointRow | undefined, lastReceiptAt: number | null | undefined, link: PlatformLinkRow | null): string {
  const d = detailOf(alert);
  const received = (after: number) => (lastReceiptAt != null && lastReceiptAt > after ? `the endpoint received an event at ${iso(lastReceiptAt)}` : null);
  switch (alert.kind as AlertKind) {
    case 'silence':
      if (!endpoint) return 'the endpoint was archived or deleted';
      if (endpoint.expectedEveryMs == null) return 'its silence watch was switched off';
      return received(d.lastReceiptAt ?? Number.NEGATIVE_INFINITY) ?? `its expected interval is now ${durationText(endpoint.expectedEveryMs)}`;
    case 'auth_failures':
      if (!endpoint) return 'the endpoint was archived or deleted';
      return received(alert.since) ?? `no failed authentication for ${durationText(ALERTS.authBurst.windowMs)}`;
    case 'handoff_paused':
      return link?.pauseReason ? `the handoff is paused for another reason now (${link.pauseCode})` : 'the handoff resumed';
    case 'uninstalled':
      return 'the app was installed again';
    default:
      return 'its condition ended';
  }
}
