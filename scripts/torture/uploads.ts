/**
 * Part 5, stalled uploads: POST /hooks bodies sent chunked that never finish, many at once, against the binary.
 * serve's RSS before, at the peak and after the server has closed them, held to stated bounds; every one must be
 * answered (503 past the bound on streamed bodies, 408 at the body deadline) and its connection closed by the
 * server, while a signed event still gets its 202, sent with a Content-Length and sent chunked from another address
 * (the stalled uploads hold only their address's share of the bound on streamed bodies). Then `Connection: close` and HTTP/1.0 on /hooks, the API and
 * /status: answered, and the connection closed.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { api, sign } from '../bench/_lib.ts';
import { Box, log } from './_box.ts';
import { parseResponse } from './_raw.ts';
import { contractOf, judge, type Contract } from './_shape.ts';

export interface UploadsOptions {
  bin: string;
  /** Stalled uploads opened at once in each round. */
  uploads: number;
  rounds: number;
  keep: boolean;
}

/** What a run may add to serve's RSS (MiB above it before the first round): at the peak, and once all are closed. */
export const RSS_BOUNDS_MIB = { peak: 64, after: 32 };
/** How long after its answer the server may leave a connection open: Bun's timer tick is about 4 s. */
const CLOSE_WITHIN_MS = 10_000;
/** How long a round waits for every upload to be answered and closed: the 15 s body deadline, the close, a margin. */
const ROUND_WAIT_MS = 45_000;

export interface RoundFigures {
  opened: number;
  /** Answers by status (`none`: closed without one, `open`: neither answered nor closed by the end). */
  answers: Record<string, number>;
  /** Uploads answered anything but 408 `request_timeout` or 503 `server_busy` (or not at all). */
  unexpected: number;
  /** 503s without an integer Retry-After >= 1. */
  retryAfterMissing: number;
  /** Answers that are not a documented shape (the inbound `{code, message}` with a code of the error table). */
  undocumented: number;
  /** Uploads the server did not close within CLOSE_WITHIN_MS of its answer (or never answered). */
  leftOpen: number;
  /** Latest answer, ms after the round's last upload was sent (the 408s come at the body deadline). */
  lastAnswerMs: number;
  rssBeforeMiB: number;
  rssPeakMiB: number;
  rssAfterMiB: number;
  /** A signed event sent while the uploads stalled: its status and time. */
  goodReceipt: { status: number; ms: number };
  /**
   * A signed event sent chunked (no Content-Length) from another address (127.0.0.2) while the uploads stalled: the
   * stalled ones hold at most their address's share of the bound on bodies read as streams (null: no answer).
   */
  chunkedReceipt: { status: number | null; ms: number };
}

export interface ConnectionCheck {
  route: string;
  ask: string;
  status: number | null;
  /** ms from the answer to the server's close; null when it was still open CLOSE_WITHIN_MS after. */
  closedAfterMs: number | null;
}

export interface UploadsFigures {
  rounds: RoundFigures[];
  /** Peak and after, MiB above serve's RSS before the first round. */
  peakGrowthMiB: number;
  afterGrowthMiB: number;
  bounds: typeof RSS_BOUNDS_MIB;
  /** `Connection: close` and HTTP/1.0 without a Host header: must be answered (below 500) and closed. */
  closes: ConnectionCheck[];
  closesFailed: number;
  /** HTTP/1.0 with a Host header: Bun 1.3.14 does not tell a handler the version (information). */
  http10WithHost: ConnectionCheck[];
  serverErrorLines: number;
  survived: boolean;
  offenders: string[];
}

const SHOP = 'uploads.myshopify.com';

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

interface Conn {
  raw: Buffer[];
  answeredAt: number | null;
  closedAt: number | null;
  socket: net.Socket;
}

/**
 * Opens a connection (from the loopback address `from`, else the system's choice), sends `bytes`, and records when
 * an answer's head arrives and when the server closes.
 */
function open(port: number, bytes: string, from?: string): Conn {
  const socket = net.connect({ port, host: '127.0.0.1', ...(from ? { localAddress: from } : {}) });
  const c: Conn = { raw: [], answeredAt: null, closedAt: null, socket };
  c.socket.on('data', (d: Buffer) => {
    c.raw.push(d);
    if (c.answeredAt === null && Buffer.concat(c.raw).includes('\r\n\r\n')) c.answeredAt = performance.now();
  });
  c.socket.on('error', () => {});
  c.socket.on('close', () => (c.closedAt ??= performance.now()));
  c.socket.write(bytes);
  return c;
}

