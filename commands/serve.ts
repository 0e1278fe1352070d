import { defineCommand } from 'citty';
import { databasePath, describeStorage, locateDatabaseUrl, locateDataDir, openCore } from '../src/boot.ts';
import { AppError } from '../src/contract/errors.ts';
import { mcpConfigFromEnv } from '../src/core.ts';
import { describeSettings, describeStrayVariable, loadSettings, SETTINGS_FILE, strayVariables } from '../src/settings.ts';
import { LOG_FORMATS, stderrLog, type LogFormat } from '../src/lib/log.ts';
import { describeMovedTo, movedMarker, movedRefusal } from '../src/ops/moved-box.ts';
import { credentialVariableMissing, describeDestination, storedAppClientId, storedPublicUrl } from '../src/ops/stores.ts';
import { platformOf, platforms } from '../src/platform/registry.ts';
import { startServer } from '../src/server/serve.ts';
import { storageArgs } from './_args.ts';

export default defineCommand({
  meta: {
    name: 'serve',
    description: 'Run the relay in the foreground: inbound hooks, the Agent Operations API and the handoff worker',
    examples: ['hookrelay serve --port 8787  # foreground; use a second terminal'],
  },
  args: {
    port: { type: 'string', description: 'Port (default 8787, env HOOKRELAY_PORT; 0 picks a free one)' },
    host: { type: 'string', description: 'Interface (default 127.0.0.1, env HOOKRELAY_HOST); 0.0.0.0 or :: listens on every one and needs --public-url' },
    'public-url': {
      type: 'string',
      description:
        'Base of endpoint URLs (env HOOKRELAY_PUBLIC_URL; else hookrelay store set --public-url; else http://host:port, 127.0.0.1 for a wildcard host)',
    },
    'force-moved': { type: 'boolean', description: 'Serve a SQLite box that hookrelay migrate --from marked moved (its MOVED file says where it went)' },
    config: { type: 'string', description: `Settings file (default: ${SETTINGS_FILE} in the data directory, when there is one; env HOOKRELAY_CONFIG)` },
    'log-format': { type: 'string', description: 'text (default) or json: one JSON object per line for a log shipper (env HOOKRELAY_LOG_FORMAT)' },
    ...storageArgs,
  },
  async run({ args }) {
    const port = Number(args.port ?? process.env.HOOKRELAY_PORT ?? 8787);
    const host = args.host ?? process.env.HOOKRELAY_HOST ?? '127.0.0.1';
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new AppError('invalid_input', '--port must be 0-65535.');
    const format = args['log-format'] ?? process.env.HOOKRELAY_LOG_FORMAT ?? 'text';
    if (!LOG_FORMATS.includes(format as LogFormat)) throw new AppError('invalid_input', `--log-format must be ${LOG_FORMATS.join(' or ')}.`);
    const log = stderrLog('info', format as LogFormat);
    const dataDir = locateDataDir(args['data-dir']);
    log.info(describeStorage(dataDir, args['database-url']));
    if (!locateDatabaseUrl(args['database-url'])) {
      // Checked before the database is opened (and migrated): a moved box is not served, so it cannot run beside its move.
      const moved = movedMarker(dataDir.path, databasePath(dataDir.path));
      if (moved && !args['force-moved']) throw movedRefusal(moved, dataDir.path, 'serve');
      if (moved) log.warn(`--force-moved: serving this box although it was moved to ${describeMovedTo(moved.to)}; what it receives is not in that database.`);
    }
    // hookrelay.toml, then each setting's variable; the flags below win over both (src/settings.ts).
    const settings = loadSettings({ file: args.config ?? process.env.HOOKRELAY_CONFIG ?? null, dataDir: dataDir.path, env: process.env });
    const explicitUrl = args['public-url'] ?? (settings.get('public_url') as string | undefined);
    const advertised = advertisedHost(host);
    const hostPart = advertised.includes(':') ? `[${advertised}]` : advertised;
    const core = await openCore({
      dataDir: dataDir.path,
      databaseUrl: args['database-url'],
      serveLock: true,
      log,
      config: {
        publicUrl: explicitUrl ?? `http://${hostPart}:${port}`,
        shopifyAdminUrl: process.env.HOOKRELAY_SHOPIFY_ADMIN_URL ?? null,
        mcp: mcpConfigFromEnv(process.env),
      },
    });
    settings.apply(core.config);
    if (args['public-url']) {
      core.config.publicUrl = args['public-url'];
      core.config.settingSources = { ...core.config.settingSources, public_url: 'flag' };
    }
    log.info(describeSettings(settings));
    if (settings.sources.retry_schedule) {
      const schedule = core.config.handoff.retrySchedule;
      log.info(
        `handoff retries: ${schedule.length} over up to ${Math.round(schedule.reduce((a, b) => a + b, 0) / 60_000)} min (${settings.sources.retry_schedule})`,
      );
    }
    const fromSetting = explicitUrl ? null : await storedPublicUrl(core);
    if (fromSetting) core.config.publicUrl = fromSetting;
    core.config.appClientId = await storedAppClientId(core);
    const stores = await core.repo.listStores();
    // A misspelt variable would be ignored without a word: named once here, with the closest known one.
    const storeVariables = stores.flatMap((s) => [s.adminTokenEnv, s.clientSecretEnv]).filter((n): n is string => !!n);
    for (const stray of strayVariables(process.env, storeVariables)) log.warn(describeStrayVariable(stray));
    for (const s of stores) (credentialVariableMissing(s, core.config.env) ? log.warn : log.info)(describeDestination(s, core.config.env));
    // Each platform's word on its stores: an API version near its end, a secret its callbacks need.
    for (const platform of platforms) {
      const mine = stores.filter((s) => platformOf(s.destination) === platform);
      for (const line of platform.startWarnings(mine, core.config.env, Date.now())) log.warn(line);
    }
    // Without an explicit public URL, endpoint URLs and the manifest carry the port actually bound (--port 0).
    const publicUrlFor = explicitUrl || fromSetting ? undefined : (bound: number) => `http://${hostPart}:${bound}`;
    // HOOKRELAY_RELAY_THREAD=on: commit and hand off on a thread of their own (a box with cores to spare; see
    // docs/benchmarks.md). Off by default: on one core the thread's second runtime costs more than it saves.
    const relayThread = /^(1|true|yes|on)$/i.test(process.env.HOOKRELAY_RELAY_THREAD?.trim() ?? '');
    const running = await startServer(core, { port, host, publicUrlFor, relayThread });
    if (advertised !== host && !explicitUrl && !fromSetting) {
      log.warn(
        `serve listens on every interface (--host ${host}) but no public URL is set: endpoint URLs, the manifest and the lifecycle callback advertise ${core.config.publicUrl}, reachable from this machine only. Pass --public-url (or HOOKRELAY_PUBLIC_URL, or hookrelay store set --public-url) with the URL senders and Shopify reach.`,
      );
    }
    log.info(`hookrelay listening on ${running.url} (public URL ${core.config.publicUrl}); runs in the foreground, stop with Ctrl-C`);
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

/**
 * The host a URL may name for the address serve listens on: a wildcard (0.0.0.0, ::) is no address a client can
 * reach, so it is advertised as the loopback address of its family; any other host as given.
 */
function advertisedHost(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === '0.0.0.0') return '127.0.0.1';
  if (bare.includes(':') && /^[0:]+$/.test(bare)) return '::1';
  return host;
}
