/**
 * Signature forensics' findings: each code a sender's usual mistake, with a one-line fix and, for the sender-profile
 * presets, where that sender makes it. The inbound 401 answers `diagnosis: { code, fix }`, auth_failures keeps the
 * code, setup state names both. src/relay/signature-forensics.ts decides which code fits.
 */
import type { SenderProfile } from './schemas/endpoints.ts';

export const DIAGNOSIS_CODES = [
  'hex_uppercase',
  'base64_not_hex',
  'prefix_sha256',
  'prefix_v1',
  'body_reserialized_compact',
  'body_reserialized_pretty',
  'body_trailing_newline',
  'previous_secret',
  'secret_not_signature',
  'signature_not_token',
  'bearer_prefix',
] as const;
export type DiagnosisCode = (typeof DIAGNOSIS_CODES)[number];

/** Senders with a preset (SENDER_PROFILES less custom_http, which is the generic text). */
type Preset = Exclude<SenderProfile, 'custom_http'>;

interface Diagnosis {
  /** What the sender did, as the code says it. */
  meaning: string;
  /** The generic one-line fix (custom code, Pipedream, curl). */
  fix: string;
  /** The fix where a preset sender makes the mistake. */
  senders?: Partial<Record<Preset, string>>;
}

/** Where the usual senders re-serialise: shared by the three body codes. */
const RAW_BODY: Record<Preset, string> = {
  zapier:
    'In Zapier, sign in a Code by Zapier step and send that exact string as the Data of a Webhooks by Zapier Custom Request: the POST action (Payload Type json) builds its own JSON.',
  make: "In Make's HTTP module, set Body type Raw, Content type JSON and Request content to exactly the string you signed, not a rebuilt data structure.",
  n8n: 'In n8n, send the string you signed as a Raw body (HTTP Request node, Body Content Type Raw, application/json); JSON body parameters are serialised again by the node.',
};

const NEW_SECRET: Record<Preset, string> = {
  zapier: 'In Zapier, replace the secret in the Code by Zapier step that signs the body with the current one.',
  make: "In Make, replace the key given to the scenario's signing function with the current secret.",
  n8n: "In n8n, replace the Crypto node's Secret (or the credential holding it) with the current secret.",
};

export const DIAGNOSES: Record<DiagnosisCode, Diagnosis> = {
  hex_uppercase: {
    meaning: 'The right HMAC-SHA256, in upper-case hex.',
    fix: 'Send the HMAC-SHA256 as lowercase hex: the same 64 characters, lower-cased.',
    senders: {
      zapier: "In the Code by Zapier step, return digest('hex') as it is, without toUpperCase().",
      make: 'Remove upper() from the mapping that fills the signature header.',
      n8n: "Remove .toUpperCase() from the expression that fills the signature header; the Crypto node's HEX output is lowercase.",
    },
  },
  base64_not_hex: {
    meaning: 'The right HMAC-SHA256, base64-encoded instead of hex.',
    fix: "Encode the HMAC-SHA256 as lowercase hex (64 characters), not base64: in Node.js or a Pipedream code step, digest('hex').",
    senders: {
      zapier: "In the Code by Zapier step, use digest('hex') instead of digest('base64').",
      make: 'Ask the signing function for hex, not base64 encoding.',
      n8n: 'In the Crypto node (Action Hmac, Type SHA256), set Encoding to HEX instead of BASE64.',
    },
  },
  prefix_sha256: {
    meaning: 'The right hex HMAC-SHA256 behind a `sha256=` prefix.',
    fix: 'Send the lowercase hex digest alone, without the `sha256=` prefix.',
  },
  prefix_v1: {
    meaning: 'The right HMAC-SHA256 behind a `v1,` or `v1=` prefix.',
    fix: 'Send the lowercase hex digest alone: no `v1,` or `v1=` prefix (this is not a Standard Webhooks or Stripe-style header) and hex, not base64.',
  },
  body_reserialized_compact: {
    meaning: 'An HMAC of the body as compact JSON, while the body sent is laid out otherwise.',
    fix: 'Sign the exact bytes you send: the signature is of the compact JSON, the body sent is laid out differently. Serialise once and sign and send that same string.',
    senders: RAW_BODY,
  },
  body_reserialized_pretty: {
    meaning: 'An HMAC of the body as indented JSON (2 or 4 spaces), while the body sent is laid out otherwise.',
    fix: 'Sign the exact bytes you send: the signature is of indented JSON, the body sent is laid out differently. Serialise once and sign and send that same string.',
    senders: RAW_BODY,
  },
  body_trailing_newline: {
    meaning: 'An HMAC of the body with a trailing newline added or removed.',
    fix: "Sign the exact bytes you send: a trailing newline was added or removed between signing and sending (echo adds one; use printf '%s').",
    senders: RAW_BODY,
  },
  previous_secret: {
    meaning: "Signed (or sent) with the endpoint's previous secret, after its rotation overlap ended.",
    fix: "Use the endpoint's current secret (setup state shows its last four characters); the previous one stopped working when the rotation's overlap ended.",
    senders: NEW_SECRET,
  },
  secret_not_signature: {
    meaning: 'The endpoint secret itself, where an HMAC-SHA256 signature is expected.',
    fix: 'This endpoint expects the lowercase hex HMAC-SHA256 of the body keyed with the secret, not the secret itself; a sender that cannot sign needs an endpoint with static_header auth.',
    senders: {
      zapier: 'Zapier sends a static header without a Code step: create an endpoint with senderProfile zapier (static_header auth) instead.',
      make: 'Make sends a static header without a signing step: create an endpoint with senderProfile make (static_header auth) instead.',
      n8n: 'n8n sends a static header without a Crypto node: create an endpoint with senderProfile n8n (static_header auth) instead.',
    },
  },
  signature_not_token: {
    meaning: 'An HMAC-SHA256 of the body, where the static token is expected.',
    fix: 'This endpoint checks a static token: send the endpoint secret itself as the header value, not a signature.',
  },
  bearer_prefix: {
    meaning: 'The static token behind a `Bearer ` prefix.',
    fix: 'Send the token alone as the header value, without `Bearer `.',
  },
};

/** The code and its fix for `profile`: the preset's own fix where it has one, else the generic line. */
export function diagnosisFor(code: DiagnosisCode, profile: string | null): { code: DiagnosisCode; fix: string } {
  const d = DIAGNOSES[code];
  const own = profile && profile !== 'custom_http' ? d.senders?.[profile as Preset] : undefined;
  return { code, fix: own ?? d.fix };
}

/** Whether a stored auth_failures.diagnosis is a code this version knows (a newer one may have written another). */
export function isDiagnosisCode(v: unknown): v is DiagnosisCode {
  return typeof v === 'string' && (DIAGNOSIS_CODES as readonly string[]).includes(v);
}

/**
 * Bodies up to this size are re-serialised (compact, indented, newline toggled) and signed again to find the one
 * the sender signed; larger ones, or a body that is not JSON, are checked only as they came.
 */
export const FORENSICS_MAX_RESERIALIZE_BYTES = 64 * 1024;
