/**
 * Each request's id (`req_` and 26 characters of [0-9a-z]), minted once where the request enters (serve) and read
 * wherever it is needed (the pipeline's audit rows and error envelopes, the MCP transport, the request's log line,
 * its `X-Request-Id` header) without passing it through every signature. A request nobody tagged (in-process
 * calls, tests) gets one on first ask.
 *
 * An id is this process's random prefix (16 characters, about 82 bits: distinct across restarts and instances)
 * and a counter: the time-ordered ids of src/lib/ids.ts cost 2 µs each, a tenth of a receipt's whole budget.
 */
const PREFIX = `req_${Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => (b % 36).toString(36)).join('')}`;
const COUNTER_WIDTH = 10;
let counter = 0;
/** The counter's last two base-36 digits, for each of their 1,296 values. */
const LOW = Array.from({ length: 36 ** 2 }, (_, n) => n.toString(36).padStart(2, '0'));
/** The prefix and the counter's other digits, written again once every 1,296 ids. */
let head = '';
let headOf = -1;

export function nextRequestId(): string {
  counter = (counter + 1) % 36 ** COUNTER_WIDTH;
  const high = Math.floor(counter / LOW.length);
  if (high !== headOf) {
    headOf = high;
    head = PREFIX + high.toString(36).padStart(COUNTER_WIDTH - 2, '0');
  }
  return head + LOW[counter % LOW.length]!;
}

const ids = new WeakMap<Request, string>();

export function tagRequest(req: Request, id: string): void {
  ids.set(req, id);
}

export function requestIdOf(req: Request): string {
  let id = ids.get(req);
  if (id === undefined) ids.set(req, (id = nextRequestId()));
  return id;
}
