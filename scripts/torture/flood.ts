/**
 * Part 3, auth flood: bad bearer tokens on the API and badly signed events on /hooks; how many were limited
 * (429), and how much the database grew (file bytes, audit_log and auth_failures rows, read read-only).
 */
import { api, sign } from '../bench/_lib.ts';
import { Box, type DbFigures } from './_box.ts';
import type { Rand } from './_rand.ts';

export interface FloodOptions {
  bin: string;
  rand: Rand;
  /** Requests of each kind. */
  requests: number;
  concurrency: number;
  keep: boolean;
}

export interface FloodSide {
  sent: number;
  statuses: Record<string, number>;
  rateLimited: number;
  /** 429s without an integer Retry-After >= 1. */
  retryAfterMissing: number;
}

export interface FloodFigures {
  badTokens: FloodSide;
  badSignatures: FloodSide;
  before: DbFigures;
  after: DbFigures;
  /** 5xx answers during the flood. */
  serverErrors: number;
  /** Status of a valid grant's call, and of a correctly signed event, right after the flood. */
  goodGrantAfter: number;
  goodHookAfter: number;
}

const SHOP = 'flood.myshopify.com';
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

async function flood(n: number, concurrency: number, request: (i: number) => Promise<Response>): Promise<FloodSide> {
  const side: FloodSide = { sent: 0, statuses: {}, rateLimited: 0, retryAfterMissing: 0 };
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      side.sent++;
      try {
        const res = await request(i);
        await res.arrayBuffer();
        side.statuses[res.status] = (side.statuses[res.status] ?? 0) + 1;
        if (res.status === 429) {
          side.rateLimited++;
          if (!(Number(res.headers.get('retry-after')) >= 1)) side.retryAfterMissing++;
        }
      } catch {
        side.statuses.network = (side.statuses.network ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return side;
}

export async function floodPart(o: FloodOptions): Promise<FloodFigures> {
  const box = new Box({ bin: o.bin, name: 'flood' });
  try {
    box.initStore(SHOP);
    const token = box.issueGrant(SHOP);
    await box.start();
    const created = await api(box.base, token, 'POST', '/agent/v1/endpoints', { triggerVariant: 'generic', name: 'torture flood' });
    const hookUrl = `${box.base}/hooks/${created.data.endpoint.id}`;
    await Bun.sleep(300);
    const before = box.dbFigures();

    // Distinct tokens and signatures, as an attacker guessing would send; the suite's seed makes them repeatable.
    const tokens = Array.from({ length: o.requests }, () => `hrg_${o.rand.chars(50, BASE62)}`);
    const badTokens = await flood(o.requests, o.concurrency, (i) =>
      fetch(`${box.base}/agent/v1/setup-state`, { headers: { authorization: `Bearer ${tokens[i]}` } }),
    );
    const body = JSON.stringify({ event_type: 'torture.flood', order: { id: 1 } });
    const sigs = Array.from({ length: o.requests }, () => o.rand.chars(64, '0123456789abcdef'));
    const badSignatures = await flood(o.requests, o.concurrency, (i) =>
      fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hookrelay-signature': sigs[i]! }, body }),
    );

    const goodGrantAfter = (await fetch(`${box.base}/agent/v1/grant`, { headers: { authorization: `Bearer ${token}` } })).status;
    const good = JSON.stringify({ event_type: 'torture.flood', external_event_id: 'after-flood', order: { id: 2 } });
    const goodHookAfter = (
      await fetch(hookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-hookrelay-signature': sign(created.data.secret, good) },
        body: good,
      })
    ).status;
    await Bun.sleep(500); // the group commit's last batch
    const after = box.dbFigures();
    const fivexx = (s: FloodSide) =>
      Object.entries(s.statuses)
        .filter(([k]) => /^5\d\d$/.test(k))
        .reduce((t, [, v]) => t + v, 0);
    return { badTokens, badSignatures, before, after, serverErrors: fivexx(badTokens) + fivexx(badSignatures), goodGrantAfter, goodHookAfter };
  } finally {
    await box.dispose(o.keep);
  }
}
