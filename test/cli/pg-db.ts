/**
 * PostgreSQL for CLI tests: a fresh database per call (dropped when the file ends), reached by a URL holding a
 * canary password that must never show in any output, and `serve` as a child process read until it listens.
 */
import pg from 'pg';
import { TEST_DATABASE_URL } from '../fixtures/storage.ts';
import { ENTRY } from './harness.ts';

/** The password in every test URL (trust authentication ignores it): any output holding it leaked the URL. */
export const CANARY = 'canaryPw7Q9z';

const created: string[] = [];
const roles: string[] = [];

/**
 * Drops the databases and roles made so far. Each test file registers it (`afterAll(dropCreated, 60_000)`): a hook
 * registered here would belong to whichever file imported this module first.
 */
export async function dropCreated(): Promise<void> {
  if (!TEST_DATABASE_URL || !(created.length || roles.length)) return;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  for (const name of created.splice(0)) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  for (const name of roles.splice(0)) await admin.query(`DROP ROLE IF EXISTS "${name}"`);
  await admin.end();
}

/** A login role with no right to create tables in `public` (PostgreSQL 15's default for non-owners). */
export async function limitedRole(): Promise<string> {
  const name = `hr_cli_ro_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL! });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE "${name}" LOGIN`);
  } finally {
    await admin.end();
  }
  roles.push(name);
  return name;
}

/** `TEST_DATABASE_URL` with another database, host or port, and the canary password. */
export function canaryUrl(database: string, hostPort?: string): string {
  const u = new URL(TEST_DATABASE_URL!);
  u.password = CANARY;
  u.pathname = `/${database}`;
  if (hostPort) u.host = hostPort;
  return u.toString();
}

/** A new empty database on the test server; its canary URL and name. */
export async function freshDatabase(): Promise<{ name: string; url: string }> {
  const name = `hr_cli_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL! });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  created.push(name);
  return { name, url: canaryUrl(name) };
}

/** Runs one query on a database (the test's own view of what the CLI left there). */
export async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

export interface Served {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
  /** stderr up to the listening line. */
  log: string;
  /** SIGTERM, then everything it logged. */
  stop(): Promise<string>;
}

/** `hookrelay serve --port 0 …args`; resolves once it logs the bound address. */
export async function startServe(args: string[], opts: { cwd: string; env: Record<string, string> }): Promise<Served> {
  const proc = Bun.spawn(['bun', ENTRY, 'serve', '--port', '0', ...args], { cwd: opts.cwd, env: opts.env, stdout: 'pipe', stderr: 'pipe' });
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let log = '';
  for (;;) {
    const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
    if (m) {
      const rest = (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return log;
          log += decoder.decode(value);
        }
      })();
      return {
        proc,
        url: m[1]!,
        log,
        async stop() {
          proc.kill('SIGTERM');
          await proc.exited;
          return `${await rest}${await new Response(proc.stdout as ReadableStream).text()}`;
        },
      };
    }
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve exited before listening (exit ${await proc.exited}):\n${log}${await new Response(proc.stdout as ReadableStream).text()}`);
    log += decoder.decode(value);
  }
}
