/** One compiled hookrelay under test: a fresh data dir, its admin CLI, a `serve` child to kill and restart, its database read-only. */
import { Database } from 'bun:sqlite';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { freePort } from '../bench/_lib.ts';

/** The variable the Shopify destination reads its Admin token from (the NAME is stored, never the value). */
export const ADMIN_TOKEN_ENV = 'HOOKRELAY_TORTURE_ADMIN_TOKEN';

export const log = (m: string) => process.stderr.write(`[torture] ${m}\n`);

/** Every box with a server that may be running, so a watchdog or Ctrl-C can stop them all. */
const live = new Set<Box>();

/** SIGKILLs every server the suite started (the watchdog's and SIGINT's way out). */
export function killAllServers(): void {
  for (const box of live) box.proc?.kill('SIGKILL');
}

/** The environment of every child: ours minus any HOOKRELAY_* setting that would point it elsewhere. */
function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HOOKRELAY_')) env[k] = v;
  return { ...env, NO_COLOR: '1', [ADMIN_TOKEN_ENV]: 'shpat_torture_token', ...extra };
}

export interface BoxOptions {
  bin: string;
  /** Folder name prefix under the system temp dir. */
  name: string;
  /** Extra environment for `serve` (e.g. HOOKRELAY_SHOPIFY_ADMIN_URL). */
  env?: Record<string, string>;
}

/** Figures of the database files and the two tables a flood could fill. */
export interface DbFigures {
  bytes: number;
  auditRows: number;
  authFailureRows: number;
}

export class Box {
  readonly dir: string;
  readonly dataDir: string;
  readonly logPath: string;
  port = 0;
  base = '';
  proc: Subprocess | null = null;
  /** How many times `serve` was started. */
  starts = 0;
  private logWrites: string[] = [];

  constructor(private readonly o: BoxOptions) {
    this.dir = mkdtempSync(join(tmpdir(), `hookrelay-torture-${o.name}-`));
    this.dataDir = join(this.dir, 'data');
    this.logPath = join(this.dir, 'serve.log');
  }

  /** Runs an admin command on the data dir; returns its one JSON document (throws on a non-zero exit). */
  cli(args: string[]): any {
    const r = Bun.spawnSync([this.o.bin, ...args, '--data-dir', this.dataDir], { cwd: this.dir, env: childEnv({}), stdout: 'pipe', stderr: 'pipe' });
    if (r.exitCode !== 0) throw new Error(`hookrelay ${args[0]} exited ${r.exitCode}: ${r.stderr.toString().slice(0, 400)}`);
    return JSON.parse(r.stdout.toString());
  }

  /** A store on the scale plan (rate limits, not plan meters, are what the suite runs into). */
  initStore(shop: string, extra: string[] = []): { storeId: string } {
    return this.cli(['init', '--shop', shop, '--plan', 'scale', ...extra]).store;
  }

  issueGrant(shop: string, tier = 'admin_assistant'): string {
    return this.cli(['grant', 'issue', '--shop', shop, '--tier', tier, '--ttl', '2h', '--label', 'torture']).token;
  }

  /** Starts `serve` (same port on every restart) and waits until /status answers. */
  async start(): Promise<void> {
    if (!this.port) {
      this.port = await freePort();
      this.base = `http://127.0.0.1:${this.port}`;
    }
    // Each start appends to one log; Bun.file sinks truncate, so each run writes its own file, joined on read.
    const path = `${this.logPath}.${this.starts}`;
    this.logWrites.push(path);
    this.proc = Bun.spawn([this.o.bin, 'serve', '--port', String(this.port), '--data-dir', this.dataDir], {
      cwd: this.dir,
      env: childEnv(this.o.env ?? {}),
      stdin: 'ignore',
      stdout: 'ignore',
      stderr: Bun.file(path),
    });
    this.starts++;
    live.add(this);
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
        throw new Error(`serve exited (${this.proc.exitCode ?? this.proc.signalCode}) before it was ready: ${this.serverLog().slice(-400)}`);
      }
      if (await this.statusOk(500)) return;
      await Bun.sleep(50);
    }
    throw new Error('serve did not answer /status within 20 s');
  }

  /** Whether the server process is still running. */
  alive(): boolean {
    return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  async statusOk(timeoutMs = 2_000): Promise<boolean> {
    try {
      const res = await fetch(`${this.base}/status`, { signal: AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      return res.status === 200;
    } catch {
      return false;
    }
  }

  /** SIGKILL now; resolves once the process is gone. */
  async kill9(): Promise<void> {
    if (!this.proc) return;
    this.proc.kill('SIGKILL');
    await this.proc.exited;
  }

  /** SIGTERM; SIGKILL after `graceMs`. Returns the exit code, or null when it had to be killed. */
  async term(graceMs = 15_000): Promise<number | null> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return proc?.exitCode ?? null;
    proc.kill('SIGTERM');
    let forced = false;
    const t = setTimeout(() => {
      forced = true;
      proc.kill('SIGKILL');
    }, graceMs);
    const code = await proc.exited;
    clearTimeout(t);
    return forced ? null : code;
  }

  /** Everything every `serve` of this box wrote on stderr. */
  serverLog(): string {
    return this.logWrites
      .map((p) => {
        try {
          return readFileSync(p, 'utf8');
        } catch {
          return '';
        }
      })
      .join('');
  }

  /** Opens the database read-only (safe next to a running server: WAL readers never block the writer). */
  db<T>(fn: (db: Database) => T): T {
    const db = new Database(join(this.dataDir, 'hookrelay.db'), { readonly: true });
    try {
      return fn(db);
    } finally {
      db.close();
    }
  }

  dbFigures(): DbFigures {
    const size = (p: string) => {
      try {
        return statSync(join(this.dataDir, p)).size;
      } catch {
        return 0;
      }
    };
    const count = (table: string) => this.db((d) => d.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${table}`).get()!.n);
    return { bytes: size('hookrelay.db') + size('hookrelay.db-wal'), auditRows: count('audit_log'), authFailureRows: count('auth_failures') };
  }

  /** Stops the server (if running) and removes the folder unless `keep`. */
  async dispose(keep: boolean): Promise<void> {
    if (this.alive()) await this.term(10_000);
    live.delete(this);
    if (keep) log(`kept ${this.dir} (data/, serve.log.N)`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}

/** GET/POST with a bearer token, answering status and parsed JSON (null when the body is not JSON). */
export async function call(base: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON: the caller decides */
  }
  return { status: res.status, json };
}
