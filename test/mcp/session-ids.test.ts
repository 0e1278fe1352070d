import { describe, expect, it } from 'bun:test';
import { newSecretKey, SecretBox } from '../../src/lib/crypto.ts';
import { createSessionIds } from '../../src/mcp/session-ids.ts';

describe('createSessionIds', () => {
  const key = newSecretKey();
  const ids = createSessionIds(new SecretBox(key));

  it('mints ids any instance with the same box key verifies, for the grant that opened them only', () => {
    const id = ids.mint('gr_one');
    expect(id).toMatch(/^mcs_[0-9A-Za-z]{44}$/);
    expect(ids.mint('gr_one')).not.toBe(id);
    expect(createSessionIds(new SecretBox(key)).verify(id, 'gr_one')).toBe(true);
    expect(ids.verify(id, 'gr_two')).toBe(false);
    expect(createSessionIds(new SecretBox(newSecretKey())).verify(id, 'gr_one')).toBe(false);
  });

  it('refuses a forged, altered or malformed id', () => {
    const id = ids.mint('gr_one');
    const flipped = id.slice(0, -1) + (id.at(-1) === 'a' ? 'b' : 'a');
    const otherNonce = `mcs_${'0'.repeat(22)}${id.slice(-22)}`;
    for (const bad of [flipped, otherNonce, id.slice(0, -1), `${id}0`, id.replace('mcs_', 'mcx_'), 'mcs_nosuchsession', '']) {
      expect(ids.verify(bad, 'gr_one'), bad).toBe(false);
    }
  });
});
