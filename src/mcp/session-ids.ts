/**
 * MCP session ids any instance can check without storage: `mcs_` + 22 random base62 characters + 22 of an HMAC
 * binding them to the grant that opened the session, keyed by a key derived from the box key (the same on every
 * instance of one database). An id proves only which grant opened it; the bearer is still checked on every request.
 */
import { createHmac } from 'node:crypto';
import type { SecretBox } from '../lib/crypto.ts';
import { constantTimeEqual } from '../lib/crypto.ts';
import { base62, randomBase62 } from '../lib/ids.ts';

const SHAPE = /^mcs_([0-9A-Za-z]{22})([0-9A-Za-z]{22})$/;

export interface SessionIds {
  /** A new session id bound to `grantId`. */
  mint(grantId: string): string;
  /** Whether `id` was minted for `grantId` under this box key: false for another grant's, a forged or malformed id. */
  verify(id: string, grantId: string): boolean;
}

export function createSessionIds(box: SecretBox): SessionIds {
  // Its own key, derived once: the box key itself is for AES-GCM sealing, and never leaves the process.
  const key = createHmac('sha256', box.key()).update('hookrelay mcp session id v1').digest();
  const mac = (grantId: string, nonce: string) => base62(createHmac('sha256', key).update(`${grantId}\n${nonce}`).digest().subarray(0, 16));
  return {
    mint(grantId) {
      const nonce = randomBase62(16);
      return `mcs_${nonce}${mac(grantId, nonce)}`;
    },
    verify(id, grantId) {
      const m = SHAPE.exec(id);
      return m !== null && constantTimeEqual(m[2]!, mac(grantId, m[1]!));
    },
  };
}
