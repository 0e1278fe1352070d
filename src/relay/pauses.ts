/**
 * Paused handoffs, as the worker keeps them. A store whose credentials are missing or refused, or whose platform
 * stopped answering, stops sending: its events wait `queued` until the next probe (never `failed`), and one probe at a time (a lease in platform_links,
 * across instances) asks the platform again, waiting longer after each failure. When a probe succeeds the pause
 * ends and the waiting events are due at once. The book is platform_links' paused rows, re-read every second, so
 * a pause or resume on a peer (or `hookrelay store set`) shows up here too.
 */
import type { PlatformLinkRow, PlatformLinkStore } from '../../db/areas/platform-links.ts';
import type { Signals, TenantStore } from '../../db/repo.ts';
import type { StoreRow } from '../../db/types.ts';
import type { CoreWith } from '../core.ts';
import type { PauseCode, PauseReason } from '../contract/platform.ts';
import type { Destination, PauseRequest } from '../platform/types.ts';
import { errorLine } from '../lib/log.ts';

/** How often the book is read again from storage. */
const REFRESH_EVERY_MS = 1000;
/** Transient failures in a row (network, timeout, 5xx) after which a store's platform is taken to be down. */
export const OUTAGE_AFTER_FAILURES = 5;
/** A pause that returns this soon after a resume continues the backoff where it was (credentials that flap). */
const CONTINUE_BACKOFF_MS = 10 * 60_000;

type PauseCore = CoreWith<{ links: PlatformLinkStore } & Pick<TenantStore, 'getStore'> & Signals>;

export class HandoffPauses {
  private book = new Map<string, PlatformLinkRow>();
  private loadedAt = -Infinity;
  private readonly pausing = new Map<string, Promise<number>>();
  /** Transient failures in a row per store, in this process (any answer from the platform resets it). */
  private readonly failing = new Map<string, number>();
  /** Math.random by default; tests pin it. */
  random: () => number = Math.random;

  constructor(
    private readonly core: PauseCore,
    private readonly destinationOf: (store: StoreRow) => Destination,
    /** Told when a probe resumed a store (the worker claims its events at once). */
    private readonly resumed: () => void = () => {},
  ) {}

  /** When the store's next probe is due, while its handoff is paused; null while it is active. */
  waitUntil(storeId: string): number | null {
    return this.book.get(storeId)?.nextProbeAt ?? null;
  }

  get size(): number {
    return this.book.size;
  }

  async refresh(force = false): Promise<void> {
    const now = this.core.clock.now();
    if (!force && now - this.loadedAt < REFRESH_EVERY_MS && now >= this.loadedAt) return;
    const rows = await this.core.repo.links.listPaused();
    this.book = new Map(rows.map((r) => [r.storeId, r]));
    this.loadedAt = now;
  }

  /** Pauses the store (once, however many sends report it at the same time); resolves to the next probe's time. */
  pause(store: StoreRow, p: PauseRequest): Promise<number> {
    const known = this.book.get(store.id);
    if (known?.nextProbeAt != null && known.pauseCode === p.code) return Promise.resolve(known.nextProbeAt);
    let flight = this.pausing.get(store.id);
    if (!flight) {
      // Storage that cannot take the pause now must not lose the round: the event still waits a probe's delay.
      const fallback = this.core.clock.now() + this.delay(0);
      flight = this.write(store, p)
        .catch((err: unknown) => {
          this.core.log.error(`handoff pause for ${store.shopDomain} not recorded: ${errorLine(err)}`);
          return fallback;
        })
        .finally(() => this.pausing.delete(store.id));
      this.pausing.set(store.id, flight);
    }
    return flight;
  }

  private async write(store: StoreRow, p: PauseRequest): Promise<number> {
    const { links } = this.core.repo;
    const now = this.core.clock.now();
    const link = await links.get(store.id);
    const probes = link && link.resumedAt != null && now - link.resumedAt < CONTINUE_BACKOFF_MS ? link.probes : 0;
    const row = await links.pause(store.id, p, now, probes, now + this.delay(probes));
    if (!this.book.has(store.id)) {
      this.core.log.warn(
        `handoff paused for ${store.shopDomain}: ${p.code} — ${p.message} Events wait; next probe ${new Date(row.nextProbeAt!).toISOString()}.`,
      );
    }
    this.book.set(store.id, row);
    return row.nextProbeAt!;
  }

  /**
   * Counts a send's outcome towards an outage: `transient` (no answer, a timeout, a 5xx) adds one, anything the
   * platform answered resets. The OUTAGE_AFTER_FAILURES-th in a row pauses the store (`platform_unavailable`): its
   * events stop being sent (and stop spending their retries) until a probe gets an answer. Resolves to the next
   * probe's time when it paused, else null.
   */
  async observe(store: StoreRow, transient: boolean, message: string): Promise<number | null> {
    if (!transient) {
      this.failing.delete(store.id);
      return null;
    }
    const n = (this.failing.get(store.id) ?? 0) + 1;
    this.failing.set(store.id, n);
    if (n < OUTAGE_AFTER_FAILURES) return null;
    this.failing.delete(store.id);
    return this.pause(store, {
      reason: 'platform_unavailable',
      code: 'SVC_PLATFORM_UNAVAILABLE',
      message: `${OUTAGE_AFTER_FAILURES} handoffs in a row to ${store.shopDomain} got no answer: ${message}`,
    });
  }

  /** Runs the probes that are due (one per store across instances); returns how many stores resumed. */
  async probeDue(timeoutMs: number): Promise<number> {
    let resumed = 0;
    for (const [storeId, row] of [...this.book]) {
      const now = this.core.clock.now();
      if (row.nextProbeAt == null || row.nextProbeAt > now) continue;
      const taken = await this.core.repo.links.takeProbe(storeId, now, now + timeoutMs * 3 + 30_000);
      if (!taken) continue;
      const store = await this.core.repo.getStore(storeId);
      const destination = store ? this.destinationOf(store) : null;
      // Nothing left to probe (the store is gone, or now hands off to log): the pause has no cause any more.
      const check = store && destination?.probe ? await destination.probe(store, timeoutMs) : null;
      const at = this.core.clock.now();
      if (!check || check.result === 'ok') {
        await this.core.repo.links.resume(storeId, at);
        this.book.delete(storeId);
        resumed++;
        this.core.log.info(`handoff resumed for ${store?.shopDomain ?? storeId} after ${taken.probes + 1} probe(s): ${check?.message ?? 'nothing to probe'}`);
        continue;
      }
      // Still down, or down another way (a probe that finds the credentials refused turns the pause into theirs).
      const pause: PauseRequest = check.pause ?? { reason: taken.pauseReason as PauseReason, code: taken.pauseCode as PauseCode, message: check.message };
      const next = at + this.delay(taken.probes + 1);
      await this.core.repo.links.probeFailed(storeId, pause, at, next);
      this.book.set(storeId, {
        ...taken,
        probes: taken.probes + 1,
        nextProbeAt: next,
        pauseCode: pause.code,
        pauseMessage: pause.message,
        probeLeaseUntil: null,
      });
    }
    if (resumed) {
      await this.core.repo.notify?.('due', '').catch(() => undefined);
      this.resumed();
    }
    return resumed;
  }

  /** Equal-jitter exponential backoff between probes, from HandoffConfig's probe delays. */
  private delay(probes: number): number {
    const { probeBaseDelayMs, probeMaxDelayMs } = this.core.config.handoff;
    const exp = Math.min(probeMaxDelayMs, probeBaseDelayMs * 2 ** probes);
    return Math.round(exp / 2 + (this.random() * exp) / 2);
  }
}
