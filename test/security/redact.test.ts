/** The one redactor (src/lib/redact.ts): every secret shape, in text and in documents, and stable when run twice. */
import { describe, expect, it } from 'bun:test';
import { redactSecrets } from '../../src/client/redact.ts';
import { newEndpointSecret, newGrantToken } from '../../src/lib/crypto.ts';
import { createIdGenerator } from '../../src/lib/ids.ts';
import { maskSecretsIn, redactDocument, redactInput, redactSecretsIn, redactText } from '../../src/lib/redact.ts';

const SHAPES: [name: string, canary: string, label: string][] = [
  ['endpoint secret', 'whsec_7Hq2kLmN9pQrStUvWxYz01', 'secret'],
  ['grant token', 'hrg_AbCdEfGhIjKlMnOpQrStUv12', 'grant token'],
  ['HMAC hex', 'a3f1'.repeat(16), 'signature'],
  ['HMAC hex, upper case and prefixed', `sha256=${'A3F1'.repeat(16)}`, 'signature'],
  ['full Authorization header', 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig', 'authorization header'],
  ['bare bearer credential', 'Bearer opaque0123456789abcdef', 'credential'],
  ['basic credential', 'Basic dXNlcjpwYXNzd29yZA==', 'credential'],
  ['Shopify token', 'shpat_0123456789abcdef0123456789abcdef', 'platform token'],
  ['Shopify refresh token', 'shprt_0123456789abcdef0123456789abcdef', 'platform token'],
  ['database URL', 'postgres://app:s3cret@db.internal:5432/hookrelay', 'database URL'],
  ['credentials in another URL', 'https://user:pa55@example.com/hook', 'URL with credentials'],
  ['metrics token', 'hrm_AbCdEfGhIjKlMnOpQrStUv12', 'metrics token'],
  ['OAuth access token', 'hra_AbCdEfGhIjKlMnOpQrStUv12', 'OAuth token'],
  ['OAuth refresh token', 'hrr_AbCdEfGhIjKlMnOpQrStUv12', 'OAuth token'],
  ['OAuth authorization code', 'hro_AbCdEfGhIjKlMnOpQrStUv12', 'OAuth token'],
];

describe('redactSecretsIn', () => {
  for (const [name, canary, label] of SHAPES) {
    it(`replaces a ${name} inside text with its label`, () => {
      const out = redactSecretsIn(`before ${canary} after`);
      expect(out).toBe(`before [redacted ${label}] after`);
      expect(redactSecretsIn(out)).toBe(out);
    });
  }

  it('leaves ordinary text, ids and emails alone', () => {
    const text = `evt_01HZX order 4501 ops@example.com cfm_token Basic authentication, bearer tokens; 63 hex ${'a'.repeat(63)}`;
    expect(redactSecretsIn(text)).toBe(text);
  });
});

/** Credentials in `key=value` or `key: value` form: the key stays, the value becomes a label. */
const KEYED: [text: string, redacted: string][] = [
  ['password=hunter2xyz', 'password=[redacted password]'],
  ['Password: hunter', 'Password: [redacted password]'],
  ['DB_PASSWORD=correct-horse', 'DB_PASSWORD=[redacted password]'],
  ['{"password": "p4ss word"}', '{"password": [redacted password]}'],
  ["pwd='s3cr3t'", 'pwd=[redacted password]'],
  ['passwd = letmein', 'passwd = [redacted password]'],
  ['secret=abc', 'secret=[redacted credential]'],
  ['client_secret: cs_0123abcd', 'client_secret: [redacted credential]'],
  ['token=abc', 'token=[redacted credential]'],
  ['https://hooks.example.com/in?token=abc123&x=1', 'https://hooks.example.com/in?token=[redacted credential]&x=1'],
  ['api_key=abc123', 'api_key=[redacted credential]'],
  ['X-Api-Key: 9f8e7d6c', 'X-Api-Key: [redacted credential]'],
  ['accessToken: "eyJhbGciOi.e30"', 'accessToken: [redacted credential]'],
];

describe('redactSecretsIn: forms without a prefix', () => {
  for (const [text, redacted] of KEYED) {
    it(`redacts the value of ${text}`, () => {
      const out = redactSecretsIn(`before ${text} after`);
      expect(out).toBe(`before ${redacted} after`);
      expect(redactSecretsIn(out)).toBe(out);
    });
  }

  it('redacts an endpoint secret pasted without its prefix, and a grant token body', () => {
    const noDigit = 'QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUiOpAsDfGhJ'; // as one secret in 2,000 is
    expect(redactSecretsIn(`secret ${noDigit}`)).toBe('secret [redacted secret]');
    for (let i = 0; i < 200; i++) {
      const bare = newEndpointSecret().slice('whsec_'.length);
      const body = newGrantToken().slice('hrg_'.length);
      const out = redactSecretsIn(`secret ${bare}, token (${body}).`);
      expect(out).toBe('secret [redacted secret], token ([redacted secret]).');
      expect(redactSecretsIn(out)).toBe(out);
    }
  });

  it('keeps a prefixed token its own label, with or without a key before it', () => {
    const secret = newEndpointSecret();
    expect(redactSecretsIn(`secret=${secret}`)).toBe('secret=[redacted secret]');
    expect(redactSecretsIn(`password: ${secret}`)).toBe('password: [redacted secret]');
    expect(redactSecretsIn(`X-Hookrelay-Token: ${secret.slice(6)}`)).toBe('X-Hookrelay-Token: [redacted secret]');
  });

  it("leaves hookrelay's ids, paths, header names, scopes and prose alone", () => {
    const ids = createIdGenerator();
    const minted = (['ep', 'evt', 'rcpt', 'int', 'gr', 'diag', 'sup', 'st'] as const).map((p) => ids.next(p));
    const text = [
      ...minted,
      '$.order.id order.line_items customer.email',
      'X-Hookrelay-Signature X-Hookrelay-Token X-Shopify-Hmac-Sha256',
      'Send X-Hookrelay-Token: the secret, exactly.',
      'scopes secret:rotate, endpoint:write',
      'Basic authentication; the password reset; tokens: two; the token: expired; secrets are sealed.',
      'handleOrderCreatedWebhookForShopify', // camelCase, shorter than 40
      'orderCreatedWebhookV2', // camelCase with a digit, shorter than 32
      'a'.repeat(63),
      '0123456789abcdef0123456789abcdef0123456789', // lower-case hex, shorter than a signature
      'ORDER_FLAGGED_EVENT_2024_FROM_ZAPIER_WEBHOOK',
    ].join(' ');
    expect(redactSecretsIn(text)).toBe(text);
    expect(redactText(text)).toBe(text);
  });
});

describe('cost', () => {
  // Not a benchmark: a pattern that restarts at every word boundary took seconds on 40 KB of `a-a-a-…` (quadratic).
  it('stays linear on text built to make a pattern backtrack', () => {
    const texts = ['a-', 'a.', 'token-', 'A1+'].map((unit) => unit.repeat(100_000 / unit.length));
    texts.push(`token${' '.repeat(100_000)}=`, `password${'\t'.repeat(100_000)}:`);
    const started = performance.now();
    for (const text of texts) redactText(text);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('redactText (free text)', () => {
  it('also removes email addresses, and is stable', () => {
    const out = redactText('mail buyer@example.com, key whsec_abc123');
    expect(out).toBe('mail [redacted email], key [redacted secret]');
    expect(redactText(out)).toBe(out);
  });
});

describe('documents', () => {
  it('walks arrays and objects, with a rule for `secret` fields and for named free-text fields', () => {
    const doc = { secret: 'whsec_x', list: [`t ${SHAPES[1]![1]}`], note: 'a@b.co', name: 'a@b.co', n: 3, z: null };
    const out = redactDocument(doc, { text: redactSecretsIn, secretField: () => '(hidden)', fields: { note: redactText } });
    expect(out).toEqual({ secret: '(hidden)', list: ['t [redacted grant token]'], note: '[redacted email]', name: 'a@b.co', n: 3, z: null });
  });

  it('the CLI masks prefixed tokens to their last four and labels the rest', () => {
    expect(maskSecretsIn('token hrg_AbCdEfGhIjKlMnOpQrStUv12')).toBe('token ****Uv12');
    const out = JSON.stringify(redactSecrets({ error: { message: `bad ${SHAPES[4]![1]} and ${SHAPES[7]![1]}` } }));
    expect(out).not.toContain('eyJhbGci');
    expect(out).not.toContain('s3cret');
  });
});

describe('redactInput', () => {
  it('removes secrets from every string and email addresses from the free-text fields, and says whether it changed anything', () => {
    const raw = { name: `ops@example.com ${SHAPES[0]![1]}`, resourceIdPath: 'order.id', headerName: 'X-Key', list: ['buyer@example.com password=x1'] };
    const { input, redacted } = redactInput(raw, ['name']);
    expect(input).toEqual({
      name: '[redacted email] [redacted secret]',
      resourceIdPath: 'order.id',
      headerName: 'X-Key',
      list: ['buyer@example.com password=[redacted password]'],
    });
    expect(redacted).toBe(true);
    expect(raw.name).toContain('whsec_');
    expect(redactInput(input, ['name'])).toEqual({ input, redacted: false });
  });
});
