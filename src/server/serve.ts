/** `hookrelay serve`: Bun.serve + the app + the handoff worker, with request logging and a clean SIGTERM. */
import { storageFault, storageUnavailable } from '../relay/storage-health.ts';
import type { Server } from 'bun';
import { AppError } from '../contract/errors.ts';
import type { Core } from '../core.ts';
import { RelayThread } from '../relay/relay-host.ts';
import { HandoffWorker, type Destinations } from '../relay/worker.ts';
import { AlertWatch } from '../relay/alerts.ts';
import { ALERTS } from '../contract/limits.ts';
import { createApp, pathOf, type App } from './app.ts';
import { errorResponse, supportCodeOf } from './http.ts';
import { clientAddress, trustsProxy } from '../lib/auth-failures.ts';
import { nextRequestId, tagRequest } from '../lib/request-ids.ts';
import { proveBoxKey } from '../ops/box-key.ts';
import { unlogged } from '../lib/refusal-log.ts';
import { errorLine } from '../lib/log.ts';
import { appPlatform } from '../platform/registry.ts';

export interface RunningServer {
  app: App;
  server: Server<undefined>;
  /** The in-process handoff worker; with a relay thread it is never started (the thread runs its own). */
  worker: HandoffWorker;
  /** The relay thread holding the receipt commit and the handoff worker (see StartOptions.relayThread), or null. */
  relay: RelayThread | null;
  url: string;
  /** Stops accepting, finishes in-flight requests and commits, stops the worker, closes the database. */
  stop(): Promise<void>;
}

export interface StartOptions {
  port: number;
  host: string;
  /** Run the handoff worker (default true). */
  worker?: boolean;
  destinations?: Destinations;
  /** Log one line per request (method, path, status, duration); never headers or bodies. */
  logRequests?: boolean;
  /** Derives the public URL from the port actually bound (`--port 0`), before the first request is served. */
  publicUrlFor?: (boundPort: number) => string;
  /**
   * Commit receipts and run the handoff worker on a thread of their own, with their own connection (a SQLite file;
   * ignored in memory and on PostgreSQL, whose driver never blocks the thread). The worker there uses the default
   * destinations and reads tokens from process.env. Default false (serve: HOOKRELAY_RELAY_THREAD=on).
   */
  relayThread?: boolean;
  /** How often the alert sweep runs, ms (default ALERTS.sweepEveryMs, a minute; tests shorten it). */
  alertSweepMs?: number;
}

/** Bun.serve, with a busy port answered as a `conflict` that names it (the CLI exits non-zero with it). */
function listen(opts: StartOptions, options: Parameters<typeof Bun.serve<undefined>>[0]): Server<undefined> {
  try {
    return Bun.serve(options);
  } catch (err) {
    if ((err as { code?: string }).code !== 'EADDRINUSE') throw err;
    throw new AppError('conflict', `Port ${opts.port} on ${opts.host} is already in use. Stop what listens there, or choose another --port.`, {
      port: opts.port,
      host: opts.host,
    });
  }
}

/**
 * An answer given outside the app (shutdown, a crash in a handler) in the shape the path documents: inbound
 * paths `{code, message}`, the Agent Operations API its error envelope.
 */
function edgeAnswer(path: string, err: AppError): Response {
  if (path.startsWith('/agent/')) return errorResponse(null, err);
  return Response.json({ code: err.code, message: err.message }, { status: err.status, headers: err.headers });
}

/** Whether the request asks for its connection to be closed after the answer. */
function asksClose(req: Request): boolean {
  const c = req.headers.get('connection');
  return c !== null && /close/i.test(c); // no other connection option holds the word
}

/**
 * Closes the connection after `res`: asked for by the client (`Connection: close`, or HTTP/1.0 without a Host
 * header, the one HTTP/1.0 request Bun lets a handler tell apart), or by our own answer (a body cut, a stop). Bun
 * 1.3.14 closes it by itself only when the handler answered without waiting (oven-sh/bun#35555); the socket's idle
 * timeout is cut to its least instead, so it closes within Bun's timer tick of ~4 s after the answer, not at 120 s.
 * An event stream is left alone: it would be cut while quiet.
 */
function closeAfter(srv: Server<undefined>, req: Request, res: Response): void {
  res.headers.set('Connection', 'close');
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) srv.timeout(req, 1);
}

const SHUTTING_DOWN = new AppError('shutting_down', 'The server is stopping; nothing was done. Retry shortly.', undefined, undefined, {
  'Retry-After': '5',
  Connection: 'close',
});

/** How often at most serve logs that a sealed secret did not open (each receipt answers 503 meanwhile). */
const KEY_MISMATCH_LOG_EVERY_MS = 60_000;

