/** Logging to stderr only (stdout carries data). Callers pass facts, never headers, bodies or secrets. */
import { createConsola } from 'consola';

export interface Log {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLog: Log = { info() {}, warn() {}, error() {} };

export function stderrLog(level: 'info' | 'warn' | 'silent' = 'info'): Log {
  const c = createConsola({ stdout: process.stderr, stderr: process.stderr, level: level === 'silent' ? -999 : level === 'warn' ? 1 : 3 });
  return { info: (m) => c.info(m), warn: (m) => c.warn(m), error: (m) => c.error(m) };
}

/** A log that keeps every line: tests read it for canaries. */
export function memoryLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (m) => lines.push(`info ${m}`), warn: (m) => lines.push(`warn ${m}`), error: (m) => lines.push(`error ${m}`) };
}
