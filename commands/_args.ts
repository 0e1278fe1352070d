/** Arg fragments shared by commands, and the one parser of `--since`/`--until`. */
import { AppError } from '../src/contract/errors.ts';
import { parseDuration } from '../src/contract/durations.ts';
import { DEFAULT_PLAN, PLANS } from '../src/contract/plans.ts';

/** The plans, for --plan's help: unlimited (nothing capped or held) is a self-hosted box's default. */
export const PLAN_NAMES = `${Object.keys(PLANS).join(' | ')} (init's default: ${DEFAULT_PLAN}, nothing capped or held)`;

const dataDirArg = {
  'data-dir': { type: 'string', description: 'Data directory (env HOOKRELAY_DATA_DIR; default $XDG_DATA_HOME/hookrelay or ~/.local/share/hookrelay)' },
} as const;

/** Where admin commands and serve keep their data: flag > HOOKRELAY_DATABASE_URL > SQLite in the data directory. */
export const storageArgs = {
  ...dataDirArg,
  'database-url': {
    type: 'string',
    description: 'PostgreSQL URL postgres://… (env HOOKRELAY_DATABASE_URL, preferred: a flag shows in ps; default SQLite in the data directory). Never printed',
  },
} as const;

/** Who runs an admin command that changes something, for its audit row (src/ops/human-audit.ts). */
export const actorArg = {
  actor: { type: 'string', description: 'Who runs this, for the audit log: a name or login, up to 64 printable characters (default: OS user@host)' },
} as const;

/** How a store's Admin API token is had (init, store set): the mode and the NAMES of the variables it reads. */
export const credentialArgs = {
  auth: { type: 'string', description: 'client-credentials (an app of your organization: tokens requested and renewed) | static (a token in a variable)' },
  'client-id': { type: 'string', description: "The app's client id (Dev Dashboard → the app → Settings), for --auth client-credentials" },
  'client-secret-env': {
    type: 'string',
    description: "NAME of the env variable holding the app's client secret (never the secret), for --auth client-credentials",
  },
  'admin-token-env': { type: 'string', description: 'NAME of the env variable holding a static Admin API token (never the token), for --auth static' },
} as const;

/** The expected-context flags, sent as the X-Service-Expected-* headers (also saved by `profile add`). */
export const expectArgs = {
  'expect-platform-key': { type: 'string', description: 'Sent as X-Service-Expected-Platform-Key' },
  'expect-platform-account-id': { type: 'string', description: 'Sent as X-Service-Expected-Platform-Account-Id' },
  'expect-shop-domain': { type: 'string', description: 'Sent as X-Service-Expected-Shop-Domain' },
  'expect-installation-id': { type: 'string', description: 'Sent as X-Service-Expected-Installation-Id' },
} as const;

/** How client commands reach a server: flag > environment > profile (see README, "Client commands"). */
export const connectionArgs = {
  'base-url': { type: 'string', description: 'Server base URL (env HOOKRELAY_BASE_URL; default http://127.0.0.1:8787)' },
  profile: { type: 'string', description: 'Profile name in $XDG_CONFIG_HOME/hookrelay/profiles.json (env HOOKRELAY_PROFILE)' },
  'token-env': { type: 'string', description: 'NAME of the env variable holding the grant token (default HOOKRELAY_TOKEN)' },
  ...expectArgs,
  timeout: { type: 'string', description: 'Seconds to wait for an answer (default 30)' },
  quiet: { type: 'boolean', description: 'No log lines on stderr' },
} as const;

export const jsonFileArg = {
  json: { type: 'string', description: 'File with the JSON request (- for stdin)' },
} as const;

export const idempotencyKeyArg = {
  'idempotency-key': { type: 'string', description: 'Idempotency-Key header; reuse it to retry safely' },
} as const;

/** How `--since` reads everywhere (events, audit): a duration back from now or an RFC 3339 time. */
export const SINCE_HELP = 'a duration back from now (30m, 1h, 24h, 7d) or an RFC 3339 time';

/** `--since`/`--until` to epoch ms: `1h` is one hour before `now`; else an RFC 3339 time. invalid_input (exit 2) otherwise. */
export function parseSince(text: string, now: number, flag = '--since'): number {
  const ago = parseDuration(text);
  if (ago != null) return now - ago;
  const at = /^\d{4}-\d{2}-\d{2}T/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) throw new AppError('invalid_input', `${flag} takes ${SINCE_HELP}; got ${JSON.stringify(text)}.`);
  return at;
}
