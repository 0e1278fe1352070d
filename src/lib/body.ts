/** Raw request bodies, read once and capped (inbound hooks, the Flow lifecycle callback, API and MCP bodies). */
/**
 * Reads the raw body up to `max` bytes; null when it is larger: declared so by Content-Length (nothing is
 * read), or found so while reading a body sent without one.
 */
export async function readCapped(req: Request, max: number): Promise<Uint8Array | null> {
  const declared = req.headers.get('content-length');
  if (declared !== null && Number(declared) > max) return null;
  // Read whole when declared: touching req.body first would build a stream for nothing.
  if (declared !== null) {
    const buf = new Uint8Array(await req.arrayBuffer());
    return buf.byteLength > max ? null : buf;
  }
  if (!req.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
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
 * reads the whole body); null when it is larger. Bodyless requests pass unchanged.
 */
export async function withCappedBody(req: Request, max: number): Promise<Request | null> {
  if (!req.body) return req;
  const body = await readCapped(req, max);
  if (!body) return null;
  return new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal });
}
