/** `hookrelay completion bash|zsh|fish`: a completion script built from the registered commands and their flags. */
import { defineCommand } from 'citty';
import { AppError } from '../src/contract/errors.ts';
import { commandNodes, completionScript, SHELLS, type Shell } from './_completion.ts';
import { writeOut } from './_output.ts';
import { root } from './_tree.ts';

export default defineCommand({
  meta: {
    name: 'completion',
    description: `Print a shell completion script (${SHELLS.join(' | ')}) for every command and flag`,
    examples: ['eval "$(hookrelay completion bash)"', 'hookrelay completion fish > ~/.config/fish/completions/hookrelay.fish'],
  },
  args: { shell: { type: 'positional', required: true, description: SHELLS.join(' | ') } },
  async run({ args }) {
    if (!(SHELLS as readonly string[]).includes(args.shell))
      throw new AppError('invalid_input', `completion takes ${SHELLS.join(', ')}; got ${JSON.stringify(args.shell)}.`);
    await writeOut(completionScript(args.shell as Shell, 'hookrelay', await commandNodes(root())));
  },
});
