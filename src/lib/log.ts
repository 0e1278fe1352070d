/** Logging to stderr only (stdout carries data). Callers pass facts, never headers, bodies or secrets. */
import type { ConsolaInstance } from 'consola';
import { iso } from './clock.ts';
import { flushOnExit } from './drain.ts';

export interface Log {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLog: Log = { info() {}, warn() {}, error() {} };

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
/** The same class without the global flag (no lastIndex to reset): most lines hold nothing to escape. */
const HAS_CONTROL = new RegExp(CONTROL.source);
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\x1b' };

/**
 * One event, one line, nothing a terminal interprets: control characters (newline, ESC, C1, Unicode line
 * separators) become visible escapes. Every sink applies it, so a caller's field (an error code thrown in code
 * mode, a header name) can neither forge a second line nor colour the terminal.
 */
export function escapeLogLine(message: string): string {
  if (!HAS_CONTROL.test(message)) return message;
  return message.replace(CONTROL, (c) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}


/**
 * Info lines (one per request on the hot path) go through a buffered stderr sink flushed once per event-loop
 * turn; consola formats per line and would cost a third of ingest throughput. Warnings and errors use consola,
 * loaded with the first of them (synchronously, so the line is written before an exit): a serve that warns of
 * nothing never holds it (3 MiB of its resident memory).
 */
export function stderrLog(level: 'info' | 'warn' | 'silent' = 'info'): Log {
  let consola: ConsolaInstance | undefined;
  const c = () =>
    (consola ??= (require('consola') as typeof import('consola')).createConsola({
      stdout: process.stderr,
      stderr: process.stderr,
      level: level === 'warn' ? 1 : 3,
    }));
  // Each line goes straight into the sink's native buffer; the sink is flushed once per event-loop turn. Gathering
  // the turn's lines in an array and joining them cost 6% more CPU per receipt (bench:pair 0.919-0.949): the array
  // and the joined string were garbage, and the string large enough that the collector ran inside join() (18% of
  // serve's samples under ingest).
  const sink = Bun.stderr.writer({ highWaterMark: 1 << 16 });
  let unflushed = false;
  const flush = () => {
    if (!unflushed) return;
    unflushed = false;
    void sink.flush();
  };
  // The CLI's entry awaits this before it exits (see drain.ts).
  flushOnExit(async () => {
    unflushed = false;
    await sink.flush();
  });
  // Any other exit: what the sink still holds is written on the way out (at once to a file; a pipe that is full
  // may drop it).
  process.once('exit', () => {
    try {
      if (unflushed) void sink.flush();
    } catch {}
  });
  return {
    info: (m) => {
      if (level !== 'info') return;
      if (!unflushed) {
        unflushed = true;
        setImmediate(flush);
      }
      sink.write(`${iso(Date.now())} ${escapeLogLine(m)}\n`);
    },
    warn: (m) => {
      flush();
      if (level !== 'silent') c().warn(escapeLogLine(m));
    },
    error: (m) => {
      flush();
      if (level !== 'silent') c().error(escapeLogLine(m));
    },
  };
}

/** A log that keeps every line: tests read it for canaries. */
export function memoryLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  const keep = (level: string) => (m: string) => void lines.push(`${level} ${escapeLogLine(m)}`);
  return { lines, info: keep('info'), warn: keep('warn'), error: keep('error') };
}
