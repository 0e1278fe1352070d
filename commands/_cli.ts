/** What every client command shares: configuration, the client, stderr logging, JSON input and output. */
import type { ConsolaInstance } from 'consola';
import { AppError } from '../src/contract/errors.ts';
import { EXPECTED_FIELDS, expectedContext, loadProfilesFile, requireToken, resolveConfig, type ResolvedConfig } from '../src/client/config.ts';
import { HookrelayClient } from '../src/client/http.ts';
import { redactSecrets } from '../src/client/redact.ts';
import { track } from '../src/lib/drain.ts';
import { colorFor, printJson } from './_output.ts';

type ConnectionArgs = Record<string, unknown>;

/** The log lines client commands write (to stderr). */
export interface CliLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  success(message: string): void;
  fail(message: string): void;
}

/**
 * Logs go to stderr only: consola's default would send info lines to stdout and corrupt the JSON. consola decides
 * colour from stdout being a TTY, so the plain reporter is used unless stderr itself may be coloured. consola is
 * loaded with the first line: it costs a cold start 20-40 ms, and most runs (`status`, reads) log nothing. Lines
 * keep their order; the entry waits for them (`drained`) before it exits.
 */
export function createLog(args: { quiet?: unknown }): CliLog {
  let logger: Promise<ConsolaInstance> | undefined;
  const line =
    (kind: keyof CliLog) =>
    (message: string): void => {
      if (args.quiet) return;
      logger ??= (colorFor(process.stderr) ? import('consola') : import('consola/basic')).then((m) =>
        m.createConsola({ stdout: process.stderr, stderr: process.stderr, level: 3 }),
      );
      track(logger.then((c) => c[kind](message)));
    };
  return { info: line('info'), warn: line('warn'), error: line('error'), success: line('success'), fail: line('fail') };
}

export interface Connection {
  config: ResolvedConfig;
  client: HookrelayClient;
  log: CliLog;
}

/**
 * Resolves the configuration (flag > env > profile) and builds the client. `token`: `required` fails with exit 3
 * when there is none; `optional` uses one when configured (doctor); `none` never sends one (public reads).
 */
export async function connect(args: ConnectionArgs, opts: { token: 'required' | 'optional' | 'none' }): Promise<Connection> {
  const log = createLog(args);
  const str = (k: string) => (typeof args[k] === 'string' ? (args[k] as string) : undefined);
  const config = resolveConfig(
    {
      baseUrl: str('base-url'),
      profile: str('profile'),
      tokenEnv: str('token-env'),
      timeout: str('timeout'),
      expected: Object.fromEntries(EXPECTED_FIELDS.map((f) => [f.key, str(f.flag)])),
    },
    process.env,
    await loadProfilesFile(process.env),
  );
  for (const note of config.notes) log.warn(note);
  const token = opts.token === 'required' ? requireToken(config) : opts.token === 'optional' ? config.token.value : null;
  const client = new HookrelayClient({ baseUrl: config.baseUrl.value, token, expected: expectedContext(config), timeoutMs: config.timeoutMs });
  return { config, client, log };
}

/** Reads and parses a JSON file (`-` reads stdin). A missing or malformed file is invalid_input (exit 2). */
export async function readJsonInput(path: string | undefined, flag = '--json'): Promise<unknown> {
  if (!path) throw new AppError('invalid_input', `${flag} <file> is required.`);
  let text: string;
  try {
    text = path === '-' ? await Bun.stdin.text() : await Bun.file(path).text();
  } catch {
    throw new AppError('invalid_input', `Cannot read ${path}.`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('invalid_input', `${path} is not valid JSON.`);
  }
}

/** Prints the one JSON document of a command, with secrets and token-looking strings masked. */
export function emit(doc: unknown): void {
  printJson(redactSecrets(doc));
}

/** A fresh Idempotency-Key for an execute step. */
export function newIdempotencyKey(): string {
  return `idem_${crypto.randomUUID()}`;
}
