/**
 * hookrelay as an OAuth 2.1 authorization server (src/oauth/), written once for both dialects over the thin runner:
 * authorization requests pending a person's decision, authorization codes and access and refresh tokens. Codes and
 * tokens are stored as their SHA-256 only; every state change is a compare-and-set, so of two uses of one code or
 * one refresh token exactly one wins and the other is seen as a reuse. Rows past their time go with the retention sweep
 * (db/areas/retention.ts).
 */
import { first, tableRows, type SqlRunner } from '../runner.ts';
import * as s from '../sqlite/schema.ts';

export type OAuthRequestRow = typeof s.oauthRequests.$inferSelect;
export type OAuthCodeRow = typeof s.oauthCodes.$inferSelect;
export type OAuthTokenRow = typeof s.oauthTokens.$inferSelect;

/** Requests, codes and tokens of the authorization server (Repo.oauth). */
export type OAuthStore = ReturnType<typeof oauthStore>;

const requests = tableRows<OAuthRequestRow>(s.oauthRequests);
const codes = tableRows<OAuthCodeRow>(s.oauthCodes);
const tokens = tableRows<OAuthTokenRow>(s.oauthTokens);

/** What a use of a single-use row found: the row, and whether this use was its first. */
export interface Use<T> {
  row: T;
  firstUse: boolean;
}

export function oauthStore(sql: SqlRunner) {
  const requestBy = (column: 'id' | 'user_code', value: string) =>
    first<OAuthRequestRow>(sql, `SELECT ${requests.select} FROM oauth_requests WHERE ${column} = ?`, [value]);
  /**
   * Revokes the tokens whose `column` is `value` at `now`, their expiry brought forward to it (a token already revoked
   * keeps its first time): a revoked token is checked as revoked before its expiry, and the retention sweep reads
   * expiry alone (its index) to drop it a day later.
   */
  const revokeWhere = (column: 'family_id' | 'grant_id', value: string, now: number) =>
    sql.run(
      `UPDATE oauth_tokens SET revoked_at = ?, expires_at = CASE WHEN expires_at > ? THEN ? ELSE expires_at END WHERE ${column} = ? AND revoked_at IS NULL`,
      [now, now, now, value],
    );
  const insert = async (q: { sql: string; params: unknown[] }) => {
    await sql.run(q.sql, q.params);
  };
  return {
    /** Records a pending request (the retention sweep drops it a day after it expires: db/areas/retention.ts). */
    addRequest: (row: OAuthRequestRow) => insert(requests.insert(row)),

    requestById: (id: string) => requestBy('id', id),
    requestByUserCode: (userCode: string) => requestBy('user_code', userCode),

    /**
     * A pending, unexpired request decided at `now`: approved with its grant and store, or denied, and given until
     * `expiresAt` for its browser to continue. False when it was no longer pending (decided by another, expired).
     */
    async decideRequest(
      id: string,
      now: number,
      decision: { status: 'approved' | 'denied'; grantId: string | null; storeId: string; expiresAt: number },
    ): Promise<boolean> {
      const changed = await sql.run(
        "UPDATE oauth_requests SET status = ?, grant_id = ?, store_id = ?, expires_at = ? WHERE id = ? AND status = 'pending' AND expires_at > ?",
        [decision.status, decision.grantId, decision.storeId, decision.expiresAt, id, now],
      );
      return changed === 1;
    },

    /** An approved request's redirect taken: true once, for the one caller that mints its code. */
    async finishRequest(id: string): Promise<boolean> {
      return (await sql.run("UPDATE oauth_requests SET status = 'finished' WHERE id = ? AND status = 'approved'", [id])) === 1;
    },

    addCode: (row: OAuthCodeRow) => insert(codes.insert(row)),

    codeByHash: (codeHash: string) => first<OAuthCodeRow>(sql, `SELECT ${codes.select} FROM oauth_codes WHERE code_hash = ?`, [codeHash]),

    /** Spends a code at `now`, once it is verified: true for the one caller that used it first, false when it was used. */
    async spendCode(codeHash: string, now: number): Promise<boolean> {
      return (await sql.run('UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL', [now, codeHash])) === 1;
    },

    /** Records issued tokens (an access and a refresh token of one family), in one transaction. */
    async addTokens(rows: OAuthTokenRow[]): Promise<void> {
      const outcome = await sql.batch(rows.map((r) => tokens.insert(r)));
      if (!outcome.ok) throw new Error('oauth tokens not recorded');
    },

    tokenByHash: (tokenHash: string) => first<OAuthTokenRow>(sql, `SELECT ${tokens.select} FROM oauth_tokens WHERE token_hash = ?`, [tokenHash]),

    /** Rotates a refresh token at `now`: the row and whether this was its first use; null when unknown. */
    async useRefresh(tokenHash: string, now: number): Promise<Use<OAuthTokenRow> | null> {
      const changed = await sql.run("UPDATE oauth_tokens SET used_at = ? WHERE token_hash = ? AND kind = 'refresh' AND used_at IS NULL", [now, tokenHash]);
      const row = await first<OAuthTokenRow>(sql, `SELECT ${tokens.select} FROM oauth_tokens WHERE token_hash = ?`, [tokenHash]);
      return row && { row, firstUse: changed === 1 };
    },

    /** Revokes every token of a family (one code's exchange and its rotations): the rows it changed. */
    revokeFamily: (familyId: string, now: number) => revokeWhere('family_id', familyId, now),

    /** Revokes every token of a grant (the grant revoked). */
    revokeGrantTokens: (grantId: string, now: number) => revokeWhere('grant_id', grantId, now),
  };
}
