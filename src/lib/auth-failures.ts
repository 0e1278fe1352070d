/**
 * Failed authentication, limited per client address and per inbound endpoint (AUTH_FAILURE_LIMITS), and the
 * client address itself. Shared by the agent pipeline, the MCP endpoint and the inbound path, so it lives below
 * all three. Counted in memory for one process, in the storage when instances share it; the clock is injected.
 */
import { AUTH_FAILURE_LIMITS, type AuthFailureLimits } from '../contract/limits.ts';
import type { LimitStore } from '../../db/repo.ts';
import type { Clock } from './clock.ts';

/** What to do with one failed authentication: answer 401 or 429, audit it or fold it. */
export interface AuthFailureDecision {
  /** Over a limit: answer 429 instead of 401. */
  limited: boolean;
  /** Which limit: the client address's, or the inbound endpoint's (all addresses together). */
  scope: 'client' | 'endpoint';
  retryAfterSeconds: number;
  resetAt: number;
  /** Write this failure's own audit row; otherwise it is folded into the window's summary. */
  audit: boolean;
}

/** Bearer failures of a closed window that got no audit row of their own, by operation. */
export interface FoldedAudit {
  operationId: string;
  count: number;
  from: number;
  to: number;
  lastAt: number;
}

/** Where instances sharing a database count the windows (PostgreSQL's rate_counters). */
export type SharedCounts = Pick<LimitStore, 'addRate'>;

type Scope = AuthFailureDecision['scope'];

interface Entry {
  failures: number;
  audited: number;
  /** The shared count has passed this key's limit: refused here for the rest of the window, without the storage. */
  full: boolean;
}

/**
 * Failed authentications per client address and per inbound endpoint, in fixed windows (AUTH_FAILURE_LIMITS).
 * Only failures are counted: a valid credential never reaches `fail`. Memory is bounded: every window starts empty,
 * and within one at most `maxTracked` keys are kept, the oldest dropped first. A request with no known address
 * (in-process calls) is not limited per client; an inbound endpoint's limit still applies.
 *
 * With `shared` (instances on one PostgreSQL) the limits are counted there, so N instances allow one limit, not
 * N (see SharedWindows). The audit allowance (`auditedPerClient`, `auditedPerWindow`) and the folded summaries
 * stay per instance: sharing them would cost a storage round trip per audited failure for a cap on rows only,
 * so N instances write up to N times the allowance per window.
 */
export class AuthFailureLimiter {
  private counts = new Map<string, Entry>();
  private window = -1;
  private audited = 0;
  private folded = new Map<string, { count: number; lastAt: number }>();
  private closed: FoldedAudit[] = [];
  private readonly shared: SharedWindows | null;

  constructor(
    private readonly clock: Clock,
    private readonly limits: AuthFailureLimits = AUTH_FAILURE_LIMITS,
    shared: SharedCounts | null = null,
  ) {
    this.shared = shared && new SharedWindows(shared);
  }

  /**
   * Counts one failed authentication from `client` (and against `endpointId` for inbound requests). `audited`
   * false: the caller writes no audit row (a route outside the agent API), so none of the allowance is taken.
   */
  async fail(client: string | null, endpointId?: string, audited = true): Promise<AuthFailureDecision> {
    const now = this.clock.now();
    this.roll(now);
    const { windowMs, perClient, perEndpoint, auditedPerClient, auditedPerWindow } = this.limits;
    const windowStart = this.window * windowMs;
    const resetAt = windowStart + windowMs;
    const retryAfterSeconds = Math.max(1, Math.ceil((resetAt - now) / 1000));
    const c = client === null ? null : this.entry(`c|${client}`);
    const e = endpointId === undefined ? null : this.entry(`e|${endpointId}`);
    if (c) c.failures++;
    if (e) e.failures++;
    const audit = audited && (c?.audited ?? 0) < auditedPerClient && this.audited < auditedPerWindow;
    if (audit) {
      this.audited++;
      if (c) c.audited++;
    }
    let scope: Scope | null = c && c.failures > perClient ? 'client' : e && e.failures > perEndpoint ? 'endpoint' : null;
    if (this.shared) {
      const keys: Counted[] = [];
      if (c) keys.push({ key: `auth|c|${client}`, entry: c, limit: perClient, scope: 'client' });
      if (e) keys.push({ key: `auth|e|${endpointId}`, entry: e, limit: perEndpoint, scope: 'endpoint' });
      // Undefined: the storage did not answer; this instance's own count decides meanwhile.
      const over = keys.length ? await this.shared.take(windowStart, keys) : null;
      if (over !== undefined) scope = over;
    }
    return { limited: scope !== null, scope: scope ?? 'client', retryAfterSeconds, resetAt, audit };
  }
  /** Records a failure that got no audit row of its own (see `fail`'s `audit`). */
  fold(operationId: string): void {
    const f = this.folded.get(operationId) ?? { count: 0, lastAt: 0 };
    f.count++;
    f.lastAt = this.clock.now();
    this.folded.set(operationId, f);
  }

  /** The folded counts of windows that have ended, once each: the caller writes one summary audit row per entry. */
  takeFolded(): FoldedAudit[] {
    this.roll(this.clock.now());
    return this.closed.splice(0);
  }

  /** Addresses and endpoints counted in the current window (bounded by `maxTracked`). */
  get tracked(): number {
    return this.counts.size;
  }

  private roll(now: number): void {
    const w = Math.floor(now / this.limits.windowMs);
    if (w === this.window) return;
    const from = this.window * this.limits.windowMs;
    for (const [operationId, f] of this.folded) this.closed.push({ operationId, count: f.count, from, to: from + this.limits.windowMs, lastAt: f.lastAt });
    this.window = w;
    this.counts.clear();
    this.folded.clear();
    this.audited = 0;
  }

