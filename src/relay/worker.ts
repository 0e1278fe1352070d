/**
 * The handoff worker inside `serve`: leases due events, hands each to its store's destination, records every
 * attempt, retries transient failures on a schedule of about a day (HandoffConfig.retrySchedule) with jitter. A
 * crash loses nothing: undelivered events stay due and are picked up again on restart.
 */
import { faultCode, storageFault } from './storage-health.ts';
import type { PlatformLinkStore } from '../../db/areas/platform-links.ts';
import type { HandoffQueue, ReadinessStore, RetentionStore, Signals, TenantStore } from '../../db/repo.ts';
import type { AttemptResult, AttemptRow, DueEvent, EndpointRow, EventRow, StoreRow } from '../../db/types.ts';
import { METRIC } from '../../db/types.ts';
import type { RetentionSwept } from '../../db/areas/retention.ts';
import type { CoreWith } from '../core.ts';
import type { DestinationName } from '../contract/platform.ts';
import { platformOf, platforms } from '../platform/registry.ts';
import type { Destination, HandoffOutcome, Platform } from '../platform/types.ts';
import { HandoffPauses } from './pauses.ts';
import { AttemptRecorder, nextTurn } from './recorder.ts';
import { IDEMPOTENCY_TTL_MS, RETRY_JITTER } from '../contract/limits.ts';
import { attemptMetrics } from '../lib/event-stats.ts';
import { parsedBody } from '../lib/fields.ts';
import { metrics } from '../lib/instruments.ts';
import { idFloor } from '../lib/ids.ts';
import { releaseHeld } from './release-held.ts';
import type { DirectHandoff } from './writer.ts';

/** How often the loop checks whether held events may flow again. */
const RELEASE_EVERY_MS = 1000;
/** Retention sweeps: how often, and how many rows of each kind at most per sweep (short transactions). */
const SWEEP_EVERY_MS = 60_000;
const SWEEP_CHUNK = 5_000;
/** Pause after a partial round, so a busy ingest feeds the worker batches rather than single events. */
const ROUND_GAP_MS = 10;
/** While receipts come straight from commits, the due events (retries, released, replays) are still claimed this often. */
const CLAIM_EVERY_MS = 1000;

/** Resolves at the next event-loop turn, after the I/O ready now (requests) has been handled. */

/** An endpoint and its store, as the inbound path has them in memory. */
export type EndpointLookup = (endpointId: string) => Promise<{ row: EndpointRow; store: StoreRow } | null>;

export type Destinations = Record<DestinationName, Destination>;

/** Each platform's destination of this runtime (tests replace some). */
export function defaultDestinations(core: CoreWith<{ links: PlatformLinkStore }>): Destinations {
  return Object.fromEntries(platforms.map((p) => [p.name, p.destination(core)])) as Destinations;
}

/** What the worker reads and writes: the queue, trigger readiness, stores, and the platform links (pauses). */
type WorkerCore = CoreWith<
  HandoffQueue &
    Pick<ReadinessStore, 'readinessOfStores'> &
    Pick<TenantStore, 'listStores' | 'getStore'> &
    Signals &
    RetentionStore & { links: PlatformLinkStore }
>;

export class HandoffWorker {
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private inFlight = new Set<Promise<void>>();
  private lastRelease = -Infinity;
  private lastSweep = -Infinity;
  private lastClaim = -Infinity;
  /** A commit left accepted receipts for the claim (the direct queue was full). */
  private claimNow = false;
  /** Receipts leased to this worker by their own commit, not yet handed off. */
  private direct: EventRow[] = [];
  private lookup: EndpointLookup | null = null;
  /** Math.random by default; tests pin it. */
  random: () => number = Math.random;
  /** Counts each recorded attempt for /metrics; the relay thread forwards them to the serving thread instead. */
  recordHandoff: (storeId: string, result: string) => void = (storeId, result) => metrics.handoff(storeId, result);

  /** Stores whose handoff is paused (credentials): their events wait for a probe instead of being sent. */
  readonly pauses: HandoffPauses;
  /** Attempts of sends that left this box, recorded as each ends (group-committed), not with the round's end. */
  private readonly recorder: AttemptRecorder;

