/**
 * The box key proven before serve listens: one sealed value of the box must open with the key this process holds,
 * or serve stops with `secret_key_mismatch` (exit 2) naming where its key came from, never the key. A box served
 * with another key would look healthy and answer every signed receipt with an error.
 *
 * The value opened is an endpoint's secret, else the box's key check: a constant sealed by the first serve of a
 * box that had none, so that two instances on one PostgreSQL with different keys are told apart before either
 * seals an endpoint secret the other cannot open.
 */
import type { SqlRunner } from '../../db/runner.ts';
import { AppError } from '../contract/errors.ts';
import type { SecretBox } from '../lib/crypto.ts';

/** The settings row holding the key check (JSON: the sealed constant). */
const KEY_CHECK_SETTING = 'box_key_check';
const KEY_CHECK_PLAIN = 'hookrelay box key check v1';

/** The queries finding a sealed value, first found wins: each gives its value as `s` (the check's as JSON text). */
export const SEALED_SAMPLES = [
  { table: 'endpoints', sql: 'SELECT secret_sealed AS s FROM endpoints LIMIT 1', json: false },
  { table: 'settings', sql: `SELECT value AS s FROM settings WHERE key = '${KEY_CHECK_SETTING}'`, json: true },
] as const;

/** A sealed value of the box (SEALED_SAMPLES), or null when it holds none. */
async function sealedSample(sql: SqlRunner): Promise<string | null> {
  for (const q of SEALED_SAMPLES) {
    const s = (await sql.all<{ s: string }>(q.sql, []))[0]?.s;
    if (s != null) return q.json ? (JSON.parse(s) as string) : s;
  }
  return null;
}

/** Whether `box` opens `sealed`. */
export function opens(box: SecretBox, sealed: string): boolean {
  try {
    box.open(sealed);
    return true;
  } catch {
    return false;
  }
}

/** The refusal of a key that does not open the box's secrets, naming where the key came from. */
function wrongKey(source: string, what: string): AppError {
  return new AppError(
    'secret_key_mismatch',
    `The box key from ${source} does not open the secrets sealed in ${what}: it is not the key that sealed them, and every signed receipt would fail. Give serve the box's own key (HOOKRELAY_SECRET_KEY as the box was served with, the same on every instance, or unset to use the data directory's secret.key).`,
  );
}

/**
 * Opens one sealed value of the box with `box`'s key, writing the key check first when the box holds none; throws
 * `wrongKey` when it does not open. Nothing else is read or written.
 */
export async function proveBoxKey(sql: SqlRunner, box: SecretBox, what: string, now: number): Promise<void> {
  let sealed = await sealedSample(sql);
  if (sealed === null) {
    // Two instances starting at once on an empty box: one check is kept, and the other instance proves against it.
    try {
      await sql.run('INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING', [
        KEY_CHECK_SETTING,
        JSON.stringify(box.seal(KEY_CHECK_PLAIN)),
        now,
      ]);
    } catch {
      return; // a box refusing writes (a full disk) holds nothing sealed yet to prove against: a later start writes it
    }
    sealed = await sealedSample(sql);
  }
  if (sealed === null || !opens(box, sealed)) throw wrongKey(box.source, what);
}
