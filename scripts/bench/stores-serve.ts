/**
 * The measured side of `bun run bench --only=stores` (scripts/bench/stores.ts): serve as `hookrelay serve` runs it
 * (openCore, startServer with its worker and minute sweeps, request log at info), with every database statement it
 * executes counted, so the bench reports statements per minute from the process itself rather than guessing.
 *
 *   bun scripts/bench/stores-serve.ts --stats-file F [--data-dir D | --database-url URL]
 *
 * HOOKRELAY_SHOPIFY_ADMIN_URL names the fake Shopify (`…/{shop}`); the stores' client secret variable comes from
 * the environment. Counted: each call that runs SQL through bun:sqlite (a prepared statement's run/all/get/values/
 * iterate, Database.run/exec; the BEGIN/COMMIT its transaction() helper issues natively are not) or pg
 * (Client.query, BEGIN and COMMIT included). The count, and the most executed statements (their text, never a
 * parameter), are written to the stats file once a second with the time.
 * Prints one ready line on stdout; stops cleanly on SIGTERM.
 */
import { Database } from 'bun:sqlite';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openCore } from '../../src/boot.ts';
import { stderrLog } from '../../src/lib/log.ts';
import { reexecWithJscEnv } from '../../src/server/runtime-env.ts';
import { startServer } from '../../src/server/serve.ts';

reexecWithJscEnv();
const { values: a } = parseArgs({ options: { 'data-dir': { type: 'string' }, 'database-url': { type: 'string' }, 'stats-file': { type: 'string' } } });

let statements = 0;
/** Executions by statement text (its first 120 characters), for the top of the list the stats file carries. */
const bySql = new Map<string, number>();
const note = (sql: unknown) => {
  statements++;
  const key = String(typeof sql === 'object' && sql !== null && 'text' in sql ? sql.text : sql)
    .replace(/\s+/g, ' ')
    .slice(0, 120);
  bySql.set(key, (bySql.get(key) ?? 0) + 1);
};
const STATEMENT_METHODS = ['run', 'all', 'get', 'values', 'iterate'] as const;
const counted = new WeakSet<object>();
/** bun:sqlite gives each statement its own methods (fast paths), so they are wrapped per statement, once. */
function countStatement<T extends object>(st: T, sql: unknown): T {
  if (counted.has(st)) return st;
  counted.add(st);
  const s = st as Record<string, (...args: unknown[]) => unknown>;
  for (const m of STATEMENT_METHODS) {
    const original = s[m]!;
    s[m] = function (this: unknown, ...args: unknown[]) {
      note(sql);
      return original.apply(this, args);
    };
  }
  return st;
}
const dbProto = Database.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
for (const m of ['prepare', 'query']) {
  const original = dbProto[m]!;
  dbProto[m] = function (this: unknown, ...args: unknown[]) {
    return countStatement(original.apply(this, args) as object, args[0]);
  };
}
for (const m of ['run', 'exec']) {
  const original = dbProto[m]!;
  dbProto[m] = function (this: unknown, ...args: unknown[]) {
    note(args[0]);
    return original.apply(this, args);
  };
}
const pgQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
(pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: unknown, ...args: unknown[]) {
  note(args[0]);
  return pgQuery.apply(this, args);
};

const statsFile = a['stats-file']!;
const TOP = 12;
const writeStats = () =>
  writeFileSync(
    statsFile,
    JSON.stringify({
      at: Date.now(),
      statements,
      top: [...bySql].sort((x, y) => y[1] - x[1]).slice(0, TOP),
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
