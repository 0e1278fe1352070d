/**
 * One plain HTTP/1.1 exchange over its own TCP connection (`Bun.connect`), answering a `Response` as fetch would
 * for what the client asks: a whole answer, no redirects followed, no compression. Client commands use it for
 * `http://` base URLs without a proxy: the first `fetch` of a process starts Bun's HTTP client thread and its TLS
 * context, about 18 ms of a cold start on a 40 ms floor (measured with hyperfine on compiled programs). `https://`
 * and proxied URLs keep `fetch`.
 */
import type { Socket } from 'bun';

export interface Http1Init {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** What the client needs of fetch. */
export type ClientFetch = (url: string, init: Http1Init & { redirect?: 'manual' }) => Promise<Response>;

const PROXY_VARIABLES = ['http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY'];
/**
 * What fetch's Headers refuses in a value: a line break or NUL would end the header early (request smuggling); a
 * character past U+00FF is no byte.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the bytes a header value must not hold
const BAD_VALUE = /[\r\n\0]|[^\u0000-\u00ff]/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const CRLFCRLF = Buffer.from('\r\n\r\n');
const NO_BODY = new Set([204, 205, 304]);

/** fetch, or the plain exchange when `baseUrl` is `http://` and no proxy variable is set. */
export function fetchFor(baseUrl: string, env: Record<string, string | undefined> = process.env): ClientFetch {
  const plain = baseUrl.toLowerCase().startsWith('http://') && PROXY_VARIABLES.every((v) => !env[v]);
  return plain ? http1Fetch : fetch;
}

/** An error as fetch's would read to the client: a `code` naming the failure. */
function failure(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

export async function http1Fetch(url: string, init: Http1Init = {}): Promise<Response> {
  const u = new URL(url);
  if (u.protocol !== 'http:') throw new TypeError('http1Fetch speaks plain http only');
  const method = (init.method ?? 'GET').toUpperCase();
  if (!TOKEN.test(method)) throw new TypeError('Invalid method');
  const body = init.body === undefined ? null : Buffer.from(init.body, 'utf8');
  let head = `${method} ${u.pathname}${u.search} HTTP/1.1\r\nhost: ${u.host}\r\nconnection: close\r\n`;
  for (const [name, value] of Object.entries(init.headers ?? {})) {
    if (!TOKEN.test(name) || BAD_VALUE.test(value)) throw new TypeError(`Invalid header: ${name}`);
    const lower = name.toLowerCase();
    if (lower === 'host' || lower === 'connection' || lower === 'content-length') continue;
    head += `${name}: ${value}\r\n`;
  }
  if (body) head += `content-length: ${body.byteLength}\r\n`;
  const request = body ? Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]) : Buffer.from(`${head}\r\n`, 'latin1');
  const raw = await exchange(u.hostname.replace(/^\[(.*)\]$/, '$1'), Number(u.port || 80), request, init.signal);
  return parseResponse(raw);
}

/** Writes the request; resolves with the answer's bytes once it is whole (by its length or last chunk) or the server closes. */
function exchange(hostname: string, port: number, request: Buffer, signal?: AbortSignal): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    /** The answer's head once it has arrived whole; null: malformed, so only the close ends the exchange. */
    let head: Head | null | undefined;
    let settled = false;
    let socket: Socket | null = null;
    let pending = request;
    const settle = (err: unknown, value?: Buffer) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        socket?.terminate();
        reject(err);
      } else resolve(value!);
    };
    const onAbort = () => settle(signal!.reason ?? failure('AbortError', 'aborted'));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const flush = (s: Socket) => {
      const n = s.write(pending);
      pending = n > 0 ? pending.subarray(n) : pending;
    };
    Bun.connect({
      hostname,
      port,
      socket: {
        open(s) {
          socket = s;
          flush(s);
        },
        drain(s) {
          if (pending.byteLength) flush(s);
        },
        data(s, chunk) {
          chunks.push(Buffer.from(chunk));
          received += chunk.byteLength;
          // A server that keeps the connection open despite `connection: close` still ends the exchange once the
          // answer is whole by its head. The head is read once, from the first bytes that hold it.
          if (head === undefined) {
            try {
              head = readHead(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
            } catch {
              head = null; // parseResponse names the fault once the server closes (or the timeout ends it)
            }
          }
          if (!head) return;
          const { framing } = head;
          const whole =
            framing.kind === 'none'
              ? true
              : framing.kind === 'length'
                ? received >= head.bodyAt + framing.length
                : // A chunked answer is whole at its last chunk, which ends the bytes with an empty line.
                  framing.kind === 'chunked' && endsWithEmptyLine(chunks) && chunkedComplete(Buffer.concat(chunks).subarray(head.bodyAt));
          if (whole) {
            settle(null, Buffer.concat(chunks));
            s.end();
          }
        },
        close(_s, err) {
          settle(err, Buffer.concat(chunks));
        },
        error(_s, err) {
          settle(err);
        },
        connectError(_s, err) {
          settle(err);
        },
      },
    }).catch((err: unknown) => settle(err));
  });
}

