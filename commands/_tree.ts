/** The command tree read from the citty definitions: resolve a command line, refuse unknown flags and words. */
import type { ArgDef, ArgsDef, CommandDef, CommandMeta } from 'citty';
import { EXIT } from '../src/contract/errors.ts';
import { nearest } from '../src/lib/closest.ts';
import { CommandExit } from './_exit.ts';

declare module 'citty' {
  interface CommandMeta {
    /** Example command lines shown by `--help` (one at least per runnable command). */
    examples?: string[];
  }
}

/** A command of any args, as citty types its subcommands. */
export type Cmd = CommandDef<ArgsDef>;

let rootCommand: Cmd | undefined;

/** The entry registers its root command here, so `help` and `completion` can read the tree without importing the entry. */
export function setRoot(cmd: Cmd): void {
  rootCommand = cmd;
}

export function root(): Cmd {
  if (!rootCommand) throw new Error('The root command is not registered.');
  return rootCommand;
}

const resolveValue = async <T>(v: T | Promise<T> | (() => T) | (() => Promise<T>) | undefined): Promise<T | undefined> =>
  typeof v === 'function' ? await (v as () => T | Promise<T>)() : await v;

export async function metaOf(cmd: Cmd): Promise<CommandMeta> {
  return (await resolveValue(cmd.meta)) ?? {};
}

export async function argsOf(cmd: Cmd): Promise<Record<string, ArgDef>> {
  return ((await resolveValue(cmd.args)) ?? {}) as Record<string, ArgDef>;
}

/** The subcommand definitions, unloaded: resolving one imports its module, so a run loads only its own. */
async function lazySubsOf(cmd: Cmd): Promise<Record<string, Cmd | (() => Promise<Cmd>)>> {
  return ((await resolveValue(cmd.subCommands)) ?? {}) as Record<string, Cmd | (() => Promise<Cmd>)>;
}

/** The subcommands by name, all loaded (hidden ones included; callers filter on meta.hidden). */
export async function subsOf(cmd: Cmd): Promise<Record<string, Cmd>> {
  const subs = await lazySubsOf(cmd);
  const out: Record<string, Cmd> = {};
  for (const [name, sub] of Object.entries(subs)) out[name] = (await resolveValue(sub)) as Cmd;
  return out;
}

/** A usage error (exit 2): the one JSON error document, naming what was wrong. */
function usageError(message: string, details?: Record<string, unknown>): CommandExit {
  return new CommandExit({ error: { code: 'usage', message, ...(details ? { details } : {}) } }, EXIT.usage);
}

/** The closest known name within a third of its length (at least 2 edits), or one it starts; else undefined. */
export function closest(word: string, known: string[]): string | undefined {
  const best = nearest(word, known);
  if (best && best.distance <= Math.max(2, Math.floor(word.length / 3))) return best.name;
  return known.find((k) => k.startsWith(word) && word.length >= 3);
}

const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();

interface FlagSpec {
  name: string;
  type: ArgDef['type'];
}

/** Every spelling citty accepts for a flag (name, kebab-case, aliases) mapped to its declaration. */
function flagTable(args: Record<string, ArgDef>): Map<string, FlagSpec> {
  const table = new Map<string, FlagSpec>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === 'positional') continue;
    const spec = { name, type: def.type };
    const alias = 'alias' in def ? def.alias : undefined;
    for (const n of [name, kebab(name), ...(Array.isArray(alias) ? alias : alias ? [alias] : [])]) table.set(n, spec);
  }
  return table;
}

export interface Resolved {
  cmd: Cmd;
  /** Command words from the root, e.g. ['hookrelay', 'grant', 'issue']. */
  path: string[];
}

/**
 * Walks `rawArgs` down the tree and checks every token against the declared args of the command it belongs to:
 * an unknown flag, a string flag without a value, an extra positional or an unknown command is a usage error
 * naming it (with the nearest known name). citty itself ignores all of these.
 */
