/** What the CLI may show of private material: the last four characters of a token, never more. */
import { mask, maskSecretsIn, redactDocument } from '../lib/redact.ts';

export { mask };

/**
 * A copy of `doc` with every `secret` field masked and every secret shape inside a string (tokens masked to their
 * last four, headers, database URLs and signatures labelled). Every command's output passes through this except
 * create-endpoint, the one that prints a secret.
 */
export function redactSecrets(doc: unknown): unknown {
  return redactDocument(doc, { text: maskSecretsIn, secretField: mask });
}
