/**
 * Part 1, crash: concurrent signed senders against `serve`, killed (-9) and stopped (SIGTERM) at random moments and
 * restarted on the same data dir; then every acknowledged event is looked up, and the fake Flow counts handoffs.
 */
import { api, sign } from '../bench/_lib.ts';
import { b, startFakeShopify } from '../../test/fixtures/fake-shopify.ts';
import { ADMIN_TOKEN_ENV, Box, call, log } from './_box.ts';
import type { Rand } from './_rand.ts';
import { defaultConfig } from '../../src/core.ts';

export interface CrashOptions {
  bin: string;
  rand: Rand;
  kills: number;
  terms: number;
  senders: number;
  keep: boolean;
}

export interface CrashFigures {
  kills: number;
  terms: number;
  /** SIGTERM rounds that did not exit 0 within the grace period. */
  termsUnclean: number;
  /** 202 with an eventId. */
  acknowledged: number;
  /** Acknowledged and present in the database afterwards. */
  found: number;
  /** Acknowledged but absent: must be 0. */
  lost: number;
  lostIds: string[];
  /** Stored though the sender never saw the 202 (killed between commit and reply): a sender would retry. */
  storedUnacknowledged: number;
  /** Events the fake Flow received more than once. */
  repeats: number;
  /** Repeats delivered twice within one server run (no kill between): not explained by any crash. */
  repeatsWithinOneRun: number;
  /** Repeats whose first delivery's server was stopped with SIGTERM, which should record what it handed off. */
  repeatsAcrossSigterm: number;
  /** Repeats with fewer `unknown` attempts in event detail than extra deliveries. */
  repeatsUnexplained: number;
  /** The most repeats first sent by one server run that ended with kill -9. */
  repeatsPerKillMax: number;
  /** Kill rounds whose run repeated more events than the sends a server has in flight (its handoff concurrency). */
  killRoundsOverBound: number;
  /** That bound: `defaultConfig().handoff.concurrency`, what the binary runs with. */
  inFlightBound: number;
  /** `delivered` in the database, but the fake never received it. */
  deliveredWithoutHandoff: number;
  /** Still accepted or queued when the drain wait ended. */
  pendingAtEnd: number;
  /** Sender requests by outcome: HTTP status, or `network` (refused or cut by a kill). */
  answers: Record<string, number>;
  /** ERROR lines the servers logged. */
  serverErrorLines: number;
}

const SHOP = 'crash.myshopify.com';

