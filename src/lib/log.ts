/** Logging to stderr only (stdout carries data). Callers pass facts, never headers, bodies or secrets. */
import { isoFormatter } from './clock.ts';
import { flushOnExit } from './drain.ts';

/** Facts of a line: text lines append them as ` key=value`, JSON lines as properties. Null and undefined are left out. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Log {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** `text`: one line per event, `<time> [WARN|ERROR] message key=value…`; `json`: one JSON object per line. */
export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

/**
 * What a log line may say of a thrown error: its class and first line, with anything after `params:` dropped (a
 * driver's message echoes a failed query's bound values there: payloads, sealed tokens), at most 200 characters.
 */
export function errorLine(err: unknown): string {
  if (!(err instanceof Error)) return 'non-error thrown';
  const first = (err.message.split('\n')[0] ?? '').split(/params:/i)[0]!.slice(0, 200);
  return `${err.name}: ${first}`;
}

export const silentLog: Log = { info() {}, warn() {}, error() {} };

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what a log line escapes
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

/** The time of each line: its own kept string, apart from the times lines mention (see isoFormatter). */
const lineTime = isoFormatter();

/** One line of `format`, ending in a newline, with nothing a terminal interprets (see escapeLogLine). */
export function formatLogLine(format: LogFormat, at: number, level: 'info' | 'warn' | 'error', message: string, fields?: LogFields): string {
  if (format === 'json') {
    const doc: Record<string, unknown> = { time: lineTime(at), level, msg: message };
    for (const [k, v] of Object.entries(fields ?? {})) if (v != null && !(k in doc)) doc[k] = v;
    // JSON.stringify escapes C0 controls; escapeLogLine turns what it leaves (DEL, C1, U+2028/9) into \u escapes.
    return `${escapeLogLine(JSON.stringify(doc))}\n`;
  }
  const tag = level === 'info' ? '' : ` ${level.toUpperCase()}`;
  return `${escapeLogLine(`${lineTime(at)}${tag} ${withFields(message, fields)}`)}\n`;
}

/**
 * The message with ` key=value` for each field set, in the fields' order. A for-in, not Object.entries: the same
 * order for a plain object, without an array of pairs allocated per line (one line per request).
 */
function withFields(message: string, fields: LogFields | undefined): string {
  let line = message;
  if (fields)
    for (const k in fields) {
      const v = fields[k];
      if (v != null && Object.hasOwn(fields, k)) line += ` ${k}=${v}`;
    }
  return line;
}

/**
 * Every line goes through one buffered stderr sink: info lines (one per request on the hot path) are flushed once
 * per event-loop turn, warnings and errors at once. Formatting per line with consola cost a third of ingest
 * throughput, and it wrote each warning over three lines without a time.
 */
export function stderrLog(level: 'info' | 'warn' | 'silent' = 'info', format: LogFormat = 'text'): Log {
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
  const write = (lvl: 'info' | 'warn' | 'error', m: string, fields: LogFields | undefined) => {
    sink.write(formatLogLine(format, Date.now(), lvl, m, fields));
    if (lvl !== 'info') {
      unflushed = true;
      flush();
    } else if (!unflushed) {
      unflushed = true;
      setImmediate(flush);
    }
  };
  return {
    info: (m, f) => {
      if (level === 'info') write('info', m, f);
    },
    warn: (m, f) => {
      if (level !== 'silent') write('warn', m, f);
    },
    error: (m, f) => {
      if (level !== 'silent') write('error', m, f);
    },
  };
}

/** A log that keeps every line: tests read it for canaries. */
export function memoryLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  const keep = (level: string) => (m: string, f?: LogFields) => void lines.push(`${level} ${escapeLogLine(withFields(m, f))}`);
  return { lines, info: keep('info'), warn: keep('warn'), error: keep('error') };
}