const head = (c: Conn) => Buffer.concat(c.raw).toString('latin1').split('\r\n\r\n')[0] ?? '';

async function stalledRound(box: Box, contract: Contract, hookPath: string, secret: string, n: number, baseline: number): Promise<RoundFigures> {
  const pid = box.proc!.pid;
  const rssBeforeMiB = rssMiB(pid);
  let rssPeakMiB = rssBeforeMiB;
  const sampler = setInterval(() => (rssPeakMiB = Math.max(rssPeakMiB, rssMiB(pid))), 100);
  const request = `POST ${hookPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Hookrelay-Signature: ${'0'.repeat(64)}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n`;
  const conns: Conn[] = [];
  for (let i = 0; i < n; i++) {
    conns.push(open(box.port, request));
    if (i % 50 === 49) await Bun.sleep(20); // under the listen backlog
  }
  const sent = performance.now();
  await Bun.sleep(1_000);
  const body = JSON.stringify({ event_type: 'torture.uploads', external_event_id: `uploads-${baseline}-${Date.now()}`, order: { id: 1 } });
  const t0 = performance.now();
  const good = await fetch(`${box.base}${hookPath}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hookrelay-signature': sign(secret, body) },
    body,
  }).then(
    async (r) => {
      await r.arrayBuffer();
      return r.status;
    },
    () => 0,
  );
  const goodReceipt = { status: good, ms: Math.round(performance.now() - t0) };
  const chunkedBody = body.replace('"uploads-', '"uploads-chunked-');
  const t1 = performance.now();
  const chunked = open(
    box.port,
    `POST ${hookPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Hookrelay-Signature: ${sign(secret, chunkedBody)}\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(chunkedBody).toString(16)}\r\n${chunkedBody}\r\n0\r\n\r\n`,
    '127.0.0.2',
  );
  const chunkedBy = performance.now() + 10_000;
  while (performance.now() < chunkedBy && chunked.answeredAt === null && chunked.closedAt === null) await Bun.sleep(20);
  const chunkedReceipt = { status: parseResponse(Buffer.concat(chunked.raw))?.status ?? null, ms: Math.round(performance.now() - t1) };
  chunked.socket.destroy();
  const deadline = sent + ROUND_WAIT_MS;
  while (performance.now() < deadline && conns.some((c) => c.closedAt === null)) await Bun.sleep(200);
  clearInterval(sampler);

  const answers: Record<string, number> = {};
  let retryAfterMissing = 0;
  let undocumented = 0;
  let leftOpen = 0;
  let lastAnswerMs = 0;
  for (const c of conns) {
    const a = parseResponse(Buffer.concat(c.raw));
    const key = a ? String(a.status) : c.closedAt === null ? 'open' : 'none';
    answers[key] = (answers[key] ?? 0) + 1;
    if (c.answeredAt !== null) lastAnswerMs = Math.max(lastAnswerMs, Math.round(c.answeredAt - sent));
    if (a) {
      const problem = judge(contract, { kind: 'hooks' }, a);
      if (problem) undocumented++;
      if (a.status === 503 && !(Number(/\r\nretry-after:\s*(\d+)/i.exec(head(c))?.[1]) >= 1)) retryAfterMissing++;
    }
    if (c.answeredAt === null || c.closedAt === null || c.closedAt - c.answeredAt > CLOSE_WITHIN_MS) leftOpen++;
    c.socket.destroy();
  }
  await Bun.sleep(2_000);
  const rssAfterMiB = rssMiB(pid);
  const unexpected = n - (answers['408'] ?? 0) - (answers['503'] ?? 0);
  return {
    opened: n,
    answers,
    unexpected,
    retryAfterMissing,
    undocumented,
    leftOpen,
    lastAnswerMs,
    rssBeforeMiB,
    rssPeakMiB,
    rssAfterMiB,
    goodReceipt,
    chunkedReceipt,
  };
}

/** One request that asks for the connection to be closed; how it was answered and how soon the server closed. */
async function closeCheck(port: number, route: string, ask: string, request: string): Promise<ConnectionCheck> {
  const c = open(port, request);
  const until = performance.now() + 15_000;
  while (performance.now() < until && c.closedAt === null && (c.answeredAt === null || performance.now() - c.answeredAt < CLOSE_WITHIN_MS)) await Bun.sleep(50);
  c.socket.destroy();
  const a = parseResponse(Buffer.concat(c.raw));
  const closedAfterMs =
    c.answeredAt !== null && c.closedAt !== null && c.closedAt - c.answeredAt <= CLOSE_WITHIN_MS ? Math.round(c.closedAt - c.answeredAt) : null;
  return { route, ask, status: a?.status ?? null, closedAfterMs };
}

export async function uploadsPart(o: UploadsOptions): Promise<UploadsFigures> {
  const box = new Box({ bin: o.bin, name: 'uploads' });
  try {
    box.initStore(SHOP);
    const token = box.issueGrant(SHOP);
    await box.start();
    const created = await api(box.base, token, 'POST', '/agent/v1/endpoints', { triggerVariant: 'generic', name: 'torture uploads' });
    const hookPath = `/hooks/${created.data.endpoint.id}`;
    const secret: string = created.data.secret;
    const contract = contractOf(await (await fetch(`${box.base}/agent/v1/openapi.json`)).json());
    await Bun.sleep(1_000); // the lazily loaded API settles before the baseline
    const baseline = rssMiB(box.proc!.pid);

    const rounds: RoundFigures[] = [];
    for (let r = 0; r < o.rounds; r++) {
      log(`uploads: round ${r + 1}/${o.rounds}, ${o.uploads} stalled chunked uploads`);
      rounds.push(await stalledRound(box, contract, hookPath, secret, o.uploads, baseline));
    }

    const event = JSON.stringify({ event_type: 'torture.uploads', external_event_id: 'close-check', order: { id: 2 } });
    const hook = (version: string, extra: string) =>
      `POST ${hookPath} HTTP/${version}\r\n${extra}Content-Type: application/json\r\nX-Hookrelay-Signature: ${sign(secret, event)}\r\nContent-Length: ${event.length}\r\n\r\n${event}`;
    const routes: [string, (version: string, extra: string) => string][] = [
      ['/hooks', hook],
      ['/agent/v1/grant', (v, extra) => `GET /agent/v1/grant HTTP/${v}\r\n${extra}Authorization: Bearer ${token}\r\n\r\n`],
      ['/status', (v, extra) => `GET /status HTTP/${v}\r\n${extra}\r\n`],
    ];
    const checks = await Promise.all(
      routes.flatMap(([route, req]) => [
        closeCheck(box.port, route, 'Connection: close', req('1.1', 'Host: 127.0.0.1\r\nConnection: close\r\n')),
        closeCheck(box.port, route, 'HTTP/1.0 without Host', req('1.0', '')),
        closeCheck(box.port, route, 'HTTP/1.0 with Host', req('1.0', 'Host: 127.0.0.1\r\n')),
      ]),
    );
    const closes = checks.filter((c) => c.ask !== 'HTTP/1.0 with Host');
    const failed = closes.filter((c) => c.closedAfterMs === null || c.status === null || c.status >= 500);
    const survived = box.alive() && (await box.statusOk());
    const offenders = [
      ...rounds.flatMap((r, i) => (r.leftOpen ? [`round ${i + 1}: ${r.leftOpen} uploads not closed by the server`] : [])),
      ...failed.map(
        (c) =>
          `${c.ask} on ${c.route}: answered ${c.status ?? 'nothing'}, ${c.closedAfterMs === null ? `not closed within ${CLOSE_WITHIN_MS / 1000} s` : 'closed'}`,
      ),
    ];
    return {
      rounds,
      peakGrowthMiB: Math.max(...rounds.map((r) => r.rssPeakMiB)) - baseline,
      afterGrowthMiB: rounds.at(-1)!.rssAfterMiB - baseline,
      bounds: RSS_BOUNDS_MIB,
      closes,
      closesFailed: failed.length,
      http10WithHost: checks.filter((c) => c.ask === 'HTTP/1.0 with Host'),
      serverErrorLines: box
        .serverLog()
        .split('\n')
        .filter((l) => /\bERROR\b/.test(l)).length,
      survived,
      offenders,
    };
  } finally {
    await box.dispose(o.keep);
  }
}
