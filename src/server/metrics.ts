/** GET /metrics: Prometheus text for a grant with setup:read — its store's series, the box's machinery, the process. */
import { checkExpectedContext } from '../contract/context.ts';
import { AppError, refuse } from '../contract/errors.ts';
import type { Scope } from '../contract/scopes.ts';
import type { PlatformLinkStore } from '../../db/platform-links.ts';
import type { EventReads, Repo, TenantStore } from '../../db/repo.ts';
import type { CoreWith } from '../core.ts';
import { metrics, processRegistry } from '../lib/instruments.ts';
import { PROMETHEUS_CONTENT_TYPE, Registry, renderText } from '../lib/metrics.ts';
import { authenticateBearer } from '../ops/grants.ts';
import { countRequests } from '../ops/operator-requests.ts';
import { VERSION } from '../version.ts';
import { errorResponse, newSupportCode } from './http.ts';

const SCOPE: Scope = 'setup:read';
const FROM_DATABASE = "Read from the database at scrape time: the database's figure, the same on every instance (do not sum across instances).";

/**
 * The scrape handler. Errors are the API's envelope (401 with WWW-Authenticate, 403 missing scope or context).
 * Scrapes are not audited (one every 15 s would flood the audit log) and carry no store id, token or body.
 */
export function createMetricsHandler(core: CoreWith<TenantStore & Pick<EventReads, 'handoffBacklog'> & Pick<Repo, 'sql'> & { links: PlatformLinkStore }>) {
  return async function handleMetrics(req: Request): Promise<Response> {
    if (req.method !== 'GET') {
      return errorResponse(null, new AppError('method_not_allowed', 'Use GET /metrics.', undefined, undefined, { Allow: 'GET' }));
    }
    let ctx: Parameters<typeof errorResponse>[0] = null;
    try {
      const { grant, store } = await authenticateBearer(core, req.headers.get('authorization'));
      const scopes = JSON.parse(grant.scopes) as Scope[];
      ctx = { store, grant, scopes, actor: { kind: 'agent', grantId: grant.id, label: grant.label } };
      checkExpectedContext(req.headers, store);
      if (!scopes.includes(SCOPE)) {
        throw refuse(
          {
            category: 'scope',
            code: 'missing_scope',
            reason: `/metrics needs ${SCOPE}, which this grant does not hold.`,
            recommendedAction: 'Ask the merchant for a grant whose tier includes setup:read (observer or above).',
          },
          { missingScopes: [SCOPE], requiredScopes: [SCOPE] },
        );
      }
      return await scrape(store.id);
    } catch (err) {
      if (!(err instanceof AppError)) {
        const supportCode = newSupportCode();
        core.log.error(`internal error in /metrics support=${supportCode}: ${err instanceof Error ? err.name : 'non-error thrown'}`);
        return errorResponse(ctx, new AppError('internal_error', 'Something went wrong on our side. Quote the support code.'), supportCode);
      }
      if (!ctx) metrics.unauthenticated('metrics');
      return errorResponse(ctx, err);
    }
  };

  async function scrape(storeId: string): Promise<Response> {
    const [pending, stores, link, requests] = await Promise.all([
      core.repo.handoffBacklog(storeId),
      core.repo.listStores(),
      core.repo.links.get(storeId),
      countRequests(core, storeId),
    ]);
    const db = new Registry();
    // One series per pause reason and code, 1 while paused, so an alert can fire on `hookrelay_handoff_paused == 1`.
    const paused = db.gauge('hookrelay_handoff_paused', `1 while this grant's store's handoff is paused (events wait, none fail), by reason and stable code; 0 while active. ${FROM_DATABASE}`, ['reason', 'code']);
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
    const filed = db.gauge('hookrelay_requests', `Support, feature and expansion requests and diagnostics shares this grant's store holds, by kind (hookrelay requests lists them). ${FROM_DATABASE}`, ['kind']);
    for (const [kind, n] of Object.entries(requests)) filed.labels(kind).set(n);
    // Group commits mix every store's receipts: on a box with several stores they would tell one store about the others.
    const box = stores.length === 1 ? [metrics.box, metrics.commits] : [metrics.box];
    const text = renderText([metrics.store(storeId).registry, db, ...box, processRegistry(VERSION)]);
    return new Response(text, { headers: { 'Content-Type': PROMETHEUS_CONTENT_TYPE, 'Cache-Control': 'no-store' } });
  }
}
