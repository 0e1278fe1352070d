/** CLI test harness: a real server on a loopback port, and the CLI run as a subprocess with a clean environment. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tier } from '../../src/contract/scopes.ts';
import { HandoffWorker } from '../../src/relay/worker.ts';
import { addGrant, addStore, createTestEnv, type TestEnv } from '../helpers.ts';

export const ENTRY = new URL('../../commands/index.ts', import.meta.url).pathname;

export interface Api {
  env: TestEnv;
  url: string;
  worker: HandoffWorker;
  grant(tier?: Tier, opts?: { shop?: string; ttlMs?: number }): Promise<string>;
  stop(): Promise<void>;
}

/** createTestEnv behind Bun.serve on 127.0.0.1:<free port>, its public URL set to that address. */
export async function startApi(): Promise<Api> {
  let env: TestEnv | null = null;
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => env!.app.fetch(req) });
  const url = `http://127.0.0.1:${server.port}`;
  env = await createTestEnv({ publicUrl: url });
  await addStore(env, { platformAccountId: 'acct-1', installationId: 'inst-1' });
  const ready = env;
  return {
    env: ready,
    url,
    worker: new HandoffWorker(ready.core),
    grant: (tier = 'admin_assistant', opts = {}) => addGrant(ready, tier, opts),
    async stop() {
      server.stop(true);
      await ready.app.writer.close();
    },
  };
}

/** A port nothing listens on: bound, then released. */
export function closedPort(): number {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** A scratch HOME / XDG_CONFIG_HOME per test file; removed by the returned function. */
export function scratchHome(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-cli-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed: every command prints exactly one JSON document. */
  json: any;
}

/** What a run printed, as text (help, completion scripts, `sign --raw`, JSON lines). */
export interface CliText {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `bun commands/index.ts …` with only PATH, HOME, XDG_CONFIG_HOME and NO_COLOR=1 from here plus `env` (a key
 * set to undefined is left unset); cwd is the scratch dir, so no .env or developer variable leaks in. Async spawn:
 * the server lives in this process.
 */
export async function cliText(args: string[], opts: { home: string; env?: Record<string, string | undefined>; stdin?: string | Uint8Array }): Promise<CliText> {
  const proc = spawnCli(args, opts);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** The CLI as a child process with piped stdout and stderr, for runs read while they go (`events --follow`). */
export function spawnCli(args: string[], opts: { home: string; env?: Record<string, string | undefined>; stdin?: string | Uint8Array }) {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: opts.home,
    XDG_CONFIG_HOME: join(opts.home, '.config'),
    NO_COLOR: '1',
  };
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return Bun.spawn(['bun', ENTRY, ...args], {
    cwd: opts.home,
    env,
    stdin: opts.stdin === undefined ? 'ignore' : typeof opts.stdin === 'string' ? Buffer.from(opts.stdin) : opts.stdin,
    stdout: 'pipe',
    stderr: 'pipe',
  });
}

/** Like cliText, with stdout parsed: every command but help, completion and streams prints exactly one JSON document. */
export async function cli(args: string[], opts: { home: string; env?: Record<string, string | undefined>; stdin?: string | Uint8Array }): Promise<CliResult> {
  const { code, stdout, stderr } = await cliText(args, opts);
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    throw new Error(`stdout of ${args.join(' ')} is not one JSON document (exit ${code}):\n${stdout}\nstderr:\n${stderr}`);
  }
  return { code, stdout, stderr, json };
}
