import { defineCommand } from 'citty';
import { connectionArgs } from './_args.ts';
import { connect, emit } from './_cli.ts';

export default defineCommand({
  meta: { name: 'event', description: 'One event: receipt, handoff attempts, where handoff stopped, recovery options (never the body)' },
  args: { eventId: { type: 'positional', required: true, description: 'Event id (evt_…)' }, ...connectionArgs },
  async run({ args }) {
    const { client } = connect(args, { token: 'required' });
    emit((await client.call('getEventDetail', { params: { eventId: args.eventId } })).body);
  },
});
