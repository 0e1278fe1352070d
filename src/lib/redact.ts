/** The one redactor: every secret shape hookrelay knows, for free text and for whole JSON documents. */

interface Shape {
  pattern: RegExp;
  label: string;
  /** A token with a recognisable prefix: the CLI may show its last four characters. */
  maskable?: boolean;
}

const CREDENTIAL_KEYS = 'secret|token|api[_-]?key|access[_-]?key|private[_-]?key';
/** A key naming a credential, alone or ending a longer one (`DB_PASSWORD`, `X-Api-Key`, `accessToken`), and its separator. */
const keyed = (keys: string, separator: string) => `(?:${keys})["']?\\s{0,3}${separator}\\s{0,3}`;
/** The value after the key: quoted, or up to a space, quote or separator; never one of this file's own labels. */
const VALUE = `(?!["']?\\[redacted )(?:"[^"\\n]+"|'[^'\\n]+'|[^\\s"',;&]+)`;

/**
 * Secret shapes, widest first (a full `Authorization:` header before a bare `Bearer …` or the token in it,
 * a database URL before the credentials-in-URL rule). Every pattern is global and never matches its own label,
 * so redacting twice changes nothing. A pattern that opens with a repeated class starts only where a run of that
 * class starts (a lookbehind, not `\b`): text such as `a-a-a-…` then costs linear time, not quadratic.
 */