export async function crashPart(o: CrashOptions): Promise<CrashFigures> {
  const fake = startFakeShopify();
  // Every handoff is answered after a short, varying delay, so kills land mid-handoff as well as between them.
  fake.script(...Array.from({ length: 200_000 }, () => b.slow(o.rand.int(1, 25))));
  const box = new Box({ bin: o.bin, name: 'crash', env: { HOOKRELAY_SHOPIFY_ADMIN_URL: fake.url } });
  try {
    box.initStore(SHOP, ['--destination', 'shopify', '--admin-token-env', ADMIN_TOKEN_ENV]);
    const token = box.issueGrant(SHOP);
    await box.start();
    const created = await api(box.base, token, 'POST', '/agent/v1/endpoints', { triggerVariant: 'generic', name: 'torture crash' });
    const hookUrl = `${box.base}/hooks/${created.data.endpoint.id}`;
    const secret: string = created.data.secret;

    const acked = new Set<string>();
    const answers: Record<string, number> = {};
    let sending = true;
    const sender = async (s: number) => {
      for (let n = 0; sending; n++) {
        const body = JSON.stringify({ event_type: 'torture.crash', external_event_id: `crash-${s}-${n}`, order: { id: n + 1 }, sender: s });
        try {
          const res = await fetch(hookUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-hookrelay-signature': sign(secret, body) },
            body,
            signal: AbortSignal.timeout(15_000),
          });
          const text = await res.text();
          answers[res.status] = (answers[res.status] ?? 0) + 1;
          if (res.status === 202) {
            const id = JSON.parse(text).eventId;
            if (typeof id === 'string') acked.add(id);
          } else await Bun.sleep(10);
        } catch {
          answers.network = (answers.network ?? 0) + 1;
          await Bun.sleep(10);
        }
      }
    };
    const senders = Array.from({ length: o.senders }, (_, s) => sender(s));

    const rounds: ('kill' | 'term')[] = Array.from({ length: o.kills }, () => 'kill' as const);
    for (let t = 0; t < o.terms; t++) rounds.splice(o.rand.int(0, rounds.length), 0, 'term');
    let termsUnclean = 0;
    /** fake.requests.length at each stop: deliveries before the first belong to run 0, and so on. */
    const boundaries: number[] = [];
    for (const [i, round] of rounds.entries()) {
      await Bun.sleep(o.rand.int(300, 1500));
      if (round === 'kill') await box.kill9();
      else if ((await box.term()) !== 0) termsUnclean++;
      // Taken once the process is gone and the fake has read what reached its socket, so a delivery counted
      // after this mark can only come from the next server.
      await Bun.sleep(50);
      boundaries.push(fake.requests.length);
      log(`crash: round ${i + 1}/${rounds.length} ${round === 'kill' ? 'kill -9' : 'SIGTERM'} after ${acked.size} acknowledged`);
      await box.start();
    }
    await Bun.sleep(500);
    sending = false;
    await Promise.all(senders);

    // Let the worker hand off what is due, so the delivery counts below are final.
    const pending = () => box.db((d) => d.query<{ n: number }, []>(`SELECT count(*) AS n FROM events WHERE outcome IN ('accepted', 'queued')`).get()!.n);
    const drainUntil = Date.now() + 60_000;
    while (pending() > 0 && Date.now() < drainUntil) await Bun.sleep(200);
    const pendingAtEnd = pending();

    const deliveries = new Map<string, number>();
    const runsOf = new Map<string, number[]>();
    for (const [i, r] of fake.requests.entries()) {
      const id = String(r.payload['hookrelay event id'] ?? '');
      deliveries.set(id, (deliveries.get(id) ?? 0) + 1);
      const run = boundaries.filter((b) => b <= i).length;
      runsOf.set(id, [...(runsOf.get(id) ?? []), run]);
    }
    const repeated = [...deliveries].filter(([, n]) => n > 1);
    const repeatsWithinOneRun = repeated.filter(([id]) => new Set(runsOf.get(id)).size < runsOf.get(id)!.length).length;
    const repeatsAcrossSigterm = repeated.filter(([id]) => rounds[runsOf.get(id)![0]!] === 'term').length;
    // Each send is recorded as it ends, before its lane's next: a kill can repeat only the sends in flight.
    const perRun = new Map<number, number>();
    for (const [id] of repeated) perRun.set(runsOf.get(id)![0]!, (perRun.get(runsOf.get(id)![0]!) ?? 0) + 1);
    const inFlightBound = defaultConfig().handoff.concurrency;
    const killRuns = [...perRun].filter(([run]) => rounds[run] === 'kill').map(([, n]) => n);
    let repeatsUnexplained = 0;
    for (const [id, n] of repeated) {
      if ((await unknownAttempts(box, token, id)) < n - 1) repeatsUnexplained++;
    }

    await box.term();
    const stored = box.db(
      (d) =>
        new Map(
          d
            .query<{ id: string; outcome: string }, []>('SELECT id, outcome FROM events')
            .all()
            .map((r) => [r.id, r.outcome]),
        ),
    );
    const lostIds = [...acked].filter((id) => !stored.has(id));
    const deliveredWithoutHandoff = [...stored].filter(([id, outcome]) => outcome === 'delivered' && !deliveries.has(id)).length;
    return {
      kills: o.kills,
      terms: o.terms,
      termsUnclean,
      acknowledged: acked.size,
      found: acked.size - lostIds.length,
      lost: lostIds.length,
      lostIds: lostIds.slice(0, 5),
      storedUnacknowledged: [...stored.keys()].filter((id) => !acked.has(id)).length,
      repeats: repeated.length,
      repeatsWithinOneRun,
      repeatsAcrossSigterm,
      repeatsUnexplained,
      repeatsPerKillMax: Math.max(0, ...killRuns),
      killRoundsOverBound: killRuns.filter((n) => n > inFlightBound).length,
      inFlightBound,
      deliveredWithoutHandoff,
      pendingAtEnd,
      answers,
      serverErrorLines: box
        .serverLog()
        .split('\n')
        .filter((l) => /\bERROR\b/.test(l)).length,
    };
  } finally {
    await box.dispose(o.keep);
    await fake.stop();
  }
}

/** Attempts with outcome `unknown` in the event's detail (the API); the database when the API will not say (429). */
async function unknownAttempts(box: Box, token: string, eventId: string): Promise<number> {
  const { status, json } = await call(box.base, token, 'GET', `/agent/v1/events/${eventId}`);
  if (status === 200) return (json.data.event.attemptsDetail as { outcome: string }[]).filter((a) => a.outcome === 'unknown').length;
  return box.db((d) => d.query<{ n: number }, [string]>(`SELECT count(*) AS n FROM attempts WHERE event_id = ? AND outcome = 'unknown'`).get(eventId)!.n);
}
