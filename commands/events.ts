import { defineCommand } from 'citty';
import { EVENT_OUTCOMES } from '../src/contract/schemas.ts';
import { connectionArgs } from './_args.ts';
import { connect, emit } from './_cli.ts';

export default defineCommand({
  meta: { name: 'events', description: 'Receipt history, newest first, without raw bodies' },
  args: {
    limit: { type: 'string', description: 'Page size, 1 to 100 (default 25)' },
    cursor: { type: 'string', description: 'nextCursor of the previous page' },
    endpoint: { type: 'string', description: 'Only this endpoint (ep_…)' },
    outcome: { type: 'string', description: EVENT_OUTCOMES.join(' | ') },
    since: { type: 'string', description: 'Received at or after (RFC 3339)' },
    until: { type: 'string', description: 'Received before (RFC 3339)' },
    ...connectionArgs,
  },
  async run({ args }) {
    const { client } = connect(args, { token: 'required' });
    const { body } = await client.call('listEvents', {
      query: { limit: args.limit, cursor: args.cursor, endpointId: args.endpoint, outcome: args.outcome, since: args.since, until: args.until },
    });
    emit(body);
  },
});
