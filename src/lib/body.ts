/**
 * Raw request bodies, read once: capped, under a deadline, and (sent without a Content-Length) within a bound on how
 * many are read at once. Inbound hooks, the Flow lifecycle callback, API and MCP bodies all read through here.
 */
import { AppError } from '../contract/errors.ts';
import { BODY_READ } from '../contract/limits.ts';
import type { ClientOf } from './auth-failures.ts';

export type BodyLimits = { readonly [K in keyof typeof BODY_READ]: number };

/** One body being read: when it began, and how to cut the read it waits on. */
interface Read {
  started: number;
  cut: ((err: AppError) => void) | null;
}

let limits: BodyLimits = BODY_READ;
/** Every body being read in this process, oldest first (a Set keeps insertion order). */
const reads = new Set<Read>();
/** Bodies read as streams off the wire (chunked, no Content-Length) right now, in all and by client key. */
let streams = 0;
const streamsByClient = new Map<string, number>();
/** The client of each request whose body may be read as a stream (see bodyClient). */
const clients = new WeakMap<Request, ClientOf>();

/**
 * Names the client a request's body is counted against when it is read as a stream (app.ts, for each request
 * sent without a Content-Length), so that readCapped's callers need not pass it.
 */
export function bodyClient(req: Request, client: ClientOf): void {
  clients.set(req, client);
}
/**
 * One sweep for every read, instead of a timer per body: a timer set and cleared per receipt cost more CPU than the
 * rest of this bookkeeping together (docs/reliability.md). It runs while reads come, and stops when it finds none.
 */
let sweep: ReturnType<typeof setInterval> | null = null;

/** Replaces the limits (tests use a short deadline and a small bound); returns the ones replaced. */
export function setBodyLimits(next: BodyLimits): BodyLimits {
  const previous = limits;
  limits = next;
  if (sweep) clearInterval(sweep);
  sweep = null;
  return previous;
}

function timedOut(): AppError {
  return new AppError(
    'request_timeout',
    `The request body did not arrive within ${limits.deadlineMs / 1000} s; nothing was done. Send it again.`,
    undefined,
    undefined,
    {
      Connection: 'close',
    },
  );
}

function busy(fromClient: boolean): AppError {
  const s = limits.retryAfterSeconds;
  const where = fromClient ? ` from your address (at most ${limits.streamsPerClient})` : '';
  return new AppError(
    'server_busy',
    `Too many request bodies without a Content-Length are being received at once${where}; nothing was done. Retry after ${s} s, or send a Content-Length.`,
    undefined,
    undefined,
    { 'Retry-After': String(s), Connection: 'close' },
  );
}

function sweepReads(): void {
  if (reads.size === 0) {
    clearInterval(sweep!);
    sweep = null;
    return;
  }
  const cutoff = performance.now() - limits.deadlineMs;
  for (const r of reads) {
    if (r.started > cutoff) break; // the rest began later
    reads.delete(r);
    r.cut?.(timedOut());
  }
}

function begin(): Read {
  const r: Read = { started: performance.now(), cut: null };
  reads.add(r);
  if (!sweep) {
    sweep = setInterval(sweepReads, Math.min(1000, limits.deadlineMs / 4));
    sweep.unref?.();
  }
  return r;
}

/** `p`, unless the sweep cuts `r` first: then the deadline's 408. */
function guard<T>(r: Read, p: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    r.cut = reject;
    p.then(resolve, reject);
  });
}

/**
 * Reads the raw body up to `max` bytes; null when it is larger: declared so by Content-Length (nothing is read), or
 * found so while reading a body sent without one. Throws AppError `request_timeout` (408) when the body has not
 * arrived within BODY_READ.deadlineMs, and `server_busy` (503, Retry-After) for a chunked body off the wire past
 * BODY_READ.streamsInFlight, or past BODY_READ.streamsPerClient from its client (bodyClient); both ask for the connection to be closed (`Connection: close`), serve closes it.
 */
