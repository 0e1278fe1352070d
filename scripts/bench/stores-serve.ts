/**
 * The measured side of `bun run bench --only=stores` (scripts/bench/stores.ts): serve as `hookrelay serve` runs it
 * (openCore, startServer with its worker and minute sweeps, request log at info), with every database statement it
 * executes counted, so the bench reports statements per minute from the process itself rather than guessing.
 *
 *   bun scripts/bench/stores-serve.ts --stats-file F [--data-dir D | --database-url URL]
 *
 * HOOKRELAY_SHOPIFY_ADMIN_URL names the fake Shopify (`…/{shop}`); the stores' client secret variable comes from
 * the environment. Counted by ./statement-counter.ts, from the drivers. The count, and the most executed statements
 * (their text, never a parameter), are written to the stats file once a second with the time.
 * Prints one ready line on stdout; stops cleanly on SIGTERM.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openCore } from '../../src/boot.ts';
import { stderrLog } from '../../src/lib/log.ts';
import { reexecWithJscEnv } from '../../src/server/runtime-env.ts';
import { startServer } from '../../src/server/serve.ts';
import { countStatements } from './statement-counter.ts';

reexecWithJscEnv();
const { values: a } = parseArgs({ options: { 'data-dir': { type: 'string' }, 'database-url': { type: 'string' }, 'stats-file': { type: 'string' } } });

const counter = countStatements();

const statsFile = a['stats-file']!;
const TOP = 12;
const writeStats = () =>
  writeFileSync(
    statsFile,
    JSON.stringify({
      at: Date.now(),
      statements: counter.total,
      top: counter.top(TOP),
    }),
  );

const core = await openCore({
  dataDir: a['data-dir'],
  databaseUrl: a['database-url'],
  log: stderrLog('info'),
  config: { publicUrl: 'http://127.0.0.1', shopifyAdminUrl: process.env.HOOKRELAY_SHOPIFY_ADMIN_URL ?? null },
});
const running = await startServer(core, { port: 0, host: '127.0.0.1' });
writeStats();
const tick = setInterval(writeStats, 1000);
process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid, url: running.url })}\n`);
await new Promise<void>((r) => process.once('SIGTERM', () => r()).once('SIGINT', () => r()));
clearInterval(tick);
await running.stop();
writeStats();
process.exit(0);
