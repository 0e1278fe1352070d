/**
 * The HTTP app: public routes, the inbound hook path, and (loaded with the first request for it, see
 * agent-api.ts) every served contract operation through the pipeline.
 */
import { API_PREFIX, EDITION } from '../contract/scopes.ts';
import { AppError } from '../contract/errors.ts';
import type { Core } from '../core.ts';
import { AUTH_FAILURE_LIMITS } from '../contract/limits.ts';
import { iso } from '../lib/clock.ts';
import { EndpointCache } from '../relay/endpoint-cache.ts';
import { createInboundHandler } from '../relay/inbound.ts';
import { heldSecrets } from '../held-secrets.ts';
import { appPlatform, platforms } from '../platform/registry.ts';
import type { PlatformOps } from '../platform/types.ts';
import { describeFault, StorageHealth } from '../relay/storage-health.ts';
import { ReceiptWriter } from '../relay/writer.ts';
import type { AgentApi } from './agent-api.ts';
import type { Seat } from '../seat/router.ts';
import type { Consent } from '../seat/consent.ts';
import { errorResponse } from './http.ts';
import { createMetricsHandler } from './metrics.ts';
import { VERSION } from '../version.ts';
import { AuthFailureLimiter, type ClientOf, lazyClient, trustsProxy } from '../lib/auth-failures.ts';
import { bodyClient } from '../lib/body.ts';
import { createUnsignedRoutes } from './unsigned-routes.ts';
import { unlogged } from '../lib/refusal-log.ts';
import { AUTHORIZE_PATH, GUARDED_OAUTH_PATHS, isOAuthRoute } from '../oauth/metadata.ts';
import type { OAuthRoutes } from '../oauth/routes.ts';

/** How long GET /status waits for its read of the database. */
const STATUS_PROBE_MS = 2_000;

