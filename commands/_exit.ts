/** Endings other than success that carry their own JSON document and exit code (the entry prints them). */
import { ClientError } from '../src/client/errors.ts';
import { redactSecrets } from '../src/client/redact.ts';

/** Ends a command with `document` on stdout and a non-zero exit code (doctor with a failing check…). */
export class CommandExit extends Error {
  constructor(
    readonly document: unknown,
    readonly exitCode: number,
  ) {
    super(`exit ${exitCode}`);
    this.name = 'CommandExit';
  }
}

/** The document (secrets masked) and exit code of a CommandExit or a ClientError (a failed API call); else null. */
export function exitDocument(err: unknown): { document: unknown; exitCode: number } | null {
  if (err instanceof CommandExit) return { document: redactSecrets(err.document), exitCode: err.exitCode };
  if (err instanceof ClientError) return { document: redactSecrets(err.toJSON()), exitCode: err.exitCode };
  return null;
}
