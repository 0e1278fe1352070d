/** Raw request bodies, read once and capped (inbound hooks, the Flow lifecycle callback). */
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
