/** Logging to stderr only (stdout carries data). Callers pass facts, never headers, bodies or secrets. */
import { createConsola } from 'consola';
import { iso } from './clock.ts';

export interface Log {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLog: Log = { info() {}, warn() {}, error() {} };

/**
 * Info lines (one per request on the hot path) go through a buffered stderr sink flushed once per event-loop
 * turn; consola formats per line and would cost a third of ingest throughput. Warnings and errors use consola.
 */
export function stderrLog(level: 'info' | 'warn' | 'silent' = 'info'): Log {
  const c = createConsola({ stdout: process.stderr, stderr: process.stderr, level: level === 'silent' ? -999 : level === 'warn' ? 1 : 3 });
  const sink = Bun.stderr.writer();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    void sink.flush();
  };
  process.once('exit', () => void sink.flush());
  return {
    info: (m) => {
      if (level !== 'info') return;
      sink.write(`${iso(Date.now())} ${m}\n`);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    warn: (m) => {
      void sink.flush();
      c.warn(m);
    },
    error: (m) => {
      void sink.flush();
      c.error(m);
    },
  };
}

/** A log that keeps every line: tests read it for canaries. */
export function memoryLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (m) => lines.push(`info ${m}`), warn: (m) => lines.push(`warn ${m}`), error: (m) => lines.push(`error ${m}`) };
}
