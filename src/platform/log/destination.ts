/** The `log` destination: records what would have been sent to Flow, so a new install runs end to end. */
import type { Log } from '../../lib/log.ts';
import type { Destination } from '../types.ts';

export function logDestination(log: Log): Destination {
  // A trigger's payload always has the same fields: joined once per handle.
  const fieldsOf = new Map<string, string>();
  return {
    name: 'log',
    external: false,
    async send(req) {
      // Field names only: the values can carry customer identifiers.
      let keys = fieldsOf.get(req.handle);
      if (keys === undefined) fieldsOf.set(req.handle, (keys = Object.keys(req.payload).join(', ')));
      log.info(`handoff (log destination) event=${req.event.id} handle=${req.handle} fields=[${keys}]`);
      return { kind: 'delivered', httpStatus: null };
    },
  };
}
