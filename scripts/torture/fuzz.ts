/**
 * Part 2, fuzz: every operation of the served OpenAPI document (and /hooks/*) with hostile input; each answer is
 * judged against the documented shapes, and every 5xx is counted, answered or only logged (a client hang-up).
 */
import { api, sign } from '../bench/_lib.ts';
import { Box, log } from './_box.ts';
import { generateCases, rawCases, type FuzzCase, type FuzzWorld } from './_fuzz-cases.ts';
import type { Rand } from './_rand.ts';
import { rawRequest } from './_raw.ts';
import { contractOf, judge, type Answer } from './_shape.ts';

export interface FuzzOptions {
  bin: string;
  rand: Rand;
  cases: number;
  /** Requests in flight at once. */
  concurrency: number;
  keep: boolean;
}

export interface FuzzFigures {
  cases: number;
  operations: number;
  /** Answers by HTTP status (`none`: the connection closed without one). */
  statuses: Record<string, number>;
  /** 5xx the suite received. */
  answered5xx: number;
  /** 5xx the server logged (includes answers nobody received, e.g. after a client hang-up). */
  logged5xx: number;
  /** 5xx: the larger of the two. */
  serverErrors: number;
  undocumented: number;
  /** The first offenders: the case and why its answer is not a documented shape. */
  offenders: string[];
  /**
   * Requests Bun's HTTP parser answers before hookrelay runs (malformed HTTP; headers past Bun's 16 KiB limit, a bare
   * 431 the README documents): what came back, listed apart and not counted as undocumented.
   */
  parserLevel: string[];
  /** Requests carrying two values of an auth header (bearer or signature) that were accepted (2xx). */
  duplicateAuthAccepted: number;
  /** Whether the server was still up at the end. */
  survived: boolean;
}

/**
 * Bun answers a request whose head is past 16 KiB with a bare 431 before hookrelay runs (the README documents it): a
 * generated case whose target and headers reach that (several hostile query values of thousands of characters) is
 * answered by the parser too. The margin is the headers fetch adds (Host, User-Agent, Accept, Content-Length…).
 */
const BUN_HEAD_LIMIT = 16 * 1024;
const HEAD_MARGIN = 512;
const headBytes = (c: FuzzCase) =>
  Buffer.byteLength(`${c.method} ${c.target} HTTP/1.1\r\n`) + Object.entries(c.headers).reduce((n, [k, v]) => n + Buffer.byteLength(`${k}: ${v}\r\n`), 0);

const STORES = 3;
const GRANTS_PER_STORE = 2;
const REQUEST_TIMEOUT_MS = 15_000;

