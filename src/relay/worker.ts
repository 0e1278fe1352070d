/**
 * The handoff worker inside `serve`: leases due events, hands each to its store's destination, records every
 * attempt, retries with capped exponential backoff and jitter. A crash loses nothing: undelivered events stay
 * due and are picked up again on restart.
 */
import type { AttemptRow, DueEvent } from '../../db/types.ts';
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
    const leaseUntil = now + config.handoff.timeoutMs + 30_000;
    const due = await this.core.repo.claimDue(now, config.handoff.concurrency * 4, leaseUntil);
    let i = 0;
    const lane = async () => {
      while (i < due.length) {
        const item = due[i++]!;
        const p = this.handOff(item);
        this.inFlight.add(p);
        await p.finally(() => this.inFlight.delete(p));
      }
    };
    await Promise.all(Array.from({ length: Math.min(config.handoff.concurrency, due.length) }, lane));
    return due.length;
  }

  /** Runs until nothing is due at the current clock time (tests, shutdown drains). */
  async drain(maxRounds = 1000): Promise<void> {
    for (let r = 0; r < maxRounds; r++) if ((await this.runOnce()) === 0) return;
  }

  private async handOff({ event, endpoint, store }: DueEvent): Promise<void> {
    const { clock, config, ids, repo } = this.core;
    const trigger = triggerFor(endpoint.triggerVariant);
    const destination = this.destinations[store.destination === 'shopify' ? 'shopify' : 'log'];
    const number = event.attempts + 1;
    const startedAt = clock.now();
    const payload = buildFlowPayload(endpoint, event);

    let outcome: HandoffOutcome;
    if (flowPayloadBytes(payload) >= 50_000) {
      outcome = { kind: 'failed', httpStatus: null, errorClass: 'config', message: 'Flow payload would exceed 50,000 bytes.' };
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
      code = outcome.kind === 'retry' ? 'SVC_HANDOFF_RETRY_EXHAUSTED' : 'SVC_HANDOFF_REJECTED';
    }

    await repo.recordAttempt(event.id, {
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
    });
    if (outcome.kind !== 'delivered') {
      this.core.log.warn(`handoff ${event.id} attempt ${number}: ${attemptOutcome} (${outcome.errorClass}${outcome.httpStatus ? ` HTTP ${outcome.httpStatus}` : ''})`);
    }
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