export async function resolveStrict(root: Cmd, rawArgs: string[], opts: { help?: boolean } = {}): Promise<Resolved> {
  let cmd = root;
  const path = [(await metaOf(root)).name ?? 'hookrelay'];
  const unknown: string[] = [];
  const suggestions: Record<string, string> = {};
  let args = await argsOf(cmd);
  let flags = flagTable(args);
  let subs = await lazySubsOf(cmd);
  const positionals: string[] = [];
  let literal = false;
  for (let i = 0; i < rawArgs.length; i++) {
    const tok = rawArgs[i]!;
    if (!literal && tok === '--') {
      literal = true;
      continue;
    }
    if (!literal && tok.startsWith('-') && tok !== '-') {
      const [rawName, inline] = tok.replace(/^--?/, '').split(/=(.*)/s, 2) as [string, string | undefined];
      const negated = rawName.startsWith('no-') && flags.get(rawName.slice(3))?.type === 'boolean';
      const spec = flags.get(rawName) ?? (negated ? flags.get(rawName.slice(3)) : undefined);
      if (!spec) {
        unknown.push(tok.split('=')[0]!);
        const near = closest(rawName, [...flags.keys()]);
        if (near) suggestions[tok.split('=')[0]!] = `--${near}`;
        continue;
      }
      if (spec.type !== 'boolean' && inline === undefined) {
        const value = rawArgs[i + 1];
        if (value === undefined) throw usageError(`--${spec.name} needs a value. See \`${path.join(' ')} --help\`.`);
        i++;
      }
      continue;
    }
    const names = Object.keys(subs);
    if (names.length && positionals.length === 0 && !literal) {
      const next = subs[tok] ? ((await resolveValue(subs[tok])) as Cmd) : await findByAlias(await subsOf(cmd), tok);
      if (!next) {
        const visible = await visibleNames(await subsOf(cmd));
        const near = closest(tok, visible);
        throw usageError(`Unknown command \`${tok}\`${near ? `; did you mean \`${near}\`?` : '.'} See \`${path.join(' ')} --help\`.`, {
          command: tok,
          ...(near ? { didYouMean: near } : {}),
        });
      }
      if (unknown.length) break;
      cmd = next;
      path.push(tok);
      args = await argsOf(cmd);
      flags = flagTable(args);
      subs = await lazySubsOf(cmd);
      continue;
    }
    positionals.push(tok);
  }
  if (unknown.length) {
    const hints = unknown.map((u) => (suggestions[u] ? `${u} (did you mean ${suggestions[u]}?)` : u));
    throw usageError(`Unknown ${unknown.length === 1 ? 'flag' : 'flags'} for \`${path.join(' ')}\`: ${hints.join(', ')}. See \`${path.join(' ')} --help\`.`, {
      unknownFlags: unknown,
      ...(Object.keys(suggestions).length ? { didYouMean: suggestions } : {}),
    });
  }
  const declared = Object.values(args).filter((a) => a.type === 'positional').length;
  if (positionals.length > declared) {
    const extra = positionals.slice(declared);
    throw usageError(
      `Unexpected ${extra.length === 1 ? 'argument' : 'arguments'} for \`${path.join(' ')}\`: ${extra.join(' ')}. See \`${path.join(' ')} --help\`.`,
      {
        unexpectedArguments: extra,
      },
    );
  }
  if (!opts.help && Object.keys(subs).length && !cmd.run && positionals.length === 0) {
    throw usageError(`\`${path.join(' ')}\` needs a command: ${(await visibleNames(await subsOf(cmd))).join(', ')}.`);
  }
  return { cmd, path };
}

/** The names a user may type: not hidden, with aliases. */
async function visibleNames(subs: Record<string, Cmd>): Promise<string[]> {
  const out: string[] = [];
  for (const [name, sub] of Object.entries(subs)) {
    const meta = await metaOf(sub);
    if (meta.hidden) continue;
    out.push(name, ...[meta.alias ?? []].flat());
  }
  return out;
}

async function findByAlias(subs: Record<string, Cmd>, word: string): Promise<Cmd | undefined> {
  for (const sub of Object.values(subs)) if ([(await metaOf(sub)).alias ?? []].flat().includes(word)) return sub;
  return undefined;
}