/** Stores, grants and real ids for the cases to aim at. */
async function world(box: Box): Promise<FuzzWorld> {
  const stores: FuzzWorld['stores'] = [];
  const shops = Array.from({ length: STORES }, (_, i) => `fuzz-${i}.myshopify.com`);
  const grants = shops.map((shop) => {
    box.initStore(shop);
    return Array.from({ length: GRANTS_PER_STORE }, () => box.issueGrant(shop));
  });
  const observerToken = box.issueGrant(shops[0]!, 'observer');
  await box.start();
  for (const tokens of grants) {
    const created = await api(box.base, tokens[0]!, 'POST', '/agent/v1/endpoints', { triggerVariant: 'generic', name: 'torture fuzz' });
    const endpointId: string = created.data.endpoint.id;
    const secret: string = created.data.secret;
    const body = JSON.stringify({ event_type: 'torture.seed', external_event_id: 'seed-1', order: { id: 1 } });
    const res = await fetch(`${box.base}/hooks/${endpointId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hookrelay-signature': sign(secret, body) },
      body,
    });
    const eventId: string = ((await res.json()) as any).eventId;
    // A replay is offered once the event has settled: a preview the moment after its 202 may find it still in flight.
    await settled(box.base, tokens[0]!, eventId);
    const preview = await api(box.base, tokens[0]!, 'POST', `/agent/v1/events/${eventId}/replay-intents`, { mode: 'preview', input: { reason: 'torture' } });
    const intent = preview.data.intent;
    stores.push({ tokens, endpointId, secret, eventId, intent: { id: intent.id, confirmationToken: intent.confirmation?.token ?? 'x' } });
  }
  return { stores, observerToken };
}

/** Waits until the worker has handed the event off (at most 10 s). */
async function settled(base: string, token: string, eventId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { data } = await api(base, token, 'GET', `/agent/v1/events/${eventId}`);
    if (data.event.outcome === 'delivered') return;
    if (Date.now() > deadline) throw new Error(`seed event ${eventId} still ${data.event.outcome} after 10 s`);
    await Bun.sleep(20);
  }
}

async function send(box: Box, c: FuzzCase, signal: AbortSignal): Promise<Answer | null> {
  if (c.raw) return rawRequest(box.port, c.raw.head, c.body ?? '', { hangUpAfter: c.raw.hangUpAfter, timeoutMs: REQUEST_TIMEOUT_MS });
  try {
    const res = await fetch(`${box.base}${c.target}`, { method: c.method, headers: c.headers, body: c.body, signal });
    const contentType = res.headers.get('content-type') ?? '';
    // An event stream (MCP) may stay open: its status and type are what is judged, not its frames.
    if (/^text\/event-stream/i.test(contentType)) {
      await res.body?.cancel().catch(() => {});
      return { status: res.status, contentType, text: '' };
    }
    return { status: res.status, contentType, text: await res.text() };
  } catch {
    return null;
  }
}

/** `send`, bounded: past the timeout the request is aborted and the case counts as unanswered. */
async function sendBounded(box: Box, c: FuzzCase): Promise<Answer | null | 'timeout'> {
  const abort = new AbortController();
  let timer: Timer | undefined;
  const late = new Promise<'timeout'>((r) => {
    timer = setTimeout(() => {
      abort.abort();
      r('timeout');
    }, REQUEST_TIMEOUT_MS + 1_000); // a raw request keeps its own deadline and answers with what it got
  });
  try {
    return await Promise.race([send(box, c, abort.signal), late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function fuzzPart(o: FuzzOptions): Promise<FuzzFigures> {
  const box = new Box({ bin: o.bin, name: 'fuzz' });
  try {
    const w = await world(box);
    const doc: any = await (await fetch(`${box.base}/agent/v1/openapi.json`)).json();
    const contract = contractOf(doc);
    const cases = [...rawCases(w), ...generateCases(doc, w, o.rand, Math.max(0, o.cases - rawCases(w).length))];
    const operations = Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item).filter((op) => op?.operationId)).length;
    log(`fuzz: ${cases.length} cases over ${operations} operations and /hooks/*`);

    const statuses: Record<string, number> = {};
    const offenders: string[] = [];
    const parserLevel: string[] = [];
    let duplicateAuthAccepted = 0;
    let undocumented = 0;
    let answered5xx = 0;
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const i = next++;
        const c = cases[i]!;
        if (i > 0 && i % 500 === 0) log(`fuzz: ${i}/${cases.length} cases sent`);
        const a = await sendBounded(box, c);
        if (c.raw?.hangUpAfter !== undefined) continue;
        const key = a === null ? 'none' : a === 'timeout' ? 'timeout' : String(a.status);
        statuses[key] = (statuses[key] ?? 0) + 1;
        const why =
          a === null
            ? 'the connection closed without an answer'
            : a === 'timeout'
              ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`
              : judge(contract, c.surface, a);
        if (a && a !== 'timeout' && a.status >= 500) answered5xx++;
        if (c.label.startsWith('raw duplicate') && a && a !== 'timeout' && a.status < 300) duplicateAuthAccepted++;
        if (c.raw?.parser || (a && a !== 'timeout' && a.status === 431 && headBytes(c) > BUN_HEAD_LIMIT - HEAD_MARGIN)) {
          parserLevel.push(`${c.label} -> ${why ?? `HTTP ${(a as Answer).status}, documented`}`);
        } else if (why) {
          undocumented++;
          if (offenders.length < 12) offenders.push(`${c.label.slice(0, 110)} -> ${why.slice(0, 200)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    await Bun.sleep(200); // the hang-up requests' log lines
    const survived = box.alive() && (await box.statusOk());
    const logged5xx = box
      .serverLog()
      .split('\n')
      .filter((l) => /^\S+ [A-Z]+ \S+ 5\d\d [\d.]+ms$/.test(l.trim())).length;
    return {
      cases: cases.length,
      operations,
      statuses,
      answered5xx,
      logged5xx,
      serverErrors: Math.max(answered5xx, logged5xx),
      undocumented,
      offenders,
      parserLevel,
      duplicateAuthAccepted,
      survived,
    };
  } finally {
    await box.dispose(o.keep);
  }
}
