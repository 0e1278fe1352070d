import { defineCommand } from 'citty';
import { connectionArgs } from './_args.ts';
import { connect, emit } from './_cli.ts';

export default defineCommand({
  meta: {
    name: 'event',
    description: 'One event: receipt, handoff attempts, where handoff stopped, recovery options (never the body)',
    examples: ['hookrelay event evt_01HZX3Q4J5K6M7N8P9R0S1T2V3'],
  },
  args: { eventId: { type: 'positional', required: true, description: 'Event id (evt_…)' }, ...connectionArgs },
  async run({ args }) {
    const { client } = await connect(args, { token: 'required' });
    emit((await client.call('getEventDetail', { params: { eventId: args.eventId } })).body);
  },
});
