/** One help style for every command, rendered from its citty definition (meta, args, subcommands, examples). */
import type { ArgDef } from 'citty';
import { colorFor, writeOut } from './_output.ts';
import { isTerminal } from './_tty.ts';
import { argsOf, metaOf, resolveStrict, subsOf, type Cmd } from './_tree.ts';

const pad = (rows: [string, string][]) => {
  const w = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`.trimEnd());
};

function flagLabel(name: string, def: ArgDef): string {
  if (def.type === 'positional') return def.required === false ? `[${name}]` : `<${name}>`;
  return def.type === 'boolean' ? `--${name}` : `--${name} <value>`;
}

/**
 * The help text of `cmd` reached by `path` (['hookrelay', 'grant', 'issue']). Headings are bold only when `color`
 * (a terminal that allows it); nothing else is styled, so piped help is plain text.
 */
export async function renderHelp(cmd: Cmd, path: string[], color: boolean): Promise<string> {
  const heading = (t: string) => (color ? `\u001B[1m${t}\u001B[22m` : t);
  const meta = await metaOf(cmd);
  const args = Object.entries(await argsOf(cmd));
  const subs = Object.entries(await subsOf(cmd));
  const visible: [string, string][] = [];
  for (const [name, sub] of subs) {
    const m = await metaOf(sub);
    if (!m.hidden) visible.push([[name, ...[m.alias ?? []].flat()].join(', '), m.description ?? '']);
  }
  const name = path.join(' ');
  const positionals = args.filter(([, d]) => d.type === 'positional').map(([n, d]) => flagLabel(n, d));
  const required = args.filter(([, d]) => d.type !== 'positional' && d.required).map(([n, d]) => flagLabel(n, d));
  const optional = args.some(([, d]) => d.type !== 'positional' && !d.required);
  const usage = [name, ...(visible.length ? ['<command>'] : []), ...positionals, ...required, ...(optional ? ['[options]'] : [])].join(' ');

  const out = [`${heading(name)}${meta.version ? ` ${meta.version}` : ''} — ${meta.description ?? ''}`, '', heading('Usage'), `  ${usage}`];
  if (visible.length) out.push('', heading('Commands'), ...pad(visible));
  const argRows: [string, string][] = args.map(([n, d]) => [
    flagLabel(n, d),
    `${d.description ?? ''}${d.required && d.type !== 'positional' ? ' (required)' : ''}`,
  ]);
  if (argRows.length) out.push('', heading(positionals.length ? 'Arguments and options' : 'Options'), ...pad(argRows));
  if (meta.examples?.length) out.push('', heading(meta.examples.length === 1 ? 'Example' : 'Examples'), ...meta.examples.map((e) => `  ${e}`));
  if (visible.length) out.push('', `Run \`${path[0]} help ${path.slice(1).concat('<command>').join(' ')}\` for a command's options and an example.`);
  return `${out.join('\n')}\n`;
}

/** Prints the help of the command `rawArgs` names (flags checked as for a run, so a typo still names itself). */
export async function printHelp(root: Cmd, rawArgs: string[]): Promise<void> {
  const { cmd, path } = await resolveStrict(root, rawArgs, { help: true });
  await writeOut(await renderHelp(cmd, path, colorFor({ isTTY: isTerminal(1) })));
}