/** An answer's head: status, headers, where its body starts and how its end is known. */
interface Head {
  code: number;
  statusText: string;
  headers: Headers;
  bodyAt: number;
  /** `length`: Content-Length bytes; `chunked`: at the last chunk; `close`: when the server closes; `none`: no body. */
  framing: { kind: 'length'; length: number } | { kind: 'chunked' } | { kind: 'close' } | { kind: 'none' };
}

/**
 * The final head in `raw` (interim 1xx heads skipped), or undefined while it is incomplete. A malformed head fails
 * as a broken protocol.
 */
function readHead(raw: Buffer): Head | undefined {
  let at = 0;
  for (;;) {
    const end = raw.indexOf(CRLFCRLF, at);
    if (end < 0) return undefined;
    const lines = raw.subarray(at, end).toString('latin1').split('\r\n');
    const status = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0] ?? '');
    if (!status) throw failure('EPROTO', 'The answer is not HTTP/1.1.');
    const code = Number(status[1]);
    at = end + 4;
    // An interim answer (100 Continue, 103 Early Hints) precedes the real one.
    if (code >= 100 && code < 200) continue;
    const headers = new Headers();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw failure('EPROTO', 'A header line of the answer is malformed.');
      headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    return { code, statusText: status[2] ?? '', headers, bodyAt: at, framing: framingOf(code, headers) };
  }
}

function framingOf(code: number, headers: Headers): Head['framing'] {
  if (NO_BODY.has(code)) return { kind: 'none' };
  if (/\bchunked\b/i.test(headers.get('transfer-encoding') ?? '')) return { kind: 'chunked' };
  const declared = headers.get('content-length');
  if (declared === null) return { kind: 'close' };
  const length = Number(declared);
  if (!Number.isSafeInteger(length) || length < 0) throw failure('EPROTO', 'The answer has an invalid Content-Length.');
  return { kind: 'length', length };
}

/** Whether the bytes so far end with CRLF CRLF (the last chunk, or trailers, ends so). */
function endsWithEmptyLine(chunks: Buffer[]): boolean {
  const tail = Buffer.concat(chunks.slice(-2)).subarray(-4);
  return tail.equals(CRLFCRLF);
}

/** Whether a chunked body has arrived up to its last chunk. */
function chunkedComplete(body: Buffer): boolean {
  try {
    dechunk(body);
    return true;
  } catch {
    return false;
  }
}

/** The answer as a Response; a cut or malformed answer fails as a broken connection or protocol. */
function parseResponse(raw: Buffer): Response {
  const head = readHead(raw);
  if (!head) throw failure('ECONNRESET', 'The connection closed before a complete answer.');
  const rest = raw.subarray(head.bodyAt);
  const { framing } = head;
  let body: Buffer | null;
  if (framing.kind === 'none') body = null;
  else if (framing.kind === 'chunked') body = dechunk(rest);
  else if (framing.kind === 'close') body = rest;
  else {
    if (rest.byteLength < framing.length) throw failure('ECONNRESET', 'The connection closed before the whole answer arrived.');
    body = rest.subarray(0, framing.length);
  }
  return new Response(body, { status: head.code, statusText: head.statusText, headers: head.headers });
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at, 'latin1');
    if (eol < 0) throw failure('ECONNRESET', 'The connection closed inside a chunked answer.');
    const size = Number.parseInt(data.subarray(at, eol).toString('latin1').split(';')[0]!.trim(), 16);
    if (!Number.isSafeInteger(size) || size < 0) throw failure('EPROTO', 'A chunk size of the answer is malformed.');
    if (size === 0) return Buffer.concat(parts);
    const start = eol + 2;
    if (data.byteLength < start + size + 2) throw failure('ECONNRESET', 'The connection closed inside a chunked answer.');
    parts.push(data.subarray(start, start + size));
    at = start + size + 2;
  }
}
