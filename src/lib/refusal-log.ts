/**
 * Refusals on routes anyone can reach, logged as a trail an operator can read and a flood cannot lengthen: per
 * route, the first refusal of a window is logged at once with its reason, the rest are counted, and one summary line
 * says how many once the window has ended (at the route's next refusal, or by a timer). Answers marked `unlogged`
 * get no per-request log line from serve: the summary stands for them.
 */
import { type Clock, iso } from './clock.ts';
import type { Log } from './log.ts';

/** Why a handler refused, set on an answer whose body does not say it in a word (an HTML page), for the log. */
export const refusalReason = new WeakMap<Response, string>();

/** Answers serve writes no request line for (refusals past a limit, which RefusalLog counts). */
export const unlogged = new WeakSet<Response>();

interface Tally {
  /** Refusals after the first, which was logged on its own. */
  more: number;
  limited: number;
  /** Refusals per client address, at most `maxAddresses` of them. */
  byClient: Map<string, number>;
}

export class RefusalLog {
  private window = -1;
  private tallies = new Map<string, Tally>();
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly log: Log,
    private readonly windowMs: number,
    private readonly maxAddresses = 1000,
  ) {}

  /**
   * One refusal on `route` from `client`, answered with `status` (429 past a limit). `reason` is asked only for the
   * first of the window, which is logged at once.
   */
  async note(route: string, client: string | null, status: number, reason: () => string | Promise<string>): Promise<void> {
    this.roll();
    const t = this.tallies.get(route);
    if (!t) {
      this.tallies.set(route, { more: 0, limited: 0, byClient: new Map() });
      const why = await Promise.resolve()
        .then(reason)
        .catch(() => 'unknown');
      this.log.warn(`${route}: refused with ${status} (${why.slice(0, 200)}); further refusals this minute are counted in one line when it ends`, { client });
      this.arm();
      return;
    }
    t.more++;
    if (status === 429) t.limited++;
    if (client !== null && (t.byClient.has(client) || t.byClient.size < this.maxAddresses)) t.byClient.set(client, (t.byClient.get(client) ?? 0) + 1);
  }

  /** Writes the summaries of a window that has ended. */
  roll(): void {
    const w = Math.floor(this.clock.now() / this.windowMs);
    if (w === this.window) return;
    const from = this.window * this.windowMs;
    for (const [route, t] of this.tallies) {
      if (!t.more) continue;
      let top: [string, number] | null = null;
      for (const e of t.byClient) if (!top || e[1] > top[1]) top = e;
      const addresses = `${t.byClient.size}${t.byClient.size >= this.maxAddresses ? '+' : ''} address(es)`;
      const most = top ? `, most from ${top[0]} (${top[1]})` : '';
      this.log.warn(
        `${route}: ${t.more} more refusal(s) from ${iso(from)} to ${iso(from + this.windowMs)}, ${t.limited} answered 429, from ${addresses}${most}`,
      );
    }
    this.window = w;
    this.tallies.clear();
  }

  /** A timer for the window's end, so the last window of a flood is summed up without a further request. */
  private arm(): void {
    if (this.timer) return;
    const wait = (this.window + 1) * this.windowMs - this.clock.now() + 10;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.roll();
      },
      Math.max(10, wait),
    );
    this.timer.unref?.();
  }
}
