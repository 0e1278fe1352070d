/** stdout carries exactly one JSON document per command (pretty on a TTY, compact otherwise), written in full before exit. */
import { flushBeforeExit, track } from '../src/lib/drain.ts';
import { isTerminal } from './_tty.ts';

let closed = false;
/** The last write: each starts after the one before, so lines keep their order. */
let last: Promise<void> = Promise.resolve();

/**
 * Writes to stdout; the entry waits until the OS has taken it (see drain.ts). A closed reader (EPIPE, `| head`) is
 * not an error of ours. Bun.write, not process.stdout: that stream loads Node's stream modules (20 ms of a cold start).
 */
export function writeOut(text: string): Promise<void> {
  const done = (last = last.then(async () => {
    if (closed) return;
    try {
      await Bun.write(Bun.stdout, text);
    } catch {
      closed = true;
    }
  }));
  track(done);
  return done;
}

/** True once a write failed because the reader went away (`| head -1`): a stream should stop. */
export function stdoutClosed(): boolean {
  return closed;
}

/** Resolves once every stdout write and log line so far has been handed to the OS; the entry awaits it before exiting. */
export const drained = flushBeforeExit;

/** Prints one JSON document: indented for a person at a terminal, one line for a program. */
export function printJson(doc: unknown): Promise<void> {
  const text = isTerminal(1) ? JSON.stringify(doc, null, 2) : JSON.stringify(doc);
  return writeOut(`${text}\n`);
}

/** Prints one compact JSON line (a stream such as `events --follow`). */
export function printJsonLine(doc: unknown): Promise<void> {
  return writeOut(`${JSON.stringify(doc)}\n`);
}

/** Colour only for a terminal: NO_COLOR (any value) turns it off, FORCE_COLOR (other than 0) turns it on, TERM=dumb off. */
export function colorFor(stream: { isTTY?: boolean }, env: Record<string, string | undefined> = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined) return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false';
  return Boolean(stream.isTTY) && env.TERM !== 'dumb';
}