export async function startServer(core: Core, opts: StartOptions): Promise<RunningServer> {
  // The key must open the box's secrets before anyone is answered (src/ops/box-key.ts); exits 2 when it does not.
  await proveBoxKey(core.repo, core.box, core.repo.capabilities.multiInstance ? 'the PostgreSQL database' : 'this box', core.clock.now());
  let mismatchLoggedAt = -Infinity;
  core.box.onMismatch = () => {
    const now = performance.now();
    if (now - mismatchLoggedAt < KEY_MISMATCH_LOG_EVERY_MS) return;
    mismatchLoggedAt = now;
    core.log.error(
      `secret_key_mismatch: a secret sealed in the database (an endpoint's secret, a platform token) does not open with the key from ${core.box.source}: another instance sealed it with another key. What needs it answers 503 secret_key_mismatch; serve every instance with the box's own key.`,
    );
  };
  const app = createApp(core);
  const worker = new HandoffWorker(core, opts.destinations);
  const file = opts.relayThread ? core.repo.capabilities.relayFile : null;
  // Leases of a previous run (this is the only serve of the file) before anyone takes receipts.
  if (!core.repo.capabilities.multiInstance) await core.repo.releaseAllLeases(core.clock.now());
  // Intents a killed run left executing changed nothing (db/areas/intents.ts): previewed again before anyone asks.
  const reopen = () => core.repo.reopenDeadExecutions(core.clock.now());
  const reopened = await reopen();
  if (reopened) core.log.info(`intents: ${reopened} execution(s) interrupted by a stop were reopened; nothing they meant to change was made`);
  const relay = file ? await RelayThread.start(core, { sqlitePath: file.path, synchronous: file.synchronous, worker: opts.worker ?? true }) : null;
  if (relay) {
    app.writer.commitTo(relay);
    app.onEndpointChanged((id) => relay.endpointChanged(id));
    relay.onLost = (err) => app.storage.failed(err);
  } else app.onReceipts(() => worker.wake());
  const logRequests = opts.logRequests ?? true;
  const trustProxy = trustsProxy(core.config.env);
  let inFlight = 0;
  let draining = false;

  const server = listen(opts, {
    port: opts.port,
    hostname: opts.host,
    // Bun sets SO_REUSEPORT in production mode unless told not to: a second serve on a busy port would then
    // listen beside the first and share its connections instead of failing.
    reusePort: false,
    idleTimeout: core.config.idleTimeoutSeconds,
    // Bun's default follows NODE_ENV, so a server started from source would run in development mode: error pages
    // with stack traces, and a measurably slower request path. Always production.
    development: false,
    // Bun answers a body over this limit itself, with an empty 413, before any of our code runs. Every reader in
    // the app caps its own body (src/lib/body.ts) and answers its documented 413, so Bun's limit stays out of reach.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    async fetch(received, srv) {
      const started = performance.now();
      const url = received.url;
      // An HTTP/1.0 request without a Host header comes with a bare path for its URL, which URL parsers refuse.
      const bare = url.charCodeAt(0) === 47; // '/'
      const req = bare ? new Request(`http://localhost${url}`, received) : received;
      const requestId = nextRequestId();
      const receipt = url.includes('/hooks/');
      if (!receipt) tagRequest(req, requestId); // the inbound path reads no id: only the header and log line carry it
      const peer = () => srv.requestIP(received)?.address ?? null;
      let res: Response;
      // Bun's stop(false) closes the listener but still serves requests on open connections (1.4: those already arriving).
      if (draining) res = edgeAnswer(pathOf(req.url), SHUTTING_DOWN);
      else {
        inFlight++;
        try {
          res = await app.fetch(req, peer);
        } catch (err) {
          if (req.signal.aborted) {
            // The client hung up (mid-body, most often): nobody to answer, and no failure of ours.
            core.log.info(`${req.method} ${pathOf(req.url)} client closed the connection before the answer`);
            return new Response(null, { status: 400 });
          }
          // A body cut by its deadline or refused by the bound (src/lib/body.ts) where no handler answers it itself.
          if (err instanceof AppError) res = edgeAnswer(pathOf(req.url), err);
          else if (storageFault(err)) {
            // The database away under a route that does not answer it itself (lifecycle, webhooks, installs): a 503.
            app.storage.failed(err);
            res = edgeAnswer(pathOf(req.url), storageUnavailable(storageFault(err)!));
          } else {
            core.log.error(`unhandled error on ${req.method} ${pathOf(req.url)}`, { request: requestId });
            res = edgeAnswer(pathOf(req.url), new AppError('internal_error', 'Something went wrong on our side.'));
          }
        } finally {
          inFlight--;
        }
      }
      res.headers.set('X-Request-Id', requestId);
      if (bare || asksClose(req) || (res.status >= 400 && res.headers.get('connection') === 'close')) closeAfter(srv, received, res);
      // A refusal past a limit has no line of its own: the route's summary counts it (src/lib/refusal-log.ts).
      if (logRequests && !unlogged.has(res)) {
        const ms = (performance.now() - started).toFixed(1);
        // The client address costs Bun 5-7 µs to give: asked for every call but a receipt accepted (the hot path),
        // where a failure or refusal is what an operator traces.
        const client = res.status < 300 && receipt ? null : clientAddress(req, peer(), trustProxy);
        core.log.info(`${req.method} ${pathOf(req.url)} ${res.status} ${ms}ms`, { request: requestId, client, support: supportCodeOf(res) });
      }
      return res;
    },
    error() {
      return Response.json({ code: 'internal_error', message: 'Something went wrong on our side.' }, { status: 500 });
    },
  });
  if (opts.publicUrlFor) core.config.publicUrl = opts.publicUrlFor(server.port!);

  if (!relay && (opts.worker ?? true)) {
    worker.start();
    app.writer.handOffTo(worker.directHandoff((id) => app.endpoints.get(id)));
  }

  // Peers on one PostgreSQL: an endpoint changed elsewhere is dropped from this cache at once (not after its
  // TTL), and events made due elsewhere (a replay, a commit whose receipts its own worker could not take) wake
  // this worker before its next poll.
  const unlisten = await core.repo.listen?.((signal, payload) => (signal === 'endpoint' ? app.endpoints.invalidate(payload) : worker.wake()));

  // The app's webhooks recorded but not processed (a crash between their 200 and their processing, a failed run) are
  // taken up once a minute (AppPlatform.sweep: the module is loaded with the first sweep, not at start); so are peers' dead executions.
  const webhookSweep = setInterval(() => {
    void appPlatform.sweep(core).catch((err: unknown) => core.log.error(`shopify webhooks sweep: ${errorLine(err)}`));
    // On PostgreSQL a peer may die mid-execute while this instance runs: its intents are reopened here too.
    if (core.repo.capabilities.multiInstance) void reopen().catch(() => {});
  }, 60_000);
  webhookSweep.unref();

  // Alerts (silence watch, credentials pause, uninstall, failed-authentication bursts) evaluated and handed to Flow once
  // a minute, with the handoff worker. On PostgreSQL every instance sweeps: the storage raises and sends each once.
  const alerts = (opts.worker ?? true) ? new AlertWatch(core) : null;
  const alertSweep = setInterval(() => {
    void alerts?.sweep().catch((err: unknown) => {
      const fault = storageFault(err);
      core.log.error(`alert sweep: ${fault ? `storage unavailable (${fault})` : errorLine(err)}`);
    });
  }, opts.alertSweepMs ?? ALERTS.sweepEveryMs);
  alertSweep.unref();

  const stores = await core.repo.listStores();
  if (stores.length === 0) {
    core.log.warn(
      'No store yet. Create one with: hookrelay init --shop your-store.myshopify.com, then hookrelay grant issue --shop your-store.myshopify.com --tier operator --ttl 8h',
    );
  }

  let stopping: Promise<void> | null = null;
  return {
    app,
    server,
    worker,
    relay,
    url: `http://${server.hostname?.includes(':') ? `[${server.hostname}]` : server.hostname}:${server.port}`,
    stop() {
      stopping ??= (async () => {
        // Stop accepting first: the listener closes, and requests still arriving on open connections get a 503.
        draining = true;
        const stopped = server.stop(false);
        await app.closeMcp(); // code mode's sandbox processes end with the server
        // Requests already inside the app finish (and commit) before the writer closes; at most 10 s.
        const deadline = Date.now() + 10_000;
        while (inFlight > 0 && Date.now() < deadline) await Bun.sleep(5);
        // Requests still arriving get their 503 first: Bun 1.4's stop(false) closes idle connections at once and
        // resolves once the others are answered, and its stop(true) would cut them (1.3's resolves at once).
        let grace: Timer | undefined;
        await Promise.race([stopped, new Promise((r) => (grace = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
        clearTimeout(grace);
        await server.stop(true); // whatever is still open past the deadline (on 1.3, idle keep-alive connections)
        await app.writer.close();
        await stopped;
        await relay?.stop();
        await worker.stop();
        clearInterval(webhookSweep);
        clearInterval(alertSweep);
        await alerts?.idle();
        await unlisten?.();
        await core.repo.close();
      })();
      return stopping;
    },
  };
}
