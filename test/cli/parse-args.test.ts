/**
 * The compiled binary gives citty commands/_parse-args.ts in place of node:util (scripts/build.ts). It must answer
 * as node:util's parseArgs does for the options citty builds from every command, on ordinary and hostile
 * command lines alike.
 */
import { describe, expect, it } from 'bun:test';
import { parseArgs as nodeParseArgs } from 'node:util';
import type { ArgDef } from 'citty';
import { parseArgs } from '../../commands/_parse-args.ts';
import { main } from '../../commands/index.ts';
import { argsOf, subsOf, type Cmd } from '../../commands/_tree.ts';

type Options = Record<string, { type: 'string' | 'boolean'; short?: string; default?: string | boolean }>;

const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
const camel = (s: string) => s.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** The options citty passes to parseArgs for a command's args (citty/dist/index.mjs, parseArgs + parseRawArgs). */
function cittyOptions(args: Record<string, ArgDef>): Options {
  const options: Options = {};
  for (const [name, def] of Object.entries(args)) {
    if (def.type === 'positional') continue;
    const type = def.type === 'boolean' ? 'boolean' : 'string';
    const aliases = [...new Set([...[('alias' in def ? def.alias : undefined) ?? []].flat(), camel(name), kebab(name)])].filter((a) => a !== name);
    const d = 'default' in def ? (def.default as string | boolean | undefined) : undefined;
    options[name] = { type, ...(d !== undefined ? { default: d } : {}) };
    for (const a of aliases) options[a] ??= { type };
    const short = aliases.find((a) => a.length === 1);
    if (short) options[name]!.short = short;
  }
  return options;
}

async function everyCommand(cmd: Cmd = main, path: string[] = ['hookrelay']): Promise<{ path: string; options: Options }[]> {
  const out = [{ path: path.join(' '), options: cittyOptions(await argsOf(cmd)) }];
  for (const [name, sub] of Object.entries(await subsOf(cmd))) out.push(...(await everyCommand(sub, [...path, name])));
  return out;
}

/** node:util's answer and ours, as plain data (node's values object has no prototype), or the error each threw. */
function both(args: string[], options: Options) {
  const run = (fn: typeof parseArgs | typeof nodeParseArgs) => {
    try {
      const r = fn({ args, options, strict: false, allowPositionals: true } as never) as { values: object; positionals: string[] };
      return { values: { ...r.values }, positionals: r.positionals };
    } catch (err) {
      return { threw: err instanceof TypeError || (err as { code?: string }).code?.startsWith('ERR_') ? 'TypeError' : String(err) };
    }
  };
  return { node: run(nodeParseArgs), ours: run(parseArgs) };
}

/** A small deterministic generator (mulberry32), so a failing line can be reproduced. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HOSTILE = [
  '--',
  '-',
  '---',
  '--=',
  '--=x',
  '-=',
  '--__proto__',
  '--__proto__=1',
  '--constructor',
  '-h',
  '--no-',
  '--x=',
  '=',
  '--a=b=c',
  '-0',
  '-é',
  '--ünï',
  ' ',
  '',
  '-\u0000',
  '--\u0000=1',
];

describe('the parseArgs the binary gives citty', () => {
  it('answers as node:util on every command, for each flag in every spelling', async () => {
    const commands = await everyCommand();
    expect(commands.length).toBeGreaterThan(20);
    let compared = 0;
    for (const { path, options } of commands) {
      const lines: string[][] = [[], ['word'], ['word', 'other', '--', '--after']];
      for (const [name, o] of Object.entries(options)) {
        lines.push(
          [`--${name}`],
          [`--${name}`, 'value'],
          [`--${name}=value`],
          [`--${name}=`],
          [`--no-${name}`],
          [`--${name}`, '--quiet'],
          [`--${name}`, '-'],
          ['--', `--${name}`, 'v'],
        );
        if (o.short) lines.push([`-${o.short}`], [`-${o.short}`, 'v'], [`-${o.short}v`], [`-q${o.short}`, 'v'], [`-${o.short}q`]);
      }
      for (const args of lines) {
        const { node, ours } = both(args, options);
        expect({ path, args, ours }).toEqual({ path, args, ours: node });
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(500);
  });

  it('answers as node:util on random and hostile command lines', async () => {
    // The commands declare no one-letter aliases today: a declaration with short flags covers groups such as -qf.
    const shorts: Options = {
      quiet: { type: 'boolean', short: 'q' },
      all: { type: 'boolean', short: 'a' },
      file: { type: 'string', short: 'f' },
      n: { type: 'string', short: 'n', default: '1' },
    };
    const commands = [...(await everyCommand()), { path: '(one-letter flags)', options: shorts }, { path: '(one-letter flags)', options: shorts }];
    const next = rng(20261123);
    const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)]!;
    for (let i = 0; i < 3000; i++) {
      const { path, options } = pick(commands);
      const names = Object.keys(options);
      const shorts = Object.values(options).flatMap((o) => (o.short ? [o.short] : []));
      const token = () => {
        const r = next();
        if (r < 0.25 && names.length) return `--${pick(names)}`;
        if (r < 0.35 && names.length) return `--${pick(names)}=${pick(['', 'v', '=', '--x'])}`;
        if (r < 0.45 && shorts.length) return `-${pick(shorts)}${pick(['', 'v', 'q', shorts.join('')])}`;
        if (r < 0.55) return `-${pick(['a', 'q', 'zz', 'h', 'v'])}`;
        if (r < 0.7) return pick(HOSTILE);
        return pick(['word', 'evt_1', '42', 'true', 'https://x.test/a?b=c']);
      };
      const args = Array.from({ length: Math.floor(next() * 7) }, token);
      const { node, ours } = both(args, options);
      expect({ path, args, ours }).toEqual({ path, args, ours: node });
    }
  });

  it('refuses option declarations node:util refuses (citty then reads every word as a positional)', () => {
    const bad: Options[] = [
      { a: { type: 'string', default: true } },
      { a: { type: 'boolean', default: 'yes' } },
      { a: { type: 'string', short: 'ab' } },
      { a: { type: 'number' as never } },
    ];
    for (const options of bad) {
      const { node, ours } = both(['--a', 'x'], options);
      expect(node).toEqual({ threw: 'TypeError' });
      expect(ours).toEqual(node);
    }
  });

  it('serves only the way citty calls it', () => {
    expect(() => parseArgs({ args: [], strict: true, allowPositionals: true })).toThrow(TypeError);
    expect(() => parseArgs({ args: [], strict: false })).toThrow(TypeError);
    // Repeated values (`multiple`) are not served: refused, so the comparison above would fail if citty asked for them.
    expect(() => parseArgs({ args: [], strict: false, allowPositionals: true, options: { a: { type: 'string', multiple: true } as never } })).toThrow(
      TypeError,
    );
  });
});
