/** Maps a concrete METHOD + path onto the contract table, for the CLI's advanced `request` command. */
import { AppError } from '../contract/errors.ts';
import { OPERATIONS, pathMatcher, type Operation } from '../contract/operations.ts';
import { API_PREFIX } from '../contract/scopes.ts';

export interface MatchedOperation {
  op: Operation;
  /** Path parameters, decoded. */
  params: Record<string, string>;
  /** Query parameters as given (strings). */
  query: Record<string, string>;
}

const PROBE = 'http://hookrelay.invalid';

const PATTERNS = OPERATIONS.map((op) => ({ op, ...pathMatcher(op.path) }));

/**
 * The contract operation a request targets. Refuses (invalid_input, exit 2) anything that is not a contract
 * operation under /agent/v1: absolute URLs (the token must never go to another origin), dot segments, the
 * inbound /hooks path, public pages, the MCP transport, unknown paths and a method the operation does not take.
 */
export function matchOperation(method: string, rawPath: string): MatchedOperation {
  const m = method.toUpperCase();
  if (!rawPath.startsWith('/') || rawPath.startsWith('//')) {
    throw new AppError('invalid_input', `The path must start with ${API_PREFIX}/ (no scheme or host): the base URL comes from your configuration.`);
  }
  let url: URL;
  try {
    url = new URL(rawPath, PROBE);
  } catch {
    throw new AppError('invalid_input', 'The path is not a valid URL path.');
  }
  const pathOnly = rawPath.split(/[?#]/)[0]!;
  if (url.origin !== PROBE || url.pathname !== pathOnly || /(^|\/)\.\.?(\/|$)|%2e/i.test(pathOnly)) {
    throw new AppError('invalid_input', 'The path must be a plain, percent-encoded path: no dot segments or encoded dots.');
  }
  const path = url.pathname;
  if (!path.startsWith(`${API_PREFIX}/`)) {
    throw new AppError('invalid_input', `request only calls contract operations under ${API_PREFIX}/; ${path} is outside it.`);
  }
  let methodMismatch: Operation | null = null;
  for (const { op, re, names } of PATTERNS) {
    const hit = re.exec(path);
    if (!hit) continue;
    if (op.transport === 'mcp') {
      throw new AppError('invalid_input', `${op.path} is the MCP transport; connect with an MCP client instead.`);
    }
    if (op.method !== m) {
      methodMismatch = op;
      continue;
    }
    const params: Record<string, string> = {};
    names.forEach((n, i) => {
      try {
        params[n] = decodeURIComponent(hit[i + 1]!);
      } catch {
        throw new AppError('invalid_input', `The ${n} in the path is not valid percent-encoding.`);
      }
    });
    return { op, params, query: Object.fromEntries(url.searchParams) };
  }
  if (methodMismatch) {
    throw new AppError('invalid_input', `${methodMismatch.operationId} takes ${methodMismatch.method}, not ${m}.`);
  }
  throw new AppError('invalid_input', `${path} is not an operation of the contract; GET ${API_PREFIX}/manifest lists them.`);
}
