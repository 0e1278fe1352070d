/**
 * Each request's id (`req_…`), minted once where the request enters (serve) and read wherever it is needed (the
 * pipeline's audit rows and error envelopes, the MCP transport, the request's log line, its `X-Request-Id`
 * header) without passing it through every signature. A request nobody tagged (in-process calls, tests) gets
 * one on first ask.
 */
const ids = new WeakMap<Request, string>();

export function tagRequest(req: Request, id: string): void {
  ids.set(req, id);
}

export function requestIdOf(req: Request, mint: () => string): string {
  let id = ids.get(req);
  if (id === undefined) ids.set(req, (id = mint()));
  return id;
}
