/** `hookrelay tail`: `events --follow` under the name a developer wiring a sender reaches for. */
import { defineCommand } from 'citty';
import { connectionArgs, SINCE_HELP } from './_args.ts';
import { connect } from './_cli.ts';
import { follow } from './events.ts';

export default defineCommand({
  meta: {
    name: 'tail',
    description: 'New receipts as compact JSON lines, oldest first, until Ctrl-C (same as events --follow)',
    examples: ['hookrelay tail --endpoint ep_123 | jq .outcome'],
  },
  args: {
    endpoint: { type: 'string', description: 'Only this endpoint (ep_…)' },
    since: { type: 'string', description: `Also print what arrived since: ${SINCE_HELP}` },
    interval: { type: 'string', description: 'Seconds between polls (default 5; each poll is a rich read, 30 a minute per grant)' },
    ...connectionArgs,
  },
  async run({ args }) {
    await follow(args, await connect(args, { token: 'required' }));
  },
});
