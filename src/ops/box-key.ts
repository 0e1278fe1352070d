/**
 * The box key proven before serve listens: one sealed value of the box must open with the key this process holds,
 * or serve stops with `secret_key_mismatch` (exit 2) naming where its key came from, never the key. A box served
 * with another key would look healthy and answer every signed receipt with an error.
 *
 * The value opened is an endpoint's secret, else the box's key check: a constant sealed by the first serve of a
 * box that had none, so that two instances on one PostgreSQL with different keys are told apart before either
 * seals an endpoint secret the other cannot open.
 */
import { BOX_KEY_CHECK } from '../../db/areas/settings.ts';
import type { SettingStore } from '../../db/repo.ts';
import { AppError } from '../contract/errors.ts';
import type { SecretBox } from '../lib/crypto.ts';

const KEY_CHECK_PLAIN = 'hookrelay box key check v1';

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
export async function proveBoxKey(settings: SettingStore, box: SecretBox, what: string, now: number): Promise<void> {
  let sealed = await settings.sealedSample();
  if (sealed === null) {
    // Two instances starting at once on an empty box: one check is kept, and the other instance proves against it.
    try {
      await settings.addSetting(BOX_KEY_CHECK, JSON.stringify(box.seal(KEY_CHECK_PLAIN)), now);
    } catch {
      return; // a box refusing writes (a full disk) holds nothing sealed yet to prove against: a later start writes it
    }
    sealed = await settings.sealedSample();
  }
  if (sealed === null || !opens(box, sealed)) throw wrongKey(box.source, what);
}
