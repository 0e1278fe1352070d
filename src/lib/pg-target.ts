/** What may be said about a PostgreSQL URL (database name and host, never credentials), and its connection errors. */
import { AppError } from '../contract/errors.ts';

export interface PgTarget {
  name: string;
  host: string;
  port: number;
}

/** The database name, host and port of a `postgres://` URL; never the user, password or query. */
export function pgTarget(url: string): PgTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The URL itself is never echoed: a malformed one may still hold a password.
    throw new AppError('invalid_input', 'HOOKRELAY_DATABASE_URL / --database-url is not a valid postgres:// URL.');
  }
  const host = parsed.searchParams.get('host') || decodeURIComponent(parsed.hostname) || 'localhost';
  const name = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || decodeURIComponent(parsed.username) || 'postgres';
  return { name, host: host.replace(/^\[|\]$/g, ''), port: Number(parsed.port || 5432) };
}

/** "PostgreSQL database hookrelay on db.internal:5432": the line serve, init and migrate print. */
export function describePg(url: string): string {
  const t = pgTarget(url);
  return `PostgreSQL database ${t.name} on ${t.host}:${t.port}`;
}

const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
};

/**
 * A failure to open the database as a stable AppError that names the database and host but never the URL:
 * driver messages can carry the connection string, so only the class of failure is kept.
 */
export function pgOpenError(err: unknown, url: string): AppError {
  if (err instanceof AppError) return err;
  const where = describePg(url);
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
  if (code === '3D000') return new AppError('not_found', `The ${where} does not exist: create it (createdb), then run hookrelay init or migrate.`);
  // A server's own error (permission denied, disk full) carries no connection string: its text helps and is kept.
  const server = typeof (err as { severity?: unknown })?.severity === 'string' && !code.startsWith('28') && !code.startsWith('08');
  if (server) return new AppError('storage_unavailable', `The ${where} answered: ${(err as Error).message} (SQLSTATE ${code}).`);
  const reason = UNREACHABLE[code] ?? (code.startsWith('28') ? 'the server refused the credentials' : code ? `error ${code}` : 'no connection');
  return new AppError(
    'storage_unavailable',
    `Cannot reach the database (${where}): ${reason}. Check HOOKRELAY_DATABASE_URL / --database-url and that PostgreSQL is up.`,
  );
}
