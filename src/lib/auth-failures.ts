/**
 * Failed authentication, limited per client address and per inbound endpoint (AUTH_FAILURE_LIMITS), and the
 * client address itself. Shared by the agent pipeline, the MCP endpoint and the inbound path, so it lives below
 * all three. In memory, per process; the clock is injected.
 */
import { AUTH_FAILURE_LIMITS, type AuthFailureLimits } from '../contract/limits.ts';
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

/**
 * Failed authentications per client address and per inbound endpoint, in fixed windows (AUTH_FAILURE_LIMITS).
 * Only failures are counted. Memory is bounded: every window starts empty, and within one at most `maxTracked`
 * keys are kept, the oldest dropped first. A request with no known address (in-process calls) is not limited
 * per client; an inbound endpoint's limit still applies.
 */
export class AuthFailureLimiter {
  private counts = new Map<string, { failures: number; audited: number }>();
  private window = -1;
  private audited = 0;
  private folded = new Map<string, { count: number; lastAt: number }>();
  private closed: FoldedAudit[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly limits: AuthFailureLimits = AUTH_FAILURE_LIMITS,
  ) {}

  /** Counts one failed authentication from `client` (and against `endpointId` for inbound requests). */
  fail(client: string | null, endpointId?: string): AuthFailureDecision {
    const now = this.clock.now();
    this.roll(now);
    const { windowMs, perClient, perEndpoint, auditedPerClient, auditedPerWindow } = this.limits;
    const resetAt = (this.window + 1) * windowMs;
    const retryAfterSeconds = Math.max(1, Math.ceil((resetAt - now) / 1000));
    const c = client === null ? null : this.entry(`c|${client}`);
    const e = endpointId === undefined ? null : this.entry(`e|${endpointId}`);
    if (c) c.failures++;
    if (e) e.failures++;
    const audit = (c?.audited ?? 0) < auditedPerClient && this.audited < auditedPerWindow;
    if (audit) {
      this.audited++;
      if (c) c.audited++;
    }
    const scope = c && c.failures > perClient ? 'client' : e && e.failures > perEndpoint ? 'endpoint' : null;
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
      v = { failures: 0, audited: 0 };
      this.counts.set(key, v);
    }
    return v;
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
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
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