const SECRET_SHAPES: readonly Shape[] = [
  { pattern: /\b(?:proxy-)?authorization\s*[:=]\s*(?:(?:bearer|basic|token|digest)\s+)?[^\s"',;]+/gi, label: 'authorization header' },
  // A credential after the scheme word holds a digit or symbol, or is long: "Basic authentication" stays prose.
  { pattern: /\b(?:[Bb]earer|BEARER|[Bb]asic|BASIC)\s+(?:(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}|[A-Za-z]{24,})/g, label: 'credential' },
  { pattern: /\bwhsec_[0-9A-Za-z]+/g, label: 'secret', maskable: true },
  { pattern: /\bhrg_[0-9A-Za-z]+/g, label: 'grant token', maskable: true },
  { pattern: /\bhrm_[0-9A-Za-z]+/g, label: 'metrics token', maskable: true },
  { pattern: /\bhr[aro]_[0-9A-Za-z]+/g, label: 'OAuth token', maskable: true },
  { pattern: /\bshp(?:at|ca|pa|ss|rt)_[0-9A-Za-z_]+/g, label: 'platform token', maskable: true },
  { pattern: /\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|mssql|sqlserver|libsql):\/\/\S+/gi, label: 'database URL' },
  { pattern: /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*:\/\/[^\s/@:]+:[^\s/@]+@\S*/gi, label: 'URL with credentials' },
  { pattern: /\b(?:sha256=)?[0-9a-f]{64}\b/gi, label: 'signature' },
  // A random token without its prefix (an endpoint secret pasted without `whsec_`, 43 characters): both cases,
  // and 32+ characters with a digit or 40+ letters (one secret in 2,000 has no digit). hookrelay's ids are lower
  // case after an underscore and never match; nor does prose, nor a camelCase name shorter than 40.
  {
    pattern: /\b(?=[0-9A-Za-z]*[a-z])(?=[0-9A-Za-z]*[A-Z])(?:(?=[A-Za-z]*[0-9])[0-9A-Za-z]{32,}|[A-Za-z]{40,})\b/g,
    label: 'secret',
  },
  // `password=…`, `DB_PASSWORD: …`, `"pwd": "…"`: the value goes, the key stays; any value, since a password can be a word.
  { pattern: new RegExp(`(?<=${keyed('password|passwd|pwd|passphrase', '[:=]')})${VALUE}`, 'gi'), label: 'password' },
  // `token=…`, `api_key=…`, `client_secret: …`: after `=` any value; after `:` only one that looks like a
  // credential (a digit or symbol, or 16+ letters), so prose such as "X-Hookrelay-Token: the secret" or the
  // scope `secret:rotate` stays.
  {
    pattern: new RegExp(
      `(?:(?<=${keyed(CREDENTIAL_KEYS, '=')})|(?<=${keyed(CREDENTIAL_KEYS, ':')})(?=["']?(?:[A-Za-z]*[0-9_./+=~-]|[A-Za-z]{16,})))${VALUE}`,
      'gi',
    ),
    label: 'credential',
  },
];

/** A held value shorter than this is not looked for: it could not be told from a word. */
const HELD_SECRET_MIN_LENGTH = 8;

/**
 * Secret values this process holds (the Shopify app's client secret, the box key, the operator webhook secret, the
 * database password…), each redacted wherever it appears in free text: bare, with no label and whatever its
 * shape, which no pattern above can know. A value of hex digits only is matched in either case.
 */
export class HeldSecrets {
  static readonly none = new HeldSecrets([]);
  private readonly exact: RegExp | null;
  private readonly hex: RegExp | null;

  constructor(values: Iterable<string>) {
    const distinct = [...new Set([...values].map((v) => v.trim()).filter((v) => v.length >= HELD_SECRET_MIN_LENGTH))];
    // Longest first: a value that holds another is taken whole.
    distinct.sort((a, b) => b.length - a.length);
    const alternation = (vs: string[]) => (vs.length ? new RegExp(vs.map((v) => v.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|'), 'g') : null);
    const isHex = (v: string) => /^[0-9a-f]+$/i.test(v);
    this.exact = alternation(distinct.filter((v) => !isHex(v)));
    const hex = distinct.filter(isHex);
    this.hex = hex.length ? new RegExp(hex.join('|'), 'gi') : null;
  }

  /** `text` with every held value as `[redacted secret]`. */
  redact(text: string): string {
    let out = text;
    if (this.exact) out = out.replace(this.exact, '[redacted secret]');
    if (this.hex) out = out.replace(this.hex, '[redacted secret]');
    return out;
  }
}

/** A URL's password as written and decoded (none when it has none or does not parse). */
export function urlPasswords(url: string | undefined | null): string[] {
  if (!url) return [];
  try {
    const raw = new URL(url).password;
    if (!raw) return [];
    let decoded = raw;
    try {
      decoded = decodeURIComponent(raw);
    } catch {}
    return [raw, decoded];
  } catch {
    return [];
  }
}

/** Customer data that is no secret but never belongs in what support or the database keeps from free text. */
const PRIVATE_SHAPES: readonly Shape[] = [{ pattern: /(?<![\w.+-])[\w.+-]+@[\w-]+\.[\w.-]+\b/g, label: 'email' }];

function apply(text: string, shapes: readonly Shape[], replace: (match: string, shape: Shape) => string): string {
  let out = text;
  for (const shape of shapes) out = out.replace(shape.pattern, (m) => replace(m, shape));
  return out;
}

const label = (_m: string, shape: Shape) => `[redacted ${shape.label}]`;

/** `****abcd`: all but the last four characters hidden (all of it when shorter than 12). */
export function mask(value: string): string {
  return value.length < 12 ? '****' : `****${value.slice(-4)}`;
}

/** Secrets in any text (names, messages, stored responses): each becomes `[redacted <kind>]`; `held`'s values too. */
export function redactSecretsIn(text: string, held: HeldSecrets = HeldSecrets.none): string {
  return apply(held.redact(text), SECRET_SHAPES, label);
}

/**
 * Free text a person or agent typed (notes, summaries, reasons, endpoint names): secrets (the shapes, and the
 * values `held`) and email addresses removed. Used for what support sees, what a diagnostics share freezes and,
 * through redactInput, what an operation keeps of its input.
 */
export function redactText(text: string, held: HeldSecrets = HeldSecrets.none): string {
  return apply(apply(held.redact(text), SECRET_SHAPES, label), PRIVATE_SHAPES, label);
}

/** For output a human reads (the CLI): prefixed tokens keep their last four characters, other secrets their label. */
export function maskSecretsIn(text: string): string {
  return apply(text, SECRET_SHAPES, (m, shape) => (shape.maskable ? mask(m) : label(m, shape)));
}

/**
 * A copy of a JSON document with every string passed through `text` and every `secret` field replaced by
 * `secretField(value)`: the one walk behind stored responses, stored intent input and CLI output.
 */
export function redactDocument(
  doc: unknown,
  how: { text: (s: string) => string; secretField: (value: string) => string; fields?: Record<string, (s: string) => string> },
): unknown {
  if (typeof doc === 'string') return how.text(doc);
  if (Array.isArray(doc)) return doc.map((d) => redactDocument(d, how));
  if (doc && typeof doc === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(doc)) {
      if (k === 'secret' && typeof v === 'string') out[k] = how.secretField(v);
      else if (typeof v === 'string' && how.fields?.[k]) out[k] = how.fields[k]!(v);
      else out[k] = redactDocument(v, how);
    }
    return out;
  }
  return doc;
}

/** The warning an operation adds when `redactInput` changed its input. */
export const REDACTED_WARNING =
  'Parts of the input looked private (a secret, token, credential or email address) and were redacted; only the redacted text is kept or shared.';

/**
 * What an operation keeps of its input, the one rule for every operation that stores what a caller typed
 * (endpoint creation, intents): every string without secrets (the shapes, and the values `held`), and the
 * `freeText` fields (names, labels, notes, reasons; at any depth) without email addresses too. Call it before
 * anything is stored or echoed; `redacted` says whether to add REDACTED_WARNING.
 */
export function redactInput<T>(input: T, freeText: readonly string[] = [], held: HeldSecrets = HeldSecrets.none): { input: T; redacted: boolean } {
  const fields = Object.fromEntries(freeText.map((f) => [f, (s: string) => redactText(s, held)]));
  const secrets = (s: string) => redactSecretsIn(s, held);
  const out = redactDocument(input, { text: secrets, secretField: secrets, fields }) as T;
  return { input: out, redacted: JSON.stringify(out) !== JSON.stringify(input) };
}