/** decodeURIComponent that answers null for malformed escapes instead of throwing. */
function safeDecode(s: string): string | null {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/**
 * The path of a request URL. Plain paths (no dot segment, escape or backslash to normalise) are cut out of the
 * string; the rest go through the URL parser. Parsing every URL cost more than any other step of a receipt
 * before its commit.
 */
export function pathOf(url: string): string {
  const scheme = url.indexOf('://');
  const start = scheme < 0 ? -1 : url.indexOf('/', scheme + 3);
  // No slash, or a query or fragment before it (an absolute-form target such as `http://host?x=/hooks/…`).
  if (start < 0 || /[?#]/.test(url.slice(scheme + 3, start))) return new URL(url).pathname;
  let end = url.indexOf('?', start);
  if (end < 0) end = url.length;
  const path = url.slice(start, end);
  return /[.%\\#]/.test(path) ? new URL(url).pathname : path;
}

/** The merchant's seat's paths (src/seat/router.ts): /app, /console and what is under them. */
const seatPath = (path: string) => path === '/app' || path.startsWith('/app/') || path === '/console' || path.startsWith('/console/');

export interface App {
  /**
   * `peer`: the socket's remote address, or a function giving it (serve defers Bun's requestIP: only a failed
   * authentication needs it); failed authentication is limited by it.
   */
  fetch(req: Request, peer?: string | null | (() => string | null)): Promise<Response>;
  core: Core;
  writer: ReceiptWriter;
  endpoints: EndpointCache;
  /** Ends MCP code mode's sandbox processes (serve calls it on shutdown). */
  closeMcp(): Promise<void>;
  /** Called after receipts commit (serve wires the worker's wake here). */
  onReceipts(fn: () => void): void;
  /** Called after an agent operation changed an endpoint (serve's relay thread forgets it too). */
  onEndpointChanged(fn: (id: string) => void): void;
  /** Whether writes succeed, as /status reports it. */
  storage: StorageHealth;
}

export function createApp(core: Core): App {
  const endpoints = new EndpointCache(core);
  let wake: () => void = () => {};
  const writer = new ReceiptWriter(core.repo, (committed) => {
    wake();
    // Receipts this instance's worker did not take are for any peer's claim.
    if (core.repo.notify && committed.some((c) => c.outcome === 'accepted' && !c.leased)) core.repo.notify('due', '').catch(() => {});
  });
  const storage = new StorageHealth(core.clock, core.log);
  writer.reportHealthTo(storage);
  // Instances on one PostgreSQL share the failure windows; a SQLite file has one process, which counts in memory.
  const authFailures = new AuthFailureLimiter(core.clock, AUTH_FAILURE_LIMITS, core.repo.capabilities.multiInstance ? core.repo : null);
  const trustProxy = trustsProxy(core.config.env);
  const inbound = createInboundHandler({ core, endpoints, writer, authFailures });
  // Routes anyone reaches without a credential of ours: limited per address, their refusals summed up in the log.
  const unsigned = createUnsignedRoutes(core, authFailures);
  const metrics = createMetricsHandler(core, authFailures);
  let alsoChanged: (id: string) => void = () => {};
  const endpointChanged = (id: string) => {
    endpoints.invalidate(id);
    alsoChanged(id);
    core.repo.notify?.('endpoint', id).catch(() => {}); // peers drop it too; their cache TTL bounds a lost signal
  };
  // Each platform's routes (install, billing, webhooks, Flow's callbacks), guarded as each asks; what they need of
  // the layers above is handed in, as the MCP endpoint receives its pipeline.
  const ops: PlatformOps = { newStoreRow: async (...args) => (await import('../ops/stores.ts')).newStoreRow(...args), heldSecrets };
  const routes = new Map<string, { methods?: readonly string[]; run: (req: Request, client: ClientOf) => Promise<Response> }>();
  for (const platform of platforms) {
    for (const route of platform.routes(core, ops)) {
      const own =
        route.path.startsWith('/hooks/') ||
        route.path.startsWith(`${API_PREFIX}/`) ||
        seatPath(route.path) ||
        isOAuthRoute(route.path) ||
        ['/', '/docs', '/metrics', '/status'].includes(route.path);
      if (own || routes.has(route.path)) throw new Error(`a platform's route ${route.path} is taken`);
      const g = route.guard;
      const run =
        g.kind === 'signed' ? unsigned.signed(g.name, g.audience, route.handle) : g.kind === 'install' ? unsigned.install(route.handle) : route.handle;
      routes.set(route.path, { methods: route.methods, run });
    }
  }
  let agent: Promise<AgentApi> | null = null;
  // The merchant's seat (/app, /console), loaded with its first request; it acts through the API's invoke.
  let seat: Promise<Seat> | null = null;
  const seatFront = () =>
    (seat ??= Promise.all([agentApi(), import('../seat/router.ts')]).then(([api, m]) =>
      m.createSeat({ core, invoke: api.invoke, embedded: () => appPlatform.embedded(core, ops) }),
    ));
  // A seat request whose credential (ID token, session) does not verify counts against its address as a signed route's.
  const seatRoute = async (req: Request, path: string, client: ClientOf) => {
    const res = await unsigned.signed('merchant seat', 'page', async (r) => (await seatFront()).fetch(r, path, client))(req, client);
    // The guard's own 429 (an address past its failed sign-ins), not a page's answer, is framed as the seat frames.
    return res.status === 429 && unlogged.has(res) ? (await seatFront()).tooMany(req, path, Number(res.headers.get('retry-after')) || 60) : res;
  };
  // The OAuth consent a merchant sees (GET/POST /oauth/authorize and the paths under it), loaded with its first request.
  let consent: Promise<Consent> | null = null;
  const consentFront = () => (consent ??= import('../seat/consent.ts').then((m) => m.createConsent(core)));
  // The OAuth authorization server's metadata, token and revocation endpoints, loaded with their first request.
  let oauth: Promise<OAuthRoutes> | null = null;
  const oauthRoute = async (req: Request, path: string, client: ClientOf) => {
    const routes = await (oauth ??= import('../oauth/routes.ts').then((m) => m.createOAuthRoutes(core)));
    const answer = (r: Request) => routes.fetch(r, path);
    return GUARDED_OAUTH_PATHS.includes(path) && req.method === 'POST' ? unsigned.oauth(answer)(req, client) : answer(req);
  };
  const agentApi = () => (agent ??= import('./agent-api.ts').then((m) => m.createAgentApi({ core, endpointChanged, authFailures, storage })));

  /**
   * Not an async function: a receipt's answer is the inbound handler's own promise, not one more wrapped around it
   * (each async frame is a promise allocated and resolved per request). What throws still answers as a rejection.
   */
  function fetch(req: Request, peer: string | null | (() => string | null) = null): Promise<Response> {
    try {
      const path = pathOf(req.url);
      const client = lazyClient(req, peer, trustProxy);
      // A chunked body is read as a stream off the wire, counted against its client (src/lib/body.ts).
      if (req.headers.has('transfer-encoding')) bodyClient(req, client);
      if (path.startsWith('/hooks/')) {
        const id = safeDecode(path.slice('/hooks/'.length));
        if (id && !id.includes('/')) return inbound(req, id, client);
        return Promise.resolve(Response.json({ code: 'not_found', message: 'No such endpoint.' }, { status: 404 }));
      }
      return other(req, path, client);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Every route but the inbound hooks. */
  async function other(req: Request, path: string, client: ClientOf): Promise<Response> {
    const route = routes.get(path);
    if (route && (!route.methods || route.methods.includes(req.method))) return route.run(req, client);
    if (path === '/metrics') return metrics(req, client);
    if (isOAuthRoute(path)) return oauthRoute(req, path, client);
    if (seatPath(path)) return seatRoute(req, path, client);
    if (path === AUTHORIZE_PATH || path.startsWith(`${AUTHORIZE_PATH}/`)) return (await consentFront()).fetch(req, path, client);
    if (req.method === 'GET' && path === '/status') return status();
    if (path.startsWith(`${API_PREFIX}/`) || (req.method === 'GET' && (path === '/docs' || path === '/')))
      return (await agentApi()).fetch(req, path, client, safeDecode);
    return errorResponse(null, new AppError('not_found', 'No such route. GET /agent/v1/manifest lists the operations.'));
  }

  /**
   * /status's read, given up after STATUS_PROBE_MS so that a database that stopped answering reads as degraded at
   * once; one at a time (a probe still running is joined), so polling a hung database holds one connection. Its
   * answer also ends a fault that was only about reaching the database (StorageHealth.reachable).
   */
  let probing: ReturnType<typeof core.repo.links.listPaused> | null = null;
  function probe(): ReturnType<typeof core.repo.links.listPaused> {
    probing ??= core.repo.links.listPaused().finally(() => (probing = null));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('status probe: no answer')), STATUS_PROBE_MS)));
    return Promise.race([probing, late]).finally(() => clearTimeout(timer));
  }

  /**
   * Aggregate health. Storage is degraded from a failed write until a write succeeds again (a full disk still
   * reads fine, so a read probe alone would say operational); the read probe catches a database that cannot
   * even be read. Degraded storage answers 503, so a load balancer's check takes the box out of rotation. The
   * handoff is degraded while a store's handoff is paused (its platform not answering, its credentials refused):
   * the box still takes receipts, so that alone answers 200 with `degraded`, naming no store.
   */
  async function status(): Promise<Response> {
    let readable = true;
    let paused: { pauseReason: string | null; pausedSince: number | null }[] = [];
    try {
      // An uninstalled store waits for its merchant, not for a failure to pass: no fault of the box's.
      paused = (await probe()).filter((p) => p.pauseReason !== 'uninstalled');
      storage.reachable();
    } catch {
      readable = false;
    }
    const writes = storage.state();
    const ok = readable && writes.status === 'operational';
    const health = ok ? 'operational' : 'degraded';
    const storageComponent: Record<string, unknown> = { name: 'storage', status: health };
    if (writes.status === 'degraded') {
      Object.assign(storageComponent, {
        code: 'storage_unavailable',
        fault: writes.fault,
        detail: `Writes are failing: ${describeFault(writes.fault!)}. Receipts and API calls answer 503 until a write succeeds again.`,
        failingSince: iso(writes.failingSince!),
        lastFailureAt: iso(writes.lastFailureAt!),
      });
    } else if (!readable) {
      Object.assign(storageComponent, { code: 'storage_unavailable', detail: 'The database cannot be read.' });
    }
    const handoffComponent: Record<string, unknown> = { name: 'handoff', status: paused.length ? 'degraded' : 'operational' };
    if (paused.length) {
      const reasons = [...new Set(paused.map((p) => p.pauseReason))].join(', ');
      Object.assign(handoffComponent, {
        code: 'handoff_paused',
        detail: `The handoff of ${paused.length} store(s) is paused (${reasons}): their events wait, none is lost; it resumes by itself when a probe succeeds.`,
        since: iso(Math.min(...paused.map((p) => p.pausedSince ?? core.clock.now()))),
      });
    }
    const body = {
      status: ok && !paused.length ? 'operational' : 'degraded',
      edition: EDITION,
      version: VERSION,
      components: [{ name: 'ingest', status: health }, { name: 'agent_api', status: health }, storageComponent, handoffComponent],
      time: iso(core.clock.now()),
    };
    return Response.json(body, { status: ok ? 200 : 503 });
  }

  return {
    fetch,
    core,
    writer,
    endpoints,
    async closeMcp() {
      if (agent) await (await agent).closeMcp();
    },
    onReceipts(fn) {
      wake = fn;
    },
    onEndpointChanged(fn) {
      alsoChanged = fn;
    },
    storage,
  };
}
