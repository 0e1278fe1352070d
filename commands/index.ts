#!/usr/bin/env bun
/** The hookrelay entry: lazy subcommands, and the one place errors become exit codes. */
import { defineCommand, runCommand, showUsage, type CommandDef } from 'citty';
import { AppError, ERROR_CODES, EXIT } from '../src/contract/errors.ts';
import { VERSION } from '../src/version.ts';
import { exitDocument } from './_exit.ts';
import { printJson } from './_output.ts';

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
    migrate: () => load(import('./migrate.ts')),
    plan: () => load(import('./plan.ts')),
    audit: () => load(import('./audit.ts')),
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
  },
});

function wantsHelp(args: string[]): boolean {
  return args.includes('--help') || args.includes('-h') || args.length === 0;
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
  if (wantsHelp(rawArgs)) {
    await showUsage(...(await resolveSub(main, rawArgs)));
    return rawArgs.length === 0 ? EXIT.usage : EXIT.ok;
  }
  try {
    await runCommand(main, { rawArgs });
    return EXIT.ok;
  } catch (err) {
    const ended = exitDocument(err);
    if (ended) {
      printJson(ended.document);
      return ended.exitCode;
    }
    if (err instanceof AppError) {
      printJson({ error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: err.details } : {}) } });
      return ERROR_CODES[err.code].exitCode;
    }
    if (err instanceof Error && (err.name === 'CLIError' || /Unknown command|Missing required/i.test(err.message))) {
      printJson({ error: { code: 'usage', message: err.message } });
      return EXIT.usage;
    }
    printJson({ error: { code: 'internal_error', message: err instanceof Error ? err.message.split('\n')[0] : 'error' } });
    return EXIT.error;
  }
}

async function resolveSub(cmd: CommandDef, args: string[]): Promise<[CommandDef, CommandDef?]> {
  let current = cmd;
  let parent: CommandDef | undefined;
  for (const a of args) {
    if (a.startsWith('-')) break;
    const subs = (await (typeof current.subCommands === 'function' ? current.subCommands() : current.subCommands)) as
      | Record<string, CommandDef | (() => Promise<CommandDef>)>
      | undefined;
    const next = subs?.[a];
    if (!next) break;
    parent = current;
    current = typeof next === 'function' ? await next() : next;
  }
  return [current, parent];
}

if (import.meta.main) process.exit(await run(process.argv.slice(2)));
