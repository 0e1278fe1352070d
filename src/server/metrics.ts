/**
 * GET /metrics: Prometheus text for a grant with setup:read or a metrics token (`hookrelay metrics-token`) — its
 * store's series, the box's machinery, the process.
 */
import { storageFault, storageUnavailable } from '../relay/storage-health.ts';
import { checkExpectedContext } from '../contract/context.ts';
import { AppError } from '../contract/errors.ts';
import { ALERT_KINDS } from '../contract/triggers.ts';
import { METRICS_SCOPES } from '../contract/scopes.ts';
import type { Core } from '../core.ts';
import { NO_CLIENT, type AuthFailureLimiter, type ClientOf } from '../lib/auth-failures.ts';
import { metrics, processRegistry } from '../lib/instruments.ts';
import { PROMETHEUS_CONTENT_TYPE, Registry, renderText } from '../lib/metrics.ts';
import { requestIdOf } from '../lib/request-ids.ts';
import type { Principal } from '../ops/grants.ts';
import { authenticateMetricsToken, metricsTokenIn } from '../ops/metrics-tokens.ts';
import { countRequests } from '../ops/operator-requests.ts';
import { VERSION } from '../version.ts';
import { errorResponse, newSupportCode, toResponse } from './http.ts';
import { authenticate, authorize, Refused } from './steps/authenticate.ts';

const FROM_DATABASE = "Read from the database at scrape time: the database's figure, the same on every instance (do not sum across instances).";
/** What a failed metrics-token authentication is audited and counted as (no contract operation: /metrics is outside the table). */
const SCRAPE_METRICS = { operationId: 'scrapeMetrics' };

/**
 * The scrape handler. Errors are the API's envelope (401 with WWW-Authenticate, 403 missing scope or context).
 * Scrapes are not audited (one every 15 s would flood the audit log) and carry no store id, token or body. The bearer
 * goes through the pipeline's authentication step: a metrics token that fails is limited per client and audited (or
 * folded) as a bad grant token on the API is; a grant that fails is counted on /metrics' series only.
 */
export function createMetricsHandler(core: Core, authFailures: AuthFailureLimiter) {
  const deps = { core, authFailures };
  return async function handleMetrics(req: Request, client: ClientOf = NO_CLIENT): Promise<Response> {
    if (req.method !== 'GET') {
      return errorResponse(null, new AppError('method_not_allowed', 'Use GET /metrics.', undefined, undefined, { Allow: 'GET' }));
    }
    const authorization = req.headers.get('authorization');
    const metricsToken = metricsTokenIn(authorization);
    let ctx: Principal | null = null;
    try {
      if (metricsToken !== null) {
        const attempt = { client, requestId: requestIdOf(req), surface: () => import('../mcp/surface.ts').then((m) => m.surfaceOf(req)) };
        const store = await authenticate(deps, SCRAPE_METRICS, authorization, attempt, () => authenticateMetricsToken(core, metricsToken));
        if (store instanceof Refused) return toResponse(store.answer);
        checkExpectedContext(req.headers, store);
        return await scrape(store.id);
      }
      const principal = await authenticate(deps, SCRAPE_METRICS, authorization, null);
      if (principal instanceof Refused) return toResponse(principal.answer);
      ctx = principal;
      authorize(principal, req.headers, '/metrics', METRICS_SCOPES);
      return await scrape(principal.store.id);
    } catch (err) {
      if (!(err instanceof AppError)) return internalError(ctx, err);
      return errorResponse(ctx, err);
    }
  };

  function internalError(ctx: Parameters<typeof errorResponse>[0], err: unknown): Response {
    // The database away (or failing) is no bug of ours: 503 storage_unavailable, as every other route answers it.
    const fault = storageFault(err);
    if (fault) return errorResponse(ctx, storageUnavailable(fault));
    const supportCode = newSupportCode();
    core.log.error(`internal error in /metrics support=${supportCode}: ${err instanceof Error ? err.name : 'non-error thrown'}`);
    return errorResponse(ctx, new AppError('internal_error', 'Something went wrong on our side. Quote the support code.'), supportCode);
  }

  async function scrape(storeId: string): Promise<Response> {
    const [pending, stores, link, requests, alerts] = await Promise.all([
      core.repo.handoffBacklog(storeId),
      core.repo.listStores(),
      core.repo.links.get(storeId),
      countRequests(core, storeId),
      core.repo.listOpenAlerts(storeId),
    ]);
    const db = new Registry();
    // One series per pause reason and code, 1 while paused, so an alert can fire on `hookrelay_handoff_paused == 1`.
    const paused = db.gauge(
      'hookrelay_handoff_paused',
      `1 while this grant's store's handoff is paused (events wait, none fail), by reason and stable code; 0 while active. ${FROM_DATABASE}`,
      ['reason', 'code'],
    );
    if (link?.pauseReason) paused.labels(link.pauseReason, link.pauseCode ?? 'unknown').set(1);
    else paused.labels('none', 'none').set(0);
    db.gauge('hookrelay_handoff_paused_seconds', `How long the handoff has been paused, seconds; 0 while active. ${FROM_DATABASE}`)
      .labels()
      .set(link?.pauseReason && link.pausedSince != null ? Math.max(0, (core.clock.now() - link.pausedSince) / 1000) : 0);
    db.gauge('hookrelay_handoff_backlog', `Events of this grant's store not yet handed off for good (accepted, queued, held). ${FROM_DATABASE}`)
      .labels()
      .set(pending.backlog);
    db.gauge('hookrelay_handoff_oldest_pending_seconds', `Age of the oldest of those events, seconds; 0 when there is none. ${FROM_DATABASE}`)
      .labels()
      .set(pending.oldestReceivedAt == null ? 0 : Math.max(0, (core.clock.now() - pending.oldestReceivedAt) / 1000));
    // A count of stored rows, not a counter: shop/redact (and retention) remove requests, so it can go down.
    const filed = db.gauge(
      'hookrelay_requests',
      `Support, feature and expansion requests, diagnostics shares and customer data requests this grant's store holds, by kind (hookrelay requests lists them). ${FROM_DATABASE}`,
      ['kind'],
    );
    for (const [kind, n] of Object.entries(requests)) filed.labels(kind).set(n);
    // Every kind, 0 when none is open, so a rule can fire on `hookrelay_alerts_open > 0`.
    const open = db.gauge(
      'hookrelay_alerts_open',
      `Alerts open now for this grant's store, by kind (silence, handoff_paused, uninstalled, auth_failures); the reliability reads list them. ${FROM_DATABASE}`,
      ['kind'],
    );
    for (const kind of ALERT_KINDS) open.labels(kind).set(alerts.filter((a) => a.kind === kind).length);
    // Group commits mix every store's receipts: on a box with several stores they would tell one store about the others.
    const box = stores.length === 1 ? [metrics.box, metrics.commits] : [metrics.box];
    const text = renderText([metrics.store(storeId).registry, db, ...box, processRegistry(VERSION)]);
    return new Response(text, { headers: { 'Content-Type': PROMETHEUS_CONTENT_TYPE, 'Cache-Control': 'no-store' } });
  }
}
