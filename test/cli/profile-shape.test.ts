import { describe, expect, it, setDefaultTimeout } from 'bun:test';
import { checkProfile } from '../../src/client/config.ts';

// These tests spawn the CLI or a server: room for a loaded machine (a per-file default; see test/preload.ts).
setDefaultTimeout(60_000);

describe('checkProfile', () => {
  it('accepts the known string fields and refuses any other shape with the field named', () => {
    expect(checkProfile('p', { baseUrl: 'http://127.0.0.1:8787', tokenEnv: 'T', expectedShopDomain: 'a.myshopify.com' })).toEqual({
      baseUrl: 'http://127.0.0.1:8787',
      tokenEnv: 'T',
      expectedShopDomain: 'a.myshopify.com',
    });
    const refusals: [unknown, string][] = [
      [null, 'profile: must be an object'],
      [['x'], 'profile: must be an object'],
      [{ baseUrl: 'http://x' }, 'tokenEnv: required'],
      [{ baseUrl: 'http://x', tokenEnv: 'T', extra: 'y' }, 'extra: unknown field'],
      [{ baseUrl: 'http://x', tokenEnv: 'T', expectedShopDomain: '' }, 'expectedShopDomain: must be a string'],
      [{ baseUrl: 'http://x', tokenEnv: 5 }, 'tokenEnv: must be a string'],
    ];
    for (const [input, message] of refusals) {
      expect(() => checkProfile('p', input)).toThrow(message);
    }
  });
});
