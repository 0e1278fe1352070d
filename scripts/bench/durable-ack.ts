/**
 * The durable-ack limit: the least a server must do to acknowledge a signed event durably on this machine, as a
 * reference measured beside hookrelay's ingest. One process (the orchestrator pins it to core 0); prints one JSON
 * line when ready ({ url, secret }), serves until SIGTERM, then prints `{ answered, commits }` (202s sent, commits
 * that held rows).
 *
 * What it does per event, and nothing more: Bun.serve reads the raw body, checks Content-Type, verifies the
 * lowercase hex HMAC-SHA256 in `X-Hookrelay-Signature` in constant time, and inserts one row (id, received_at,
 * body) into one table with no index beyond its integer primary key. Rows of requests that arrive while a commit
 * runs wait for the next commit (group commit, one transaction per batch); bun:sqlite with journal_mode=WAL and
 * synchronous=FULL, so each commit returns only after its WAL fsync. A request gets its 202 only after the commit
 * that holds its row.
 *
 *   bun scripts/bench/durable-ack.ts --data-dir DIR [--port N]
 */
import { Database } from 'bun:sqlite';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({ options: { port: { type: 'string', default: '0' }, 'data-dir': { type: 'string' } } });
if (!a['data-dir']) throw new Error('durable-ack needs --data-dir');
mkdirSync(a['data-dir'], { recursive: true });

const HEADER = 'x-hookrelay-signature';
const HEX64 = /^[0-9a-f]{64}$/;
const JSON_TYPE = /^application\/json\s*(;|$)/i;
const MAX_BODY = 1024 * 1024;
const secret = `whsec_${randomBytes(32).toString('hex')}`;

const db = new Database(join(a['data-dir'], 'limit.db'), { create: true, strict: true });
db.exec('PRAGMA journal_mode = WAL');
db.exec('PRAGMA synchronous = FULL');
db.exec('CREATE TABLE events (id INTEGER PRIMARY KEY, received_at INTEGER NOT NULL, body BLOB NOT NULL)');
const insert = db.prepare<unknown, [number, number, Uint8Array]>('INSERT INTO events (id, received_at, body) VALUES (?, ?, ?)');

interface Waiter {
  id: number;
  at: number;
  body: Uint8Array;
  resolve: () => void;
  reject: (err: unknown) => void;
}

let nextId = 1;
let pending: Waiter[] = [];
let scheduled = false;
let answered = 0;
let commits = 0;

/**
 * Commits everything pending in one transaction. It runs synchronously on the only thread, so requests read
 * while it runs (the fsync included) queue up for the next commit.
 */
function commit(): void {
  scheduled = false;
  if (!pending.length) return;
  const batch = pending;
  pending = [];
  try {
    db.exec('BEGIN');
    for (const w of batch) insert.run(w.id, w.at, w.body);
    db.exec('COMMIT');
    commits++;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    for (const w of batch) w.reject(err);
    return;
  }
  for (const w of batch) w.resolve();
}

/** Resolves once the row is durably committed; the commit runs at the next turn of the event loop. */
function store(body: Uint8Array): Promise<number> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.push({ id, at: Date.now(), body, resolve: () => resolve(id), reject });
    if (!scheduled) {
      scheduled = true;
      setImmediate(commit);
    }
  });
}

function verify(body: Uint8Array, given: string | null): boolean {
  if (!given || !HEX64.test(given)) return false;
  const expected = new Bun.CryptoHasher('sha256', secret).update(body).digest() as Buffer;
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}

const json = (status: number, body: Record<string, unknown>) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
const pad = (id: number) => String(id).padStart(26, '0');

const server = Bun.serve({
  port: Number(a.port),
  hostname: '127.0.0.1',
  development: false, // as serve runs
  async fetch(req) {
    if (req.method !== 'POST' || !req.url.includes('/hooks/')) return json(404, { code: 'not_found', message: 'No such endpoint.' });
    if (!JSON_TYPE.test(req.headers.get('content-type') ?? ''))
      return json(415, { code: 'unsupported_media_type', message: 'Send Content-Type: application/json.' });
    const body = new Uint8Array(await req.arrayBuffer());
    if (body.byteLength > MAX_BODY) return json(413, { code: 'SVC_PAYLOAD_TOO_LARGE', message: 'Body too large.' });
    if (!verify(body, req.headers.get(HEADER))) return json(401, { code: 'SVC_AUTH_FAILED', message: 'Authentication failed.' });
    let id: number;
    try {
      id = await store(body);
    } catch {
      return json(503, { code: 'storage_unavailable', message: 'The receipt could not be recorded. Retry later.' });
    }
    answered++;
    return json(202, { receiptId: `rcpt_${pad(id)}`, eventId: `evt_${pad(id)}`, status: 'accepted' });
  },
});

process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid, url: `http://127.0.0.1:${server.port}`, secret })}\n`);
await new Promise<void>((r) => process.once('SIGTERM', () => r()).once('SIGINT', () => r()));
await server.stop(true);
if (pending.length) commit();
await Bun.sleep(0); // the last batch's handlers count their 202s
db.close();
process.stdout.write(`${JSON.stringify({ answered, commits })}\n`);
process.exit(0);
