/** The `log` destination: records what would have been sent to Flow, so a new install runs end to end. */
import type { Log } from '../../lib/log.ts';
import type { Destination } from './types.ts';

export function logDestination(log: Log): Destination {
  return {
    name: 'log',
    async send(req) {
      // Field names and sizes only: the values can carry customer identifiers.
      const keys = Object.keys(req.payload).join(', ');
      log.info(`handoff (log destination) event=${req.event.id} handle=${req.handle} fields=[${keys}]`);
      return { kind: 'delivered', httpStatus: null };
    },
  };
}
