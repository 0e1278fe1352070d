/** Shell completion scripts generated from the command tree (names, subcommands and flags as declared). */
import { argsOf, metaOf, subsOf, type Cmd } from './_tree.ts';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Node {
  /** The words after the program name, e.g. ['grant', 'issue']. */
  path: string[];
  description: string;
  subcommands: string[];
  flags: { name: string; description: string; takesValue: boolean }[];
}

/** Every visible command (aliases included), depth first, with its declared flags. */
export async function commandNodes(root: Cmd, path: string[] = []): Promise<Node[]> {
  const meta = await metaOf(root);
  const args = await argsOf(root);
  const subs = await subsOf(root);
  const visible: [string, Cmd][] = [];
  for (const [name, sub] of Object.entries(subs)) {
    const m = await metaOf(sub);
    if (m.hidden) continue;
    for (const n of [name, ...[m.alias ?? []].flat()]) visible.push([n, sub]);
  }
  const flags = Object.entries(args)
    .filter(([, d]) => d.type !== 'positional')
    .map(([name, d]) => ({ name, description: d.description ?? '', takesValue: d.type !== 'boolean' }));
  const node: Node = {
    path,
    description: meta.description ?? '',
    subcommands: visible.map(([n]) => n),
    flags: [...flags, { name: 'help', description: 'Show help', takesValue: false }],
  };
  const children = await Promise.all(visible.map(([n, sub]) => commandNodes(sub, [...path, n])));
  return [node, ...children.flat()];
}

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const firstSentence = (s: string) =>
  s
    .split(/[.;:(]/)[0]!
    .trim()
    .slice(0, 80);

/** The completion script for `shell`, for the program `prog`. */
export function completionScript(shell: Shell, prog: string, nodes: Node[]): string {
  if (shell === 'bash') return bash(prog, nodes);
  if (shell === 'zsh') return zsh(prog, nodes);
  return fish(prog, nodes);
}

function bash(prog: string, nodes: Node[]): string {
  const fn = `_${prog.replace(/\W/g, '_')}_complete`;
  const cases = nodes.map((n) => `    ${q(n.path.join(' '))}) words=${q([...n.subcommands, ...n.flags.map((f) => `--${f.name}`)].join(' '))} ;;`).join('\n');
  return `# bash completion for ${prog}: eval "$(${prog} completion bash)" (generated from the command definitions)
${fn}() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmdpath='' w i words=''
${commandPathLoop(nodes, '1', 'COMP_CWORD', 'COMP_WORDS[i]')}
  case "$cmdpath" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F ${fn} ${prog}
`;
}

/**
 * The shell loop bash and zsh share: walks the words before the cursor, skipping flags, and sets `cmdpath` to the
 * command path typed so far (`grant`, `grant issue`); the shells differ only in where words start and live.
 */
function commandPathLoop(nodes: Node[], first: string, end: string, word: string): string {
  return `  for ((i = ${first}; i < ${end}; i++)); do
    w=\${${word}}
    [[ $w == -* ]] && continue
    case "\${cmdpath:+$cmdpath }$w" in
${nodes.map((n) => `      ${q(n.path.join(' '))}) cmdpath=${q(n.path.join(' '))} ;;`).join('\n')}
    esac
  done`;
}

function zsh(prog: string, nodes: Node[]): string {
  const fn = `_${prog.replace(/\W/g, '_')}`;
  const cases = nodes
    .map((n) => {
      const items = [
        ...n.subcommands.map((s) => {
          const child = nodes.find((c) => c.path.join(' ') === [...n.path, s].join(' '));
          return q(`${s}:${firstSentence(child?.description ?? '').replace(/:/g, '\\:')}`);
        }),
        ...n.flags.map((f) => q(`--${f.name}:${firstSentence(f.description).replace(/:/g, '\\:')}`)),
      ];
      return `    ${q(n.path.join(' '))}) items=(${items.join(' ')}) ;;`;
    })
    .join('\n');
  return `#compdef ${prog}
# zsh completion for ${prog}: ${prog} completion zsh > "\${fpath[1]}/_${prog}" (generated from the command definitions)
${fn}() {
  local cmdpath='' w i
  local -a items
${commandPathLoop(nodes, '2', 'CURRENT', 'words[i]')}
  case "$cmdpath" in
${cases}
  esac
  _describe '${prog}' items
}
# Autoloaded from $fpath the file body is the completion function; sourced, it registers one.
if [[ "\${funcstack[1]}" == ${fn} ]]; then ${fn} "$@"; else compdef ${fn} ${prog}; fi
`;
}

function fish(prog: string, nodes: Node[]): string {
  const lines = [
    `# fish completion for ${prog}: ${prog} completion fish > ~/.config/fish/completions/${prog}.fish (generated from the command definitions)`,
    `complete -c ${prog} -f`,
  ];
  for (const n of nodes) {
    const cond =
      n.path.length === 0
        ? '__fish_use_subcommand'
        : `${n.path.map((w) => `__fish_seen_subcommand_from ${w}`).join('; and ')}${n.subcommands.length ? `; and not __fish_seen_subcommand_from ${n.subcommands.join(' ')}` : ''}`;
    for (const s of n.subcommands) {
      const child = nodes.find((c) => c.path.join(' ') === [...n.path, s].join(' '));
      lines.push(`complete -c ${prog} -n ${q(cond)} -a ${q(s)} -d ${q(firstSentence(child?.description ?? ''))}`);
    }
    for (const f of n.flags) lines.push(`complete -c ${prog} -n ${q(cond)} -l ${f.name}${f.takesValue ? ' -r' : ''} -d ${q(firstSentence(f.description))}`);
  }
  return `${lines.join('\n')}\n`;
}