export function readCapped(req: Request, max: number): Promise<Uint8Array | null> {
  const declared = req.headers.get('content-length');
  if (declared === null) return readUndeclared(req, max);
  if (Number(declared) > max) return Promise.resolve(null);
  // Read whole when declared: touching req.body first would build a stream for nothing. `bytes()` is the body's own
  // Uint8Array (no view made over an ArrayBuffer), and this is not an async function: the answer is the read's one
  // promise, settled by the body or cut by the sweep, with no async frame and guard around it.
  const r = begin();
  return new Promise<Uint8Array | null>((resolve, reject) => {
    r.cut = reject;
    const done = (buf: Uint8Array) => {
      reads.delete(r);
      resolve(buf.byteLength > max ? null : buf);
    };
    const failed = (err: unknown) => {
      reads.delete(r);
      reject(err);
    };
    try {
      req.bytes().then(done, failed);
    } catch (err) {
      failed(err);
    }
  });
}

/** A body sent without a Content-Length: read as a stream, bounded (see readCapped). */
async function readUndeclared(req: Request, max: number): Promise<Uint8Array | null> {
  if (!req.body) return new Uint8Array(0);
  // Only a body coming off the wire (chunked) waits for the network, holding a read buffer: those are bounded. A
  // request made in this process (tests, a body passed on) streams from memory.
  const wired = req.headers.has('transfer-encoding');
  // Unknown (no address given): counted in the bound only.
  const who = wired ? (clients.get(req)?.() ?? null) : null;
  if (wired) {
    if (streams >= limits.streamsInFlight) throw busy(false);
    const mine = who === null ? 0 : (streamsByClient.get(who) ?? 0);
    if (mine >= limits.streamsPerClient) throw busy(true);
    streams++;
    if (who !== null) streamsByClient.set(who, mine + 1);
  }
  const r = begin();
  const reader = req.body.getReader();
  try {
    return await readStream(reader, r, max);
  } catch (err) {
    // Cut by the deadline (or the client hung up): cancelling frees the stream's buffer now, not at the close.
    reader.cancel().catch(() => {});
    throw err;
  } finally {
    if (wired) {
      streams--;
      if (who !== null) {
        const left = streamsByClient.get(who)! - 1;
        if (left > 0) streamsByClient.set(who, left);
        else streamsByClient.delete(who);
      }
    }
    reads.delete(r);
  }
}

/** What readStream needs of a stream's reader. */
interface ChunkReader {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
  cancel(): Promise<void>;
}

async function readStream(reader: ChunkReader, r: Read, max: number): Promise<Uint8Array | null> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await guard(r, reader.read());
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(own(value));
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

/**
 * A chunk of a body stream is a view into a buffer of Bun's read size, however few bytes it holds: a body trickled
 * in small chunks would hold one such buffer per chunk. A chunk holding less than half its buffer is copied, and the
 * buffer left to the collector (it may back other chunks: it is not ours to free).
 */
function own(chunk: Uint8Array): Uint8Array {
  return chunk.byteLength * 2 < chunk.buffer.byteLength ? chunk.slice() : chunk;
}

/**
 * Frees a body's bytes now (its buffer is detached) instead of at the next garbage collection. Under ingest the
 * bodies waiting for collection were the largest part of the peak RSS (~20 MiB of ArrayBuffers at 8k req/s). Only
 * for a body read by readCapped that nothing reads afterwards; a view into a larger buffer is left alone.
 */
export function releaseBody(body: Uint8Array): void {
  const buf = body.buffer;
  if (buf instanceof ArrayBuffer && !buf.detached && body.byteOffset === 0 && body.byteLength === buf.byteLength) buf.transfer(0);
}

/**
 * `req` with its body read (up to `max` bytes) for a reader that would otherwise buffer any size (the MCP SDK
 * reads the whole body); null when it is larger. Bodyless requests pass unchanged. Throws as readCapped does.
 */
export async function withCappedBody(req: Request, max: number): Promise<Request | null> {
  if (!req.body) return req;
  const body = await readCapped(req, max);
  if (!body) return null;
  return new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal });
}
