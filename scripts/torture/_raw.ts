/** Raw HTTP/1.1 over a loopback socket, for what fetch will not send: duplicate headers, 64 KB headers, a client that hangs up mid-body. */
import type { Answer } from './_shape.ts';

/** Decodes a chunked body; the bytes as they are when the framing is broken. */
function unchunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let i = 0;
  while (i < body.length) {
    const nl = body.indexOf('\r\n', i);
    if (nl < 0) return body;
    const size = parseInt(body.subarray(i, nl).toString(), 16);
    if (!Number.isFinite(size)) return body;
    if (size === 0) break;
    parts.push(body.subarray(nl + 2, nl + 2 + size));
    i = nl + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Whether `raw` holds a whole response: the head, and the body its Content-Length or chunked framing announces. */
function complete(raw: Buffer): boolean {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = raw.subarray(0, end).toString('latin1');
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) return raw.length - end - 4 >= Number(length[1]);
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) return raw.subarray(end + 4).includes('0\r\n\r\n');
  return false;
}

/** Parses what the server sent back; null when it closed without a status line. */
export function parseResponse(raw: Buffer): Answer | null {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = raw.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '');
  if (!m) return null;
  const headers = new Map(head.slice(1).map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  let body = raw.subarray(end + 4);
  if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) body = unchunk(body);
  else if (headers.has('content-length')) body = body.subarray(0, Number(headers.get('content-length')));
  return { status: Number(m[1]), contentType: headers.get('content-type') ?? '', text: body.toString('utf8') };
}

/**
 * Sends `head` (request line and headers, without the blank line) and `body` to 127.0.0.1:port, then reads
 * until the server closes or `timeoutMs`. With `hangUpAfter`, only that many body bytes are sent before the
 * socket is closed, and no answer is awaited.
 */
export async function rawRequest(
  port: number,
  head: string,
  body: Uint8Array | string = '',
  opts: { hangUpAfter?: number; timeoutMs?: number } = {},
): Promise<Answer | null> {
  const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
  const chunks: Buffer[] = [];
  let closed = false;
  let done!: () => void;
  const ended = new Promise<void>((r) => (done = r));
  const finish = () => {
    closed = true;
    done();
  };
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      // A whole answer ends the wait: a server may keep the connection open despite `Connection: close`.
      data: (_s, d) => {
        chunks.push(Buffer.from(d));
        if (complete(Buffer.concat(chunks))) finish();
      },
      close: finish,
      error: finish,
      end: finish,
    },
  });
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  const payload = Buffer.concat([Buffer.from(`${head}\r\n\r\n`, 'latin1'), opts.hangUpAfter === undefined ? bytes : bytes.subarray(0, opts.hangUpAfter)]);
  // write() may take only part of a large payload; keep going until all of it is queued, the server closes
  // (it may answer 413 and stop reading) or the deadline passes.
  let off = 0;
  while (off < payload.length && !closed && Date.now() < deadline) {
    const n = socket.write(payload.subarray(off));
    off += Math.max(0, n);
    if (n <= 0) await Bun.sleep(1);
  }
  socket.flush();
  if (opts.hangUpAfter !== undefined) {
    await Bun.sleep(20);
    socket.end();
    return null;
  }
  const t = setTimeout(
    () => {
      socket.end();
      finish();
    },
    Math.max(1, deadline - Date.now()),
  );
  await ended;
  clearTimeout(t);
  return parseResponse(Buffer.concat(chunks));
}
