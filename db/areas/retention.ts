/**
 * Retention of every kind of row but raw bodies and Idempotency-Keys (HandoffQueue.sweepExpired), written once for
 * both dialects over the thin runner: events that ended and their attempts, audit rows, intents that ended,
 * requests, failed authentications, and the OAuth server's requests, codes and tokens. Each kind goes in batches of
 * at most `limit` rows, each batch its own short transaction, so a sweep never holds the write lock long enough to
 * stall ingest. Times are cut by id where ids sort by creation (the caller passes `<prefix>_<time>` floors: see
 * src/lib/ids.ts idFloor), so each batch reads the primary key's oldest end; the OAuth rows, keyed by random ids and
 * hashes, by their expiry index. An event still waiting for its handoff is never swept, whatever its age.
 */
import { marks, type SqlRunner } from '../runner.ts';
import { PENDING_OUTCOMES } from '../types.ts';

/** What to sweep: everything older than these, and how many rows of each kind at most in this pass. */
export interface RetentionCut {
  /** Events received before this id (`evt_<time>`) that ended, with their attempts. */
  eventsBeforeId: string;
  /** Audit rows before this id (`aud_<time>`). */
  auditBeforeId: string;
  /** Intents created before this id (`int_<time>`) and ended (or never executed) before `intentsEndedBefore`. */
  intentsBeforeId: string;
  intentsEndedBefore: number;
  /** Support, feature, expansion and customer data requests created before this time; diagnostics shares once expired. */
  requestsBefore: number;
  /** Failed authentications whose last one (`at`) is before this time. */
  authFailuresBefore: number;
  now: number;
  limit: number;
}

export type RetentionSwept = Record<
  'events' | 'attempts' | 'audit' | 'intents' | 'requests' | 'authFailures' | 'oauthRequests' | 'oauthCodes' | 'oauthTokens',
  number
>;

/**
 * How long the OAuth server's rows outlive their expiry (a revoked token's is its revocation): a code or refresh token presented
 * again within it is still recognised as a reuse. A refresh token expires with its grant, so a live grant's current
 * refresh token, and the used ones a thief could replay, stay as long as the grant does.
 */
const OAUTH_KEEP_MS = 24 * 3600_000;

const PENDING = PENDING_OUTCOMES.map((o) => `'${o}'`).join(', ');

/** Retention of the kinds above (Repo.sweepRetention). */
export function retentionStore(sql: SqlRunner): { sweepRetention(cut: RetentionCut): Promise<RetentionSwept> } {
  return { sweepRetention: (cut) => sweepRetention(sql, cut) };
}

/** One pass over every kind. A kind that filled its batch has more waiting: the caller comes back sooner. */
async function sweepRetention(sql: SqlRunner, cut: RetentionCut): Promise<RetentionSwept> {
  const swept: RetentionSwept = { events: 0, attempts: 0, audit: 0, intents: 0, requests: 0, authFailures: 0, oauthRequests: 0, oauthCodes: 0, oauthTokens: 0 };

  const ended = await sql.all<{ id: string }>(`SELECT id FROM events WHERE id < ? AND outcome NOT IN (${PENDING}) ORDER BY id LIMIT ?`, [
    cut.eventsBeforeId,
    cut.limit,
  ]);
  if (ended.length) {
    const ids = ended.map((e) => e.id);
    const out = await sql.batch([
      { sql: `DELETE FROM attempts WHERE event_id IN (${marks(ids.length)})`, params: ids },
      // Outcome checked again: an event replayed since the select is waiting again, and stays.
      { sql: `DELETE FROM events WHERE id IN (${marks(ids.length)}) AND outcome NOT IN (${PENDING})`, params: ids },
    ]);
    if (out.ok) [swept.attempts, swept.events] = out.changes as [number, number];
  }

  swept.audit = await deleteOldest(sql, 'audit_log', 'id < ?', [cut.auditBeforeId], cut.limit);
  swept.intents = await deleteOldest(
    sql,
    'intents',
    "id < ? AND state <> 'executing' AND updated_at < ?",
    [cut.intentsBeforeId, cut.intentsEndedBefore],
    cut.limit,
  );
  swept.requests = await deleteOldest(
    sql,
    'records',
    "(kind <> 'diagnostics_share' AND created_at < ?) OR (kind = 'diagnostics_share' AND expires_at IS NOT NULL AND expires_at < ?)",
    [cut.requestsBefore, cut.now],
    cut.limit,
  );
  swept.authFailures = await deleteOldest(sql, 'auth_failures', 'at < ?', [cut.authFailuresBefore], cut.limit);

  const oauthCut = cut.now - OAUTH_KEEP_MS;
  swept.oauthRequests = await deleteOldest(sql, 'oauth_requests', 'expires_at < ?', [oauthCut], cut.limit, { key: 'id', order: 'expires_at' });
  swept.oauthCodes = await deleteOldest(sql, 'oauth_codes', 'expires_at < ?', [oauthCut], cut.limit, { key: 'code_hash', order: 'expires_at' });
  // A revoked token's expiry is its revocation (db/areas/oauth.ts): expiry alone says when it goes.
  swept.oauthTokens = await deleteOldest(sql, 'oauth_tokens', 'expires_at < ?', [oauthCut], cut.limit, { key: 'token_hash', order: 'expires_at' });
  return swept;
}

/** Deletes at most `limit` rows of `table` matching `where`, oldest first (by `order`, ids by default), in one statement. */
function deleteOldest(sql: SqlRunner, table: string, where: string, params: unknown[], limit: number, by = { key: 'id', order: 'id' }): Promise<number> {
  return sql.run(`DELETE FROM ${table} WHERE ${by.key} IN (SELECT ${by.key} FROM ${table} WHERE ${where} ORDER BY ${by.order} LIMIT ?)`, [...params, limit]);
}
