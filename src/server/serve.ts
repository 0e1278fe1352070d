/** `hookrelay serve`: Bun.serve + the app + the handoff worker, with request logging and a clean SIGTERM. */
import type { Server } from 'bun';
import type { Core } from '../core.ts';
import { HandoffWorker, type Destinations } from '../relay/worker.ts';
import { createApp, pathOf, type App } from './app.ts';

export interface RunningServer {
  app: App;
  server: Server<undefined>;
  worker: HandoffWorker;
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
}

export async function startServer(core: Core, opts: StartOptions): Promise<RunningServer> {
  const app = createApp(core);
  const worker = new HandoffWorker(core, opts.destinations);
  app.onReceipts(() => worker.wake());
  const logRequests = opts.logRequests ?? true;
  let inFlight = 0;

  const server = Bun.serve({
    port: opts.port,
    hostname: opts.host,
    idleTimeout: core.config.idleTimeoutSeconds,
    // Bun's default follows NODE_ENV, so a server started from source would run in development mode: error pages
    // with stack traces, and a measurably slower request path. Always production.
    development: false,
    maxRequestBodySize: core.config.maxBodyBytes * 2,
    async fetch(req) {
      const started = performance.now();
      let res: Response;
      inFlight++;
      try {
        res = await app.fetch(req);
      } catch {
        core.log.error(`unhandled error on ${req.method} ${pathOf(req.url)}`);
        res = Response.json({ code: 'internal_error', message: 'Something went wrong on our side.' }, { status: 500 });
      } finally {
        inFlight--;
      }
      if (logRequests) {
        const ms = (performance.now() - started).toFixed(1);
        core.log.info(`${req.method} ${pathOf(req.url)} ${res.status} ${ms}ms`);
      }
      return res;
    },
    error() {
      return Response.json({ code: 'internal_error', message: 'Something went wrong on our side.' }, { status: 500 });
    },
  });
  if (opts.publicUrlFor) core.config.publicUrl = opts.publicUrlFor(server.port!);

  if (core.repo.dialect === 'sqlite') await core.repo.releaseAllLeases(core.clock.now());
  if (opts.worker ?? true) {
    worker.start();
    app.writer.handOffTo(worker.directHandoff((id) => app.endpoints.get(id)));
  }

  const stores = await core.repo.listStores();
  if (stores.length === 0) {
    core.log.warn('No store yet. Create one with: hookrelay init --shop your-store.myshopify.com, then hookrelay grant issue --shop your-store.myshopify.com --tier operator --ttl 8h');
  }

  let stopping: Promise<void> | null = null;
  return {
    app,
    server,
    worker,
    url: `http://${server.hostname}:${server.port}`,
    stop() {
      stopping ??= (async () => {
        const stopped = server.stop(false);
        await app.closeMcpSessions(); // open MCP streams would otherwise hold the graceful stop
        // Requests already inside the app finish (and commit) before the writer closes; at most 10 s.
        const deadline = Date.now() + 10_000;
        while (inFlight > 0 && Date.now() < deadline) await Bun.sleep(5);
        await app.writer.close();
        await stopped;
        await worker.stop();
        await core.repo.close();
      })();
      return stopping;
    },
  };
}
