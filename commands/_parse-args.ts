/**
 * `parseArgs` as node:util has it, for the options citty passes (type, short, default; strict false, positionals
 * allowed). The compiled binary gives it to citty in place of node:util (scripts/build.ts): loading node:util
 * costs a client command's cold start 12-30 ms, for a parser of a few lines. test/cli/parse-args.test.ts checks it
 * against node:util's on every command's own options and on hostile command lines; running from source, citty
 * keeps node:util's.
 *
 * Follows Node's lib/internal/util/parse_args/parse_args.js: a string option takes the next argument whatever it
 * is (`--base-url --quiet` sets base-url to "--quiet"); `--` ends the options; `-abc` is a group of short flags.
 */

type OptionConfig = { type: 'string' | 'boolean'; short?: string; default?: string | boolean };

export interface ParseArgsConfig {
  args?: string[];
  options?: Record<string, OptionConfig>;
  strict?: boolean;
  allowPositionals?: boolean;
}

export interface ParsedArgs {
  values: Record<string, string | boolean>;
  positionals: string[];
}

const own = <T>(o: Record<string, T> | undefined, k: string): T | undefined => (o && Object.hasOwn(o, k) ? o[k] : undefined);

export function parseArgs(config: ParseArgsConfig = {}): ParsedArgs {
  if (config.strict !== false || config.allowPositionals !== true) {
    throw new TypeError('This parseArgs serves citty only: strict false, positionals allowed.');
  }
  const options = config.options ?? {};
  for (const [name, o] of Object.entries(options)) validate(name, o);
  const typeOf = (long: string) => own(options, long)?.type;
  const longFor = (short: string) => Object.entries(options).find(([, o]) => own(o as Record<string, unknown>, 'short') === short)?.[0] ?? short;

  const values: ParsedArgs['values'] = Object.create(null);
  const positionals: string[] = [];
  const store = (long: string, value: string | undefined) => {
    if (long !== '__proto__') values[long] = value ?? true;
  };

  const rest = [...(config.args ?? [])];
  while (rest.length) {
    const arg = rest.shift()!;
    const next = rest[0];
    if (arg === '--') {
      positionals.push(...rest);
      break;
    }
    if (arg.length === 2 && arg[0] === '-' && arg[1] !== '-') {
      // -f, or -f VALUE for a string option
      const long = longFor(arg[1]!);
      store(long, typeOf(long) === 'string' && next != null ? rest.shift() : undefined);
      continue;
    }
    if (arg.length > 2 && arg[0] === '-' && arg[1] !== '-') {
      const long = longFor(arg[1]!);
      if (typeOf(long) === 'string') {
        // -fVALUE
        store(long, arg.slice(2));
        continue;
      }
      // -abc: a group of short options; a string option inside it takes the rest as its value
      const expanded: string[] = [];
      for (let i = 1; i < arg.length; i++) {
        const short = arg[i]!;
        if (typeOf(longFor(short)) !== 'string' || i === arg.length - 1) expanded.push(`-${short}`);
        else {
          expanded.push(`-${short}${arg.slice(i + 1)}`);
          break;
        }
      }
      rest.unshift(...expanded);
      continue;
    }
    if (arg.length > 2 && arg.startsWith('--')) {
      const eq = arg.indexOf('=', 3);
      if (eq < 0) {
        // --name, or --name VALUE for a string option
        const long = arg.slice(2);
        store(long, typeOf(long) === 'string' && next != null ? rest.shift() : undefined);
      } else store(arg.slice(2, eq), arg.slice(eq + 1));
      continue;
    }
    positionals.push(arg);
  }

  for (const [long, o] of Object.entries(options)) {
    const d = own(o as Record<string, unknown>, 'default') as string | boolean | undefined;
    if (d !== undefined && values[long] === undefined) values[long] = d;
  }
  return { values, positionals };
}

/** The configuration checks node:util makes (citty falls back to plain positionals when one throws). */
function validate(name: string, o: OptionConfig): void {
  if (o == null || typeof o !== 'object') throw new TypeError(`options.${name} must be an object`);
  if (o.type !== 'string' && o.type !== 'boolean') throw new TypeError(`options.${name}.type must be "string" or "boolean"`);
  if (o.short !== undefined && (typeof o.short !== 'string' || o.short.length !== 1)) throw new TypeError(`options.${name}.short must be a single character`);
  // citty never asks for `multiple` (repeated values); refused rather than answered differently from node:util.
  if ('multiple' in o) throw new TypeError(`options.${name}.multiple is not served here`);
  if (o.default !== undefined && typeof o.default !== o.type) throw new TypeError(`options.${name}.default does not match its type`);
}
