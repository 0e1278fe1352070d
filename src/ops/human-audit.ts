/**
 * The audit rows of the local admin commands (init, grant issue and revoke, plan set, store set, migrate, backup,
 * restore): the actor is a person (`actorKind: human`), named by `--actor` or the OS user and host. Never inputs
 * or secrets.
 */
import { readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import type { AuditLog, TenantStore } from '../../db/repo.ts';
import { looksLikeToken } from '../client/config.ts';
import { AppError, ERROR_CODES } from '../contract/errors.ts';
import type { Core } from '../core.ts';
import { systemClock } from '../lib/clock.ts';
import { createIdGenerator } from '../lib/ids.ts';

/** What an admin command is recorded as: the ops function it runs, as agent rows name their operationId. */
export type AdminOperation =
  | 'initStore'
  | 'issueGrant'
  | 'revokeGrant'
  | 'denyAuthorization'
  | 'issueConsoleLink'
  | 'signInConsole'
  | 'signOutConsole'
  | 'issueMetricsToken'
  | 'revokeMetricsToken'
  | 'setPlan'
  | 'setStoreSettings'
  | 'migrate'
  | 'backup'
  | 'restore';

/** The longest `--actor`: a name or login, not a note. */
const ACTOR_MAX_LENGTH = 64;

/** Where a person acted: an admin command (`cli`), or a page of the merchant's seat (its face). */
export type AdminSurface = 'cli' | 'console' | 'embedded';

/** What a successful run adds to its row: the store it touched (null: box-wide), its target, what changed. */
export interface AdminAuditFacts {
  storeId: string | null;
  targetId?: string | null;
  /** A short summary of the change, e.g. `plan unlimited -> growth`: names and kinds only, never a value of a secret. */
  transition?: string | null;
}

/** What writing a row takes: a Core, or adminAuditDeps over a storage handle opened without one (migrate). */
export type AuditDeps = Pick<Core, 'clock' | 'ids'> & { repo: AuditLog };

/** The audit log of a storage handle a command opened itself, on the system clock. */
export const adminAuditDeps = (repo: AuditLog): AuditDeps => ({ repo, clock: systemClock, ids: createIdGenerator() });

/** Control characters, line and paragraph separators, and bidirectional overrides: nothing that could forge a line. */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

/**
 * The person an admin command is attributed to: `--actor` when given (trimmed, 1 to 64 printable characters,
 * nothing shaped like a token or a URL with a password; refused unechoed), else `user@host` of this process.
 */
export function humanActor(flag: string | undefined): string {
  if (flag === undefined) return defaultActor();
  const actor = flag.trim();
  if (actor.length === 0 || actor.length > ACTOR_MAX_LENGTH || UNPRINTABLE.test(actor)) {
    throw new AppError('invalid_input', `--actor must be 1 to ${ACTOR_MAX_LENGTH} printable characters: who ran the command, e.g. jane@ops-laptop.`);
  }
  // Word by word: a name with spaces may be long and mixed-case; one long mixed-case word is a token's shape.
  if (actor.split(/\s+/).some((w) => looksLikeToken(w) || /^shp(at|ca|pa|ss)_/i.test(w)) || /:\/\/[^/\s]*@/.test(actor)) {
    throw new AppError(
      'invalid_input',
      '--actor looks like a credential; name the person who runs the command (e.g. jane@ops-laptop), never a token or a URL.',
    );
  }
  return actor;
}

function defaultActor(): string {
  const user = osUser() || process.env.USER || process.env.LOGNAME || 'unknown';
  return `${user}@${hostname() || 'localhost'}`.replace(new RegExp(UNPRINTABLE.source, 'gu'), '').slice(0, ACTOR_MAX_LENGTH);
}

/** This process's login name: Bun's userInfo() answers `unknown` where Node reads the passwd entry, so that is read too. */
function osUser(): string | null {
  try {
    const name = userInfo().username;
    if (name && name !== 'unknown') return name;
  } catch {
    // No passwd entry for this uid (some containers).
  }
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.split(':')[2] === String(uid));
    return line?.split(':')[0] || null;
  } catch {
    return null;
  }
}

/**
 * Runs one admin action and writes its one audit row: `ok` with the facts `describe` reads from the result, or
 * `error` (`refused` for a code with a refusal, as the pipeline writes) with the error's code and the store
 * `storeOnError` finds, before the error goes on. A row that cannot be written after a failure does not hide it.
 */
export async function auditAdmin<T>(
  core: AuditDeps,
  actor: string,
  operationId: AdminOperation,
  run: () => Promise<T>,
  describe: (result: T) => AdminAuditFacts | Promise<AdminAuditFacts>,
  storeOnError: () => Promise<string | null> = async () => null,
  surface: AdminSurface = 'cli',
): Promise<T> {
  let result: T;
  try {
    result = await run();
  } catch (err) {
    const failure = err instanceof AppError ? err : new AppError('internal_error', 'internal error');
    await storeOnError()
      .catch(() => null)
      .then((storeId) => writeRow(core, actor, operationId, { storeId }, failure, surface))
      .catch(() => {});
    throw err;
  }
  await writeRow(core, actor, operationId, await describe(result), null, surface);
  return result;
}

/**
 * The row of an action already done (migrate: the audit log exists only once its migrations are applied; a console
 * sign-in or sign-out, with its face and request id).
 */
export function recordAdminAction(
  core: AuditDeps,
  actor: string,
  operationId: AdminOperation,
  facts: AdminAuditFacts,
  surface: AdminSurface = 'cli',
  requestId: string | null = null,
): Promise<void> {
  return writeRow(core, actor, operationId, facts, null, surface, requestId);
}

/** The id of the store with this shop domain, or null: for the row of an action that failed. */
export async function storeIdOf(core: { repo: Pick<TenantStore, 'getStoreByShop'> }, shopDomain: string | undefined): Promise<string | null> {
  if (!shopDomain) return null;
  return (await core.repo.getStoreByShop(shopDomain.trim().toLowerCase()))?.id ?? null;
}

/** The row, filled as the agent pipeline fills its own (src/server/steps/audit.ts `audit`), the actor a person. */
async function writeRow(
  core: AuditDeps,
  actor: string,
  operationId: AdminOperation,
  facts: AdminAuditFacts,
  err: AppError | null,
  surface: AdminSurface = 'cli',
  requestId: string | null = null,
): Promise<void> {
  await core.repo.insertAudit({
    id: core.ids.next('aud'),
    at: core.clock.now(),
    storeId: facts.storeId,
    grantId: null,
    actorKind: 'human',
    actorLabel: actor,
    operationId,
    scopes: '[]',
    targetId: facts.targetId ?? null,
    intentId: null,
    transition: facts.transition ?? null,
    outcome: err ? (err.refusal ? 'refused' : 'error') : 'ok',
    status: err ? ERROR_CODES[err.code].status : 200,
    errorCode: err?.code ?? null,
    refusalCategory: err?.refusal?.category ?? null,
    refusalCode: err?.refusal?.code ?? null,
    requestId,
    surface,
  });
}