  constructor(
    private readonly core: WorkerCore,
    private readonly destinations: Destinations = defaultDestinations(core),
  ) {
    this.recorder = new AttemptRecorder((results) => core.repo.recordAttempts(results));
    this.pauses = new HandoffPauses(
      core,
      (store) => this.destinationOf(store),
      () => {
        this.claimNow = true;
        this.wake();
      },
    );
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /**
   * Takes receipts straight from each group commit while running, up to two rounds ahead: the commit stores
   * them `queued` under this worker's lease, which saves the claim's second write of every event.
   */
  directHandoff(lookup: EndpointLookup): DirectHandoff {
    this.lookup = lookup;
    const { batchSize, concurrency, timeoutMs } = this.core.config.handoff;
    const max = 2 * batchSize;
    // A receipt at the back of a full queue waits for the round in progress and the next one, then has its own:
    // three rounds of up to a batch plus a quarter batch claimed, every attempt taking the whole timeout.
    const leaseMs = 3 * Math.ceil((batchSize + Math.ceil(batchSize / 4)) / concurrency) * timeoutMs + 30_000;
    return {
      lease: () => {
        const room = max - this.direct.length;
        if (!this.running || room <= 0) return null;
        return { until: this.core.clock.now() + leaseMs, max: room };
      },
      take: (events, due) => {
        if (due) this.claimNow = true;
        if (!events.length && !due) return;
        for (const e of events) this.direct.push(e);
        this.wake();
      },
    };
  }

  /** New receipts are due: skip the sleep. */
  wake(): void {
    this.wakeUp?.();
  }

  /**
   * Stops leasing new events and waits for the attempts in flight to be recorded. Receipts still in the direct
   * queue stay leased: they are due again when the lease ends, or at the next start of a SQLite serve.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    await Promise.all(this.inFlight);
    // They are stored under their lease; held here too, a later drain would hand them off beside the claim.
    this.direct.length = 0;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let handled = 0;
      try {
        if (this.core.clock.now() - this.lastRelease >= RELEASE_EVERY_MS) await this.releaseHeld();
        if (this.core.clock.now() - this.lastSweep >= SWEEP_EVERY_MS) await this.sweep();
        await this.probePaused();
        handled = await this.runOnce();
        if (this.failingWith) {
          this.core.log.info(`handoff worker: storage answers again (after ${this.failingWith})`);
          this.failingWith = null;
        }
      } catch (err) {
        this.reportFailure(err);
      }
      if (!this.running) continue;
      if (handled >= this.core.config.handoff.batchSize) {
        // A full round: more may be due. bun:sqlite answers synchronously, so yield to HTTP requests first.
        await nextTurn();
        continue;
      }
      if (handled > 0) {
        // A partial round: let receipts gather for a moment instead of running one round per group commit,
        // which under load costs more in per-round queries than the handoffs themselves.
        await Bun.sleep(ROUND_GAP_MS);
        continue;
      }
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

  /**
   * One round: receipts taken from commits first, then events claimed as due (every round without direct
   * receipts, when a commit left receipts to the claim, and at least every second), handed off `concurrency` at
   * a time. Each send to a platform is recorded as it ends (group-committed with the others ending meanwhile);
   * local sends and withdrawn attempts with the round's end, in one transaction. Returns how many.
   */
  async runOnce(): Promise<number> {
    const { clock, config } = this.core;
    const now = clock.now();
    const { batchSize, concurrency, timeoutMs } = config.handoff;
    const due = await this.takeDirect(batchSize);
    if (!due.length || this.claimNow || now - this.lastClaim >= CLAIM_EVERY_MS) {
      this.lastClaim = now;
      this.claimNow = false;
      const limit = Math.max(batchSize - due.length, Math.ceil(batchSize / 4));
      // Long enough for the last lane to finish the round even if every attempt times out.
      const leaseUntil = now + timeoutMs * Math.ceil((due.length + limit) / concurrency) + 30_000;
      // A claimed event is never one taken directly (takeDirect leaves those whose lease ended), but a round
      // must not hand one event off twice whatever the two paths return.
      const taken = new Set(due.map((d) => d.event.id));
      for (const d of await this.core.repo.claimDue(now, limit, leaseUntil)) if (!taken.has(d.event.id)) due.push(d);
    }
    if (!due.length) return 0;
    const handled = due.length;
    await this.pauses.refresh();
    // Before deferring a paused store's events, make sure it still is: a resume elsewhere (an install, store set, a
    // peer's probe) would otherwise leave them waiting for the next probe.
    if (due.some((d) => this.pauses.waitUntil(d.store.id) != null)) await this.pauses.refresh(true);
    await this.journal(due);
    // bun:sqlite answers synchronously and a local send (the log destination) resolves at once, so without these
    // turns the journal, every send and the record run as one block of milliseconds: requests read meanwhile
    // wait, and the group commit gathering them sees a turn without receipts and commits a short batch.
    await nextTurn();
    const results: AttemptResult[] = [];
    /** Results recorded with the round's end: local sends (log) and attempts withdrawn unsent. */
    const atEnd: AttemptResult[] = [];
    // Within each store's budget on its platform: the rest of its events wait for their send times, unsent. Readiness
    // and budgets are read side by side (on PostgreSQL, one round trip's wait instead of two).
    const [noWorkflow, { send, waiting }] = await Promise.all([this.triggersWithoutWorkflow(due), this.paced(due)]);
    atEnd.push(...waiting);
    let i = 0;
    const lane = async () => {
      while (i < send.length) {
        const d = send[i++]!;
        const r = await this.handOff(d, noWorkflow);
        results.push(r);
        // A send that left this box is recorded before the lane's next one (see AttemptRecorder).
        if (this.destinationOf(d.store).external !== false && !r.unsent) await this.recorder.record(r);
        else atEnd.push(r);
      }
    };
    // Every lane ends before the round does (one whose record failed stops sending; the others finish theirs).
    const round = Promise.allSettled(Array.from({ length: Math.min(concurrency, send.length) }, lane)).then(async (lanes) => {
      await nextTurn();
      await this.core.repo.recordAttempts(atEnd);
      const failed = lanes.find((l) => l.status === 'rejected');
      if (failed) throw failed.reason;
    });
    this.inFlight.add(round);
    try {
      await round;
    } finally {
      this.inFlight.delete(round);
    }
    for (const r of results) {
      if (r.unsent) continue;
      this.recordHandoff(r.storeId, r.attempt.outcome);
      if (r.attempt.outcome !== 'delivered') {
        this.core.log.warn(
          `handoff ${r.attempt.eventId} attempt ${r.attempt.number}: ${r.attempt.outcome} (${r.attempt.code}${r.attempt.httpStatus ? ` HTTP ${r.attempt.httpStatus}` : ''})`,
        );
      }
    }
    return handled;
  }

  /**
   * Journals the round's sends that leave this box `sending` before any send, so a crash after a send leaves it
   * visible (`unknown`) rather than silently repeated. An event whose attempt number is journaled already belongs to
   * another worker: it leaves the round unsent. A local send (the log destination) is not journaled: nothing of it
   * leaves the box, and its record checks the lease instead (AttemptResult.unjournaled).
   */
  private async journal(due: DueEvent[]): Promise<void> {
    const startedAt = this.core.clock.now();
    // A send must be over before its lease ends: one whose lease would end inside the send's timeout is left for
    // the claim that follows the lease, never started (another worker could take the event mid-send).
    const endsBy = startedAt + this.core.config.handoff.timeoutMs;
    const sendable = due.filter(({ event }) => event.leaseUntil == null || event.leaseUntil >= endsBy);
    const external = sendable.filter(({ store }) => this.destinationOf(store).external !== false);
    const starts = external.map(({ event, store }) => ({
      eventId: event.id,
      number: event.attempts + 1,
      destination: this.destinationOf(store).name,
      startedAt,
    }));
    const written = starts.length ? await this.core.repo.journalAttempts(starts) : [];
    if (written.length + sendable.length - external.length === due.length) return;
    const kept = new Set(written.map((a) => a.eventId));
    for (const d of sendable) if (this.destinationOf(d.store).external === false) kept.add(d.event.id);
    const left = due.filter((d) => kept.has(d.event.id));
    due.length = 0;
    due.push(...left);
  }

  /** A local send's lease, which its record checks in place of a journal entry (see journal); undefined for the others. */
  private unjournaled(event: EventRow, destination: Destination): AttemptResult['unjournaled'] {
    return destination.external === false ? { leaseUntil: event.leaseUntil } : undefined;
  }

  /**
   * The round's sends, stores interleaved so lanes serve them fairly, each store's cut to what its budget on the
   * platform pays for now; the rest of its events get their send times (withdrawn unsent, due again then). A store
   * whose handoff is paused is not paced: its events are deferred to the probe anyway.
   */
  private async paced(due: DueEvent[]): Promise<{ send: DueEvent[]; waiting: AttemptResult[] }> {
    const byStore = new Map<string, DueEvent[]>();
    for (const d of due) {
      const list = byStore.get(d.store.id);
      if (list) list.push(d);
      else byStore.set(d.store.id, [d]);
    }
    const waiting: AttemptResult[] = [];
    // Each destination's stores paced at once: their budgets read and spent in a constant number of statements a
    // round, however many stores it holds. A paused store is not paced (its events wait for the probe anyway).
    const byDestination = new Map<Destination, { store: StoreRow; wanted: number }[]>();
    for (const [storeId, list] of byStore) {
      const destination = this.destinationOf(list[0]!.store);
      if (!destination.pace || this.pauses.waitUntil(storeId) != null) continue;
      const wants = byDestination.get(destination);
      if (wants) wants.push({ store: list[0]!.store, wanted: list.length });
      else byDestination.set(destination, [{ store: list[0]!.store, wanted: list.length }]);
    }
    for (const [destination, wants] of byDestination) {
      // Budgets that cannot be read must not stop the stores: everything goes, and THROTTLED replies say the rest.
      const paces = await destination.pace!(wants).catch(() => wants.map((w) => ({ granted: w.wanted, later: [] as number[] })));
      for (const [k, { store }] of wants.entries()) {
        const { granted, later } = paces[k]!;
        const list = byStore.get(store.id)!;
        for (const [j, d] of list.slice(granted).entries()) waiting.push(this.unsent(d.event, d.store, d.event.attempts + 1, later[j]!, []));
        byStore.set(store.id, list.slice(0, granted));
      }
    }
    const send: DueEvent[] = [];
    const lists = [...byStore.values()];
    for (let k = 0; lists.some((q) => k < q.length); k++) for (const q of lists) if (k < q.length) send.push(q[k]!);
    return { send, waiting };
  }

  private destinationOf(store: StoreRow): Destination {
    return this.destinations[platformOf(store.destination).name];
  }

  /**
   * Up to `limit` receipts from the direct queue, with their endpoint and store from the inbound cache. One
   * whose lease has ended is left to the claim, which may have taken it already.
   */
  private async takeDirect(limit: number): Promise<DueEvent[]> {
    const out: DueEvent[] = [];
    if (!this.direct.length || !this.lookup) return out;
    const now = this.core.clock.now();
    const events = this.direct.splice(0, limit).filter((e) => e.leaseUntil != null && e.leaseUntil > now);
    // One lookup per endpoint, all at once: a round of quiet stores holds as many endpoints as receipts, and one the
    // cache no longer holds is read from storage (on PostgreSQL, round trips side by side, not one after another).
    const ids = [...new Set(events.map((e) => e.endpointId))];
    const lookup = this.lookup;
    const endpoints = new Map((await Promise.all(ids.map((id) => lookup(id)))).map((live, i) => [ids[i]!, live]));
    for (const event of events) {
      const live = endpoints.get(event.endpointId);
      // An endpoint gone meanwhile: the lease runs out and the claim path decides, as for any claimed event.
      if (live) out.push({ event, endpoint: live.row, store: live.store });
    }
    return out;
  }

  /** Held events flow again when their store has capacity (a new period or a bigger plan). */
  async releaseHeld(): Promise<number> {
    this.lastRelease = this.core.clock.now();
    return releaseHeld(this.core);
  }

  /** The storage fault of the last failed round, so an outage is one log line when it starts, not one a second. */
  private failingWith: string | null = null;

  /**
   * A round that failed: a storage fault is logged once with its driver code when it starts (a query's text and
   * parameters never: drizzle puts them in its message); any other error each time, by its class.
   */
  private reportFailure(err: unknown): void {
    const fault = storageFault(err);
    if (fault) {
      if (this.failingWith !== fault)
        this.core.log.error(`handoff worker: storage unavailable (${fault}); events wait and are handed off once it answers`, { code: faultCode(err) });
      this.failingWith = fault;
      return;
    }
    this.core.log.error(
      `handoff worker: ${err instanceof Error ? err.name : 'error'}: ${err instanceof Error ? (err.message.split('\n')[0] ?? '').split(/params:/i)[0]!.slice(0, 200) : ''}`,
    );
  }

  /**
   * Retention, a chunk of each kind at a time: raw bodies past their expiry or older than the body retention in
   * effect now (a shortened one reaches bodies already stored), day-old idempotency keys, and every other kind of
   * row past the operator's retention (Config.retention; never an event still waiting).
   */
  async sweep(): Promise<{ bodies: number; idempotencyKeys: number } & RetentionSwept> {
    const now = (this.lastSweep = this.core.clock.now());
    const swept = await this.core.repo.sweepExpired(now, now - IDEMPOTENCY_TTL_MS, SWEEP_CHUNK, idFloor('evt', now - this.core.config.bodyRetentionMs));
    const r = this.core.config.retention;
    const rows = await this.core.repo.sweepRetention({
      eventsBeforeId: idFloor('evt', now - r.events),
      auditBeforeId: idFloor('aud', now - r.audit),
      intentsBeforeId: idFloor('int', now - r.intents),
      intentsEndedBefore: now - r.intents,
      requestsBefore: now - r.requests,
      authFailuresBefore: now - r.authFailures,
      now,
      limit: SWEEP_CHUNK,
    });
    if (swept.bodies) this.core.log.info(`retention: deleted ${swept.bodies} raw bodies past their retention`);
    const kinds = Object.entries(rows).filter(([, n]) => n > 0);
    if (kinds.length) this.core.log.info(`retention: deleted ${kinds.map(([k, n]) => `${n} ${k}`).join(', ')} past their retention`);
    // A full chunk: more may be waiting; come back on the next pass rather than in a minute.
    if ([swept.bodies, swept.idempotencyKeys, ...Object.values(rows)].some((n) => n >= SWEEP_CHUNK)) this.lastSweep = -Infinity;
    return { ...swept, ...rows };
  }

  /** Probes paused stores whose probe is due; a store that resumes has its waiting events claimed at once. */
  async probePaused(): Promise<number> {
    await this.pauses.refresh();
    return this.pauses.size ? this.pauses.probeDue(this.core.config.handoff.timeoutMs) : 0;
  }

  /** Runs until nothing is due at the current clock time (tests, shutdown drains), probing paused stores first. */
  async drain(maxRounds = 1000): Promise<void> {
    await this.releaseHeld();
    await this.probePaused();
    for (let r = 0; r < maxRounds; r++) if ((await this.runOnce()) === 0) return;
  }

  /**
   * `store\0handle` of the triggers Flow's lifecycle callback last reported without an enabled workflow. A
   * trigger never reported on is handed off: only a report of `has_enabled_flow: false` stops a handoff.
   */
  private async triggersWithoutWorkflow(due: DueEvent[]): Promise<Set<string>> {
    const out = new Set<string>();
    // Each platform's stores of the round in one read.
    const byPlatform = new Map<Platform, Set<string>>();
    for (const { store } of due) {
      const platform = platformOf(store.destination);
      const ids = byPlatform.get(platform);
      if (ids) ids.add(store.id);
      else byPlatform.set(platform, new Set([store.id]));
    }
    for (const [platform, ids] of byPlatform)
      for (const [storeId, handles] of await platform.withoutWorkflow(this.core.repo, [...ids]))
        for (const handle of handles) out.add(`${storeId}\u0000${handle}`);
    return out;
  }

  /** One attempt; returns what to record (the caller records a whole round at once). */
  private async handOff({ event, endpoint, store }: DueEvent, noWorkflow: Set<string>): Promise<AttemptResult> {
    const { clock, config } = this.core;
    const destination = this.destinationOf(store);
    const number = event.attempts + 1;
    const startedAt = clock.now();

    // A paused store sends nothing: the event waits for the probe, its journaled attempt withdrawn.
    const pausedUntil = this.pauses.waitUntil(store.id);
    if (pausedUntil != null) return this.unsent(event, store, number, Math.max(pausedUntil, startedAt + 1000));

    // The trigger and its payload: built and size-checked once for this send. The body is read (a promise awaited)
    // only for an endpoint that hands typed fields or the body off.
    const doc = endpoint.fields === '[]' && !endpoint.includeBody ? undefined : await this.bodyFor(event);
    const handoff = platformOf(store.destination).handoff(endpoint, event, doc);
    let outcome: HandoffOutcome;
    let refusedCode: string | null = null;
    if (noWorkflow.size && noWorkflow.has(`${store.id}\u0000${handoff.handle}`)) {
      outcome = { kind: 'no_workflow', httpStatus: null, errorClass: 'no_workflow', message: `Flow reports no enabled workflow for ${handoff.handle}.` };
    } else if (!handoff.ok) {
      outcome = { kind: 'failed', httpStatus: null, errorClass: handoff.errorClass, message: handoff.message };
      refusedCode = handoff.code;
    } else {
      try {
        outcome = await destination.send({ store, endpoint, event, handle: handoff.handle, payload: handoff.payload }, config.handoff.timeoutMs);
      } catch {
        outcome = { kind: 'retry', httpStatus: null, errorClass: 'network', message: 'Handoff failed unexpectedly.' };
      }
    }
    // THROTTLED: nothing ran, no attempt is spent; the event goes again when the budget pays for it.
    if (outcome.kind === 'deferred') return this.unsent(event, store, number, outcome.until, [METRIC.error('throttled')]);
    // Credentials missing or refused are never the event's failure: the store pauses, the event waits for the probe.
    const probeAt = outcome.kind === 'paused' ? Math.max(await this.pauses.pause(store, outcome.pause), startedAt + 1000) : null;
    if (outcome.kind !== 'paused' && destination.probe) {
      // A platform that keeps not answering pauses the store too: this event retries on its schedule, the rest wait.
      const transient =
        outcome.kind === 'retry' && (outcome.errorClass === 'network' || outcome.errorClass === 'timeout' || outcome.errorClass === 'server_error');
      await this.pauses.observe(store, transient, outcome.kind === 'retry' ? outcome.message : '');
    }
    if (outcome.kind === 'paused' && !outcome.sent) return this.unsent(event, store, number, probeAt!);
    const finishedAt = clock.now();

    let attemptOutcome: AttemptRow['outcome'];
    let eventOutcome: string;
    let code: string | null = null;
    let nextAttemptAt: number | null = null;
    if (outcome.kind === 'paused') {
      attemptOutcome = 'retry';
      eventOutcome = 'queued';
      nextAttemptAt = probeAt;
    } else if (outcome.kind === 'delivered') {
      attemptOutcome = eventOutcome = 'delivered';
    } else if (outcome.kind === 'no_workflow') {
      attemptOutcome = eventOutcome = 'no_workflow';
      code = 'SVC_NO_WORKFLOW';
    } else if (outcome.kind === 'retry' && number <= config.handoff.retrySchedule.length) {
      attemptOutcome = 'retry';
      eventOutcome = 'queued';
      nextAttemptAt = finishedAt + this.backoff(number, outcome.retryAfterMs);
    } else {
      attemptOutcome = eventOutcome = 'failed';
      code = outcome.kind === 'retry' ? 'SVC_HANDOFF_RETRY_EXHAUSTED' : (refusedCode ?? 'SVC_HANDOFF_REJECTED');
    }

    const attempt = {
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
      fieldCounts: handoff.ok ? handoff.fieldCounts : null,
    };
    return {
      attempt,
      unjournaled: this.unjournaled(event, destination),
      storeId: store.id,
      metrics: attemptMetrics(attempt, event.receivedAt),
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
   * The event's body, parsed, for an endpoint that hands typed fields or the body off (handOff asks): read from
   * storage for this send only (undefined once retention has removed it). Never logged or recorded: only what the
   * fields found is.
   */
  private async bodyFor(event: EventRow): Promise<unknown> {
    return parsedBody(await this.core.repo.getEventBody(event.id));
  }

  /**
   * An attempt journaled but not sent (or refused before it ran: THROTTLED): withdrawn when recorded, the event
   * queued until `until`, its attempts unchanged. `metrics`: event_stats counters it still adds (a throttled send).
   */
  private unsent(event: EventRow, store: StoreRow, number: number, until: number, metrics: string[] = []): AttemptResult {
    const at = this.core.clock.now();
    const destination = this.destinationOf(store);
    return {
      unsent: true,
      attempt: {
        eventId: event.id,
        number,
        destination: destination.name,
        startedAt: at,
        finishedAt: at,
        outcome: 'retry',
        httpStatus: null,
        code: null,
        message: null,
        retryAt: until,
      },
      unjournaled: this.unjournaled(event, destination),
      storeId: store.id,
      metrics,
      event: { outcome: 'queued', code: null, nextAttemptAt: until, leaseUntil: null, deliveredAt: null },
    };
  }

  /**
   * The schedule's delay before retry `attempt`, shortened by up to RETRY_JITTER at random (retries of one outage
   * spread out). A platform's Retry-After is a floor: retrying before it only earns another 429.
   */
  private backoff(attempt: number, retryAfterMs?: number): number {
    const schedule = this.core.config.handoff.retrySchedule;
    const d = schedule[Math.min(attempt, schedule.length) - 1] ?? 0;
    const jittered = Math.round(d * (1 - RETRY_JITTER + RETRY_JITTER * this.random()));
    return retryAfterMs != null ? Math.max(retryAfterMs, jittered) : jittered;
  }
}
