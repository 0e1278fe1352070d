/** A raw HTTP/1.x connection for tests: what came back, and whether and when the server closed it. */
import net from 'node:net';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  json: any;
}

export class Conn {
  private raw = Buffer.alloc(0);
  readonly sent = performance.now();
  answeredAt: number | null = null;
  closedAt: number | null = null;
  private readonly sock: net.Socket;
  private waiters: (() => void)[] = [];

  /** `from`: the loopback address the connection comes from (127.0.0.2 …: another client), else the system's choice. */
  constructor(port: number, bytes: string, from?: string) {
    this.sock = net.connect({ port, host: '127.0.0.1', ...(from ? { localAddress: from } : {}) }, () => this.sock.write(bytes));
    this.sock.on('data', (d: Buffer) => {
      this.raw = Buffer.concat([this.raw, d]);
      if (this.answeredAt === null && this.parse()) this.answeredAt = performance.now();
      this.wake();
    });
    this.sock.on('error', () => {});
    this.sock.on('close', () => {
      this.closedAt ??= performance.now();
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private async until(done: () => boolean, ms: number): Promise<boolean> {
    const end = performance.now() + ms;
    while (!done() && performance.now() < end) {
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return done();
  }

  /** The whole first answer (head and its Content-Length body), or null when none came within `ms`. */
  private parse(): Answer | null {
    const end = this.raw.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const lines = this.raw.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(':')).trim().toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
    const length = Number(headers['content-length'] ?? 0);
    if (this.raw.length - end - 4 < length) return null;
    const text = this.raw.subarray(end + 4, end + 4 + length).toString('utf8');
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1]), headers, json };
  }

  async answer(ms = 10_000): Promise<Answer | null> {
    await this.until(() => this.answeredAt !== null || this.closedAt !== null, ms);
    return this.parse();
  }

  /** ms from the answer to the server's close, or null when it was still open `ms` after the answer. */
  async closedAfterAnswer(ms = 9_000): Promise<number | null> {
    if (!(await this.until(() => this.answeredAt !== null || this.closedAt !== null, ms))) return null;
    const closed = await this.until(() => this.closedAt !== null, ms - (performance.now() - (this.answeredAt ?? performance.now())));
    return closed && this.answeredAt !== null ? Math.round(this.closedAt! - this.answeredAt) : null;
  }

  write(bytes: string): void {
    this.sock.write(bytes);
  }

  destroy(): void {
    this.sock.destroy();
  }
}
