/**
 * The self-hosted console's sign-in links and sessions (src/seat/session.ts), written once for both dialects over
 * the thin runner: only SHA-256 hashes of link and session tokens are stored, never a token.
 */
import type { SqlRunner } from '../runner.ts';

export interface ConsoleSessionRow {
  tokenHash: string;
  id: string;
  storeId: string;
  actor: string;
  createdAt: number;
  expiresAt: number;
  endedAt: number | null;
}

/** Links and sessions of the console (Repo.console). */
export type ConsoleStore = ReturnType<typeof consoleStore>;

const KEEP_MS = 24 * 3600_000;

export function consoleStore(sql: SqlRunner) {
  /** Drops the rows of `table` that expired more than KEEP_MS before `now`. */
  const prune = (table: 'console_links' | 'console_sessions', now: number) => sql.run(`DELETE FROM ${table} WHERE expires_at < ?`, [now - KEEP_MS]);
  return {
    /** Records a new sign-in link (its token's hash), bound to the store and the person. */
    async addLink(link: { tokenHash: string; storeId: string; actor: string; createdAt: number; expiresAt: number }): Promise<void> {
      await prune('console_links', link.createdAt);
      await sql.run('INSERT INTO console_links (token_hash, store_id, actor, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, NULL)', [
        link.tokenHash,
        link.storeId,
        link.actor,
        link.createdAt,
        link.expiresAt,
      ]);
    },

    /**
     * Uses a link once: its store and person when it exists, is unused and unexpired at `now` (and is now used), else
     * null. Compare-and-set: of two sign-ins with one link, one gets it.
     */
    async useLink(tokenHash: string, now: number): Promise<{ storeId: string; actor: string } | null> {
      const changed = await sql.run('UPDATE console_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?', [now, tokenHash, now]);
      if (changed !== 1) return null;
      const rows = await sql.all<{ storeId: string; actor: string }>('SELECT store_id AS "storeId", actor FROM console_links WHERE token_hash = ?', [
        tokenHash,
      ]);
      return rows[0] ?? null;
    },

    async addSession(row: ConsoleSessionRow): Promise<void> {
      await prune('console_sessions', row.createdAt);
      await sql.run('INSERT INTO console_sessions (token_hash, id, store_id, actor, created_at, expires_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
        row.tokenHash,
        row.id,
        row.storeId,
        row.actor,
        row.createdAt,
        row.expiresAt,
        row.endedAt,
      ]);
    },

    /** The live session of a token's hash at `now` (not expired, not signed out), else null. */
    async liveSession(tokenHash: string, now: number): Promise<ConsoleSessionRow | null> {
      const [row] = await sql.all<ConsoleSessionRow>(
        `SELECT token_hash AS "tokenHash", id, store_id AS "storeId", actor, created_at AS "createdAt", expires_at AS "expiresAt", ended_at AS "endedAt"
           FROM console_sessions WHERE token_hash = ? AND ended_at IS NULL AND expires_at > ?`,
        [tokenHash, now],
      );
      return row ?? null;
    },

    /** Signs a session out: it is refused from now on. */
    async endSession(tokenHash: string, now: number): Promise<void> {
      await sql.run('UPDATE console_sessions SET ended_at = ? WHERE token_hash = ? AND ended_at IS NULL', [now, tokenHash]);
    },
  };
}
