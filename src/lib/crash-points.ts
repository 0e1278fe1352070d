/**
 * Named points where a crash test kills the process: with `HOOKRELAY_CRASH_AT=<point>` set, reaching that point
 * sends this process SIGKILL, as a power cut or the OOM killer would, so a test can stop it at an exact step of an
 * execute and check what a retry finds. Unset (outside those tests), each point costs one comparison.
 */
export const CRASH_POINTS = [
  /** The Idempotency-Key is claimed (pending); nothing else is done. */
  'key-claimed',
  /** The intent is claimed `executing`; its change is not made. */
  'intent-claimed',
  /** The change is planned; nothing is written. */
  'planned',
  /** The change and the intent's completion are committed; the answer is not stored. */
  'committed',
  /** The answer is stored under its Idempotency-Key; it is not audited or sent. */
  'answer-stored',
  /** The call is audited; the answer is not sent. */
  'audited',
] as const;

export type CrashPoint = (typeof CRASH_POINTS)[number];

const armed = process.env.HOOKRELAY_CRASH_AT ?? null;

export function crashPoint(point: CrashPoint): void {
  if (armed === point) process.kill(process.pid, 'SIGKILL');
}
