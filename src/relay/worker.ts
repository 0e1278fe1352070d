/**
 * The handoff worker inside `serve`: leases due events, hands each to its store's destination, records every
 * attempt, retries with capped exponential backoff and jitter. A crash loses nothing: undelivered events stay
 * due and are picked up again on restart.
 */
import type { AttemptResult, AttemptRow, DueEvent } from '../../db/types.ts';
import type { Core } from '../core.ts';
import { logDestination } from './destinations/log.ts';
import { shopifyDestination } from './destinations/shopify.ts';
import type { Destination, HandoffOutcome } from './destinations/types.ts';
import { buildFlowPayload, flowPayloadBytes, triggerFor } from './flow.ts';

export type Destinations = Record<'shopify' | 'log', Destination>;

export function defaultDestinations(core: Core): Destinations {
  return {
    log: logDestination(core.log),
    shopify: shopifyDestination({ adminUrl: core.config.shopifyAdminUrl, env: core.config.env }),
  };
}

export class HandoffWorker {
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private inFlight = new Set<Promise<void>>();
  /** Math.random by default; tests pin it. */
  random: () => number = Math.random;

  constructor(
    private readonly core: Core,
    private readonly destinations: Destinations = defaultDestinations(core),
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** New receipts are due: skip the sleep. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Stops leasing new events and waits for the attempts in flight to be recorded. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    await Promise.all(this.inFlight);
  }

  private async run(): Promise<void> {
    while (this.running) {
      let handled = 0;
      try {
        handled = await this.runOnce();
      } catch (err) {
        this.core.log.error(`handoff worker: ${err instanceof Error ? err.message : 'error'}`);
      }
      // bun:sqlite answers synchronously, so without this the loop would never let HTTP requests in.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (handled > 0 || !this.running) continue;
      const next = await this.core.repo.nextDueAt().catch(() => null);
      const wait = next == null ? 1000 : Math.min(1000, Math.max(0, next - this.core.clock.now()));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = null;
    }
  }

  /** Leases one batch of due events and hands them off, `concurrency` at a time. Returns how many. */
  async runOnce(): Promise<number> {
    const { clock, config } = this.core;
    const now = clock.now();
    const { batchSize, concurrency, timeoutMs } = config.handoff;
    // Long enough for the last lane to finish the round even if every attempt times out.
    const leaseUntil = now + timeoutMs * Math.ceil(batchSize / concurrency) + 30_000;
    const due = await this.core.repo.claimDue(now, batchSize, leaseUntil);
    if (!due.length) return 0;
    const results: AttemptResult[] = [];
    let i = 0;
    const lane = async () => {
      while (i < due.length) results.push(await this.handOff(due[i++]!));
    };
    const round = Promise.all(Array.from({ length: Math.min(concurrency, due.length) }, lane)).then(() =>
      this.core.repo.recordAttempts(results),
    );
    this.inFlight.add(round);
    try {
      await round;
    } finally {
      this.inFlight.delete(round);
    }
    for (const r of results) {
      if (r.attempt.outcome !== 'delivered') {
        this.core.log.warn(`handoff ${r.attempt.eventId} attempt ${r.attempt.number}: ${r.attempt.outcome} (${r.attempt.code}${r.attempt.httpStatus ? ` HTTP ${r.attempt.httpStatus}` : ''})`);
      }
    }
    return due.length;
  }

  /** Runs until nothing is due at the current clock time (tests, shutdown drains). */
  async drain(maxRounds = 1000): Promise<void> {
    for (let r = 0; r < maxRounds; r++) if ((await this.runOnce()) === 0) return;
  }

  /** One attempt; returns what to record (the caller records a whole round at once). */
  private async handOff({ event, endpoint, store }: DueEvent): Promise<AttemptResult> {
    const { clock, config, ids } = this.core;
    const trigger = triggerFor(endpoint.triggerVariant);
    const destination = this.destinations[store.destination === 'shopify' ? 'shopify' : 'log'];
    const number = event.attempts + 1;
    const startedAt = clock.now();
    const payload = buildFlowPayload(endpoint, event);

    let outcome: HandoffOutcome;
    if (flowPayloadBytes(payload) >= 50_000) {
      outcome = { kind: 'failed', httpStatus: null, errorClass: 'payload_too_large', message: 'Flow payload would exceed 50,000 bytes.' };
    } else {
      try {
        outcome = await destination.send({ store, endpoint, event, handle: trigger.handle, payload }, AbortSignal.timeout(config.handoff.timeoutMs));
      } catch {
        outcome = { kind: 'retry', httpStatus: null, errorClass: 'network', message: 'Handoff failed unexpectedly.' };
      }
    }
    const finishedAt = clock.now();

    let attemptOutcome: AttemptRow['outcome'];
    let eventOutcome: string;
    let code: string | null = null;
    let nextAttemptAt: number | null = null;
    if (outcome.kind === 'delivered') {
      attemptOutcome = eventOutcome = 'delivered';
    } else if (outcome.kind === 'retry' && number < config.handoff.maxAttempts) {
      attemptOutcome = 'retry';
      eventOutcome = 'queued';
      nextAttemptAt = finishedAt + this.backoff(number, outcome.retryAfterMs);
    } else {
      attemptOutcome = eventOutcome = 'failed';
      code =
        outcome.kind === 'retry'
          ? 'SVC_HANDOFF_RETRY_EXHAUSTED'
          : outcome.errorClass === 'payload_too_large'
            ? 'SVC_PAYLOAD_TOO_LARGE'
            : 'SVC_HANDOFF_REJECTED';
    }

    return {
      attempt: {
        id: ids.next('att'),
        eventId: event.id,
        number,
        destination: destination.name,
        startedAt,
        finishedAt,
        outcome: attemptOutcome,
        httpStatus: outcome.httpStatus,
        code: outcome.kind === 'delivered' ? null : outcome.errorClass,
        message: outcome.kind === 'delivered' ? null : outcome.message,
        retryAt: nextAttemptAt,
      },
      event: {
        outcome: eventOutcome,
        code,
        nextAttemptAt,
        leaseUntil: null,
        deliveredAt: outcome.kind === 'delivered' ? finishedAt : null,
      },
    };
  }

  /**
   * Equal-jitter exponential backoff, capped at maxDelayMs. A platform's Retry-After is a floor that the cap
   * does not cut: retrying before it only earns another 429.
   */
  private backoff(attempt: number, retryAfterMs?: number): number {
    const { baseDelayMs, maxDelayMs } = this.core.config.handoff;
    const exp = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    const jittered = Math.round(exp / 2 + (this.random() * exp) / 2);
    return retryAfterMs != null ? Math.max(retryAfterMs, jittered) : jittered;
  }
}