  private entry(key: string) {
    let v = this.counts.get(key);
    if (!v) {
      if (this.counts.size >= this.limits.maxTracked) this.counts.delete(this.counts.keys().next().value!);
      v = { failures: 0, audited: 0, full: false };
      this.counts.set(key, v);
    }
    return v;
  }
}

/** One key a failure counts against, with the local entry that remembers when its shared count is past the limit. */
interface Counted {
  key: string;
  entry: Entry;
  limit: number;
  scope: Scope;
}

interface Waiting {
  windowStart: number;
  keys: Counted[];
  done: (over: Scope | null | undefined) => void;
}

/**
 * The shared windows of instances on one database. Chosen to keep a flood off the database: both "count through
 * the storage until it says the limit is reached, then refuse locally" and "batch the local counts".
 *   - Once a key's shared count is past its limit, this instance refuses it locally for the rest of the window
 *     (Entry.full), counting nothing more: a flood from one address, or at one endpoint, stops reaching the storage.
       A failure so refused counts against none of its keys (in memory, the other key would still count it).
 *   - Failures are added in batches, one `addRate` in flight per instance at a time; failures arriving meanwhile
 *     wait and go together in the next. So an attacker rotating addresses (a new key per failure, never full)
 *     costs each instance one statement at a time, however fast it sends, not one per request.
 * Per key per window each instance sends at most `limit + 1` statements holding it: every statement before the one
 * that finds the key full counted at least one of its failures within the limit (one more if its entry was dropped
 * past `maxTracked`).
 *
 * Exactness: the atomic add hands each failure its own place in the shared count, and only places up to the limit
 * answer 401, so no instance lets a failure past the limit through, however many are in flight. What is in flight
 * bounds only how far the stored count overshoots: per instance, the failures of the key in the batch that found it
 * full. Windows follow each instance's clock, so clock skew moves the window edge by as much. If the storage fails,
 * the instance's own count decides (the limit is per instance until it answers again).
 */
class SharedWindows {
  private waiting: Waiting[] = [];
  private flushing = false;

  constructor(private readonly store: SharedCounts) {}

  /** The scope over its limit, null when none is, undefined when the storage did not answer. */
  take(windowStart: number, keys: Counted[]): Promise<Scope | null | undefined> {
    const known = keys.find((k) => k.entry.full);
    if (known) return Promise.resolve(known.scope);
    return new Promise((done) => {
      this.waiting.push({ windowStart, keys, done });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.waiting.length) {
        const batch: Waiting[] = [];
        for (const w of this.waiting.splice(0)) {
          // A key found full while this failure waited: refused here, not sent.
          const known = w.keys.find((k) => k.entry.full);
          if (known) w.done(known.scope);
          else batch.push(w);
        }
        for (const windowStart of new Set(batch.map((w) => w.windowStart)))
          await this.send(
            windowStart,
            batch.filter((w) => w.windowStart === windowStart),
          );
      }
    } finally {
      this.flushing = false;
    }
  }

  private async send(windowStart: number, batch: Waiting[]): Promise<void> {
    const adds = new Map<string, number>();
    for (const w of batch) for (const k of w.keys) adds.set(k.key, (adds.get(k.key) ?? 0) + 1);
    let after: number[];
    try {
      after = await this.store.addRate(
        [...adds].map(([key, n]) => ({ key, n })),
        windowStart,
      );
    } catch {
      for (const w of batch) w.done(undefined);
      return;
    }
    // The batch's adds end at the count returned: each failure takes the next place after the count before them.
    const place = new Map([...adds].map(([key, n], i) => [key, after[i]! - n]));
    for (const w of batch) {
      let over: Scope | null = null;
      for (const k of w.keys) {
        const p = place.get(k.key)! + 1;
        place.set(k.key, p);
        if (p > k.limit) {
          k.entry.full = true;
          over ??= k.scope;
        }
      }
      w.done(over);
    }
  }
}

/**
 * The key a client is limited by: IPv4 as is (also when IPv4-mapped), IPv6 by its /64, which one host usually holds
 * whole. Null when the address is unknown.
 */
export function clientKey(address: string | null | undefined): string | null {
  if (!address) return null;
  const a = address.trim().replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) return mapped[1]!;
  if (!a.includes(':')) return a;
  const [head, tail, extra] = a.split('::');
  if (extra !== undefined) return a;
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return a;
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** A request's client key, worked out only when asked (a failed authentication): never on the receipt path. */
export type ClientOf = () => string | null;

/** The client key of `req`, computed once on first use; `peer` may itself be deferred (Bun's requestIP). */
export function lazyClient(req: Request, peer: string | null | (() => string | null), trustProxy: boolean): ClientOf {
  let key: string | null | undefined;
  return () => (key !== undefined ? key : (key = clientKey(clientAddress(req, typeof peer === 'function' ? peer() : peer, trustProxy))));
}

/** No client address (in-process calls). */
export const NO_CLIENT: ClientOf = () => null;

/** HOOKRELAY_TRUST_PROXY: whether a proxy in front sets X-Forwarded-For (the client address then comes from it). */
export function trustsProxy(env: (name: string) => string | undefined): boolean {
  return /^(1|true|yes|on)$/i.test(env('HOOKRELAY_TRUST_PROXY')?.trim() ?? '');
}

/**
 * The client address of a request: the socket's peer, or with HOOKRELAY_TRUST_PROXY the last X-Forwarded-For hop
 * (the one the proxy in front appended; earlier hops are whatever the client sent).
 */
export function clientAddress(req: Request, peer: string | null, trustProxy: boolean): string | null {
  if (trustProxy) {
    const hop = req.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim();
    if (hop) return hop;
  }
  return peer;
}
