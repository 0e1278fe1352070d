import { defineCommand } from 'citty';
import { openCore } from '../src/boot.ts';
import { AppError } from '../src/contract/errors.ts';
import { mcpConfigFromEnv } from '../src/core.ts';
import { stderrLog } from '../src/lib/log.ts';
import { startServer } from '../src/server/serve.ts';
import { dataDirArg } from './_args.ts';

export default defineCommand({
  meta: { name: 'serve', description: 'Run the relay: inbound hooks, the Agent Operations API and the handoff worker', examples: ['hookrelay serve --port 8787  # foreground; use a second terminal'] },
  args: {
    port: { type: 'string', description: 'Port (default 8787, env HOOKRELAY_PORT)' },
    host: { type: 'string', description: 'Interface (default 127.0.0.1, env HOOKRELAY_HOST)' },
    ...dataDirArg,
  },
  async run({ args }) {
    const port = Number(args.port ?? process.env.HOOKRELAY_PORT ?? 8787);
    const host = args.host ?? process.env.HOOKRELAY_HOST ?? '127.0.0.1';
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new AppError('invalid_input', '--port must be 0-65535.');
    const log = stderrLog();
    const core = await openCore({
      dataDir: args['data-dir'],
      log,
      config: {
        publicUrl: process.env.HOOKRELAY_PUBLIC_URL ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
        shopifyAdminUrl: process.env.HOOKRELAY_SHOPIFY_ADMIN_URL ?? null,
        mcp: mcpConfigFromEnv(process.env),
      },
    });
    const running = await startServer(core, { port, host });
    log.info(`hookrelay listening on ${running.url} (public URL ${core.config.publicUrl})`);
    await new Promise<void>((resolve) => {
      const shutdown = (signal: string) => {
        log.info(`${signal}: finishing in-flight work`);
        running.stop().then(resolve, resolve);
      };
      process.once('SIGTERM', () => shutdown('SIGTERM'));
      process.once('SIGINT', () => shutdown('SIGINT'));
    });
    log.info('stopped');
  },
});
