#!/usr/bin/env bun
/** The hookrelay entry: lazy subcommands, and the one place errors become exit codes. */
import { defineCommand, runCommand } from 'citty';
import { AppError, ERROR_CODES, EXIT } from '../src/contract/errors.ts';
import { VERSION } from '../src/version.ts';
import { exitDocument } from './_exit.ts';
import { printHelp } from './_help.ts';
import { redactSecrets } from '../src/client/redact.ts';
import { drained, printJson } from './_output.ts';
import { resolveStrict, setRoot } from './_tree.ts';

const load = <T>(p: Promise<{ default: T }>) => p.then((m) => m.default);

export const main = defineCommand({
  meta: {
    name: 'hookrelay',
    version: VERSION,
    description:
      'Self-hostable event relay for Shopify Flow. Exit codes: 0 ok, 1 error, 2 usage, 3 auth, 4 refused, 5 rate limited, 6 not found, 7 unreachable.',
  },
  subCommands: {
    serve: () => load(import('./serve.ts')),
    init: () => load(import('./init.ts')),
    store: () => load(import('./store.ts')),
    grant: () => load(import('./grant.ts')),
    console: () => load(import('./console.ts')),
    'metrics-token': () => load(import('./metrics-token.ts')),
    migrate: () => load(import('./migrate.ts')),
    backup: () => load(import('./backup.ts')),
    restore: () => load(import('./restore.ts')),
    plan: () => load(import('./plan.ts')),
    audit: () => load(import('./audit.ts')),
    requests: () => load(import('./requests.ts')),
    status: () => load(import('./status.ts')),
    docs: () => load(import('./docs.ts')),
    whoami: () => load(import('./whoami.ts')),
    doctor: () => load(import('./doctor.ts')),
    'plan-usage': () => load(import('./plan-usage.ts')),
    'create-endpoint': () => load(import('./create-endpoint.ts')),
    events: () => load(import('./events.ts')),
    event: () => load(import('./event.ts')),
    'replay-intent': () => load(import('./replay-intent.ts')),
    'expansion-request': () => load(import('./expansion-request.ts')),
    'support-request': () => load(import('./support-request.ts')),
    request: () => load(import('./request.ts')),
    sign: () => load(import('./sign.ts')),
    profile: () => load(import('./profile.ts')),
    mcp: () => load(import('./mcp.ts')),
    tail: () => load(import('./tail.ts')),
    completion: () => load(import('./completion.ts')),
    help: () => load(import('./help.ts')),
  },
});

setRoot(main);

/** citty colours names in its own messages; none of that belongs inside JSON. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is what an ANSI colour sequence starts with
const stripAnsi = (text: string) => text.replace(/\u001B\[[0-9;]*m/g, '');

/** An error document with secret shapes masked: a database URL typed where a command was expected, a driver message. */
const printErrorDocument = (doc: unknown) => printJson(redactSecrets(doc));
/** The same on one line of stderr. */
const printErrorLine = (doc: unknown) => void process.stderr.write(`${JSON.stringify(redactSecrets(doc))}\n`);

const HELP_FLAGS = new Set(['--help', '-h']);

function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return args.length === 0 || (end < 0 ? args : args.slice(0, end)).some((a) => HELP_FLAGS.has(a));
}

/** Runs the CLI and returns the exit code (tests call this in-process). */
export async function run(rawArgs: string[]): Promise<number> {
  if (rawArgs[0] === '__sandbox') {
    // Hidden: the MCP code-mode sandbox process the server spawns (src/mcp/sandbox-process.ts); not in help.
    return (await (await import('../src/mcp/sandbox-child.ts')).runSandboxChild()) ? EXIT.ok : EXIT.usage;
  }
  if (rawArgs.length === 1 && (rawArgs[0] === '--version' || rawArgs[0] === '-v')) {
    printJson({ version: VERSION });
    return EXIT.ok;
  }
  try {
    if (wantsHelp(rawArgs)) {
      await printHelp(
        main,
        rawArgs.filter((a) => !HELP_FLAGS.has(a)),
      );
      return rawArgs.length === 0 ? EXIT.usage : EXIT.ok;
    }
    await resolveStrict(main, rawArgs);
    await runCommand(main, { rawArgs });
    return EXIT.ok;
  } catch (err) {
    // `hookrelay mcp`'s stdout is the protocol channel: its usage errors go to stderr, as its start-up failures do.
    const printError = rawArgs[0] === 'mcp' ? printErrorLine : printErrorDocument;
    const ended = exitDocument(err);
    if (ended) {
      printError(ended.document);
      return ended.exitCode;
    }
    if (err instanceof AppError) {
      printError({ error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: err.details } : {}) } });
      return ERROR_CODES[err.code].exitCode;
    }
    if (err instanceof Error && (err.name === 'CLIError' || /Unknown command|Missing required/i.test(err.message))) {
      printError({ error: { code: 'usage', message: stripAnsi(err.message) } });
      return EXIT.usage;
    }
    printError({ error: { code: 'internal_error', message: err instanceof Error ? err.message.split('\n')[0] : 'error' } });
    return EXIT.error;
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  // serve runs with its JavaScriptCore options (src/server/runtime-env.ts); JSC reads them only at start.
  if (args[0] === 'serve' && !wantsHelp(args)) (await import('../src/server/runtime-env.ts')).reexecWithJscEnv();
  const code = await run(args);
  await drained();
  process.exit(code);
}
