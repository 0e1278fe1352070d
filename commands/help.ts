/** `hookrelay help [command [subcommand]]`: the same help as `--help`, for people who type it the other way round. */
import { defineCommand } from 'citty';
import { printHelp } from './_help.ts';
import { root } from './_tree.ts';

export default defineCommand({
  meta: { name: 'help', description: 'Help for hookrelay or one of its commands', examples: ['hookrelay help grant issue'] },
  args: {
    command: { type: 'positional', required: false, description: 'A command, e.g. events' },
    subcommand: { type: 'positional', required: false, description: 'A subcommand, e.g. issue (for grant issue)' },
  },
  async run({ args }) {
    await printHelp(
      root(),
      [args.command, args.subcommand].filter((w): w is string => Boolean(w)),
    );
  },
});
