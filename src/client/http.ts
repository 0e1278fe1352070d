/**
 * A typed HTTP client for the Agent Operations contract. Inputs are validated against the operation's zod
 * schemas before anything is sent; answers that are not a success become a ClientError carrying the CLI exit
 * code. The token lives in a private field: it is sent only in the Authorization header, to the base URL's
 * origin, and never logged, printed or included in an error.
 */
import type { z } from 'zod';
import { AppError, EXIT, type Refusal } from '../contract/errors.ts';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../contract/limits.ts';
import type { Operation, OperationId, OperationOutput, operations } from '../contract/operations.ts';
import { CLI_USER_AGENT_PREFIX } from '../contract/scopes.ts';
import { VERSION } from '../version.ts';
import { EXPECTED_FIELDS, type ExpectedContext } from './config.ts';
import { ClientError, exitCodeFor, type RateLimitInfo } from './errors.ts';
import { fetchFor, type ClientFetch } from './http1.ts';

export interface ClientOptions {
  /** `http(s)://host[:port][/prefix]`, no trailing slash. */
  baseUrl: string;
  /** The agent grant token; null for public calls only. */
  token?: string | null;
  /** Sent as the X-Service-Expected-* headers on every grant-authenticated call. */
  expected?: ExpectedContext;
  timeoutMs?: number;
  /** How requests go out; default: fetchFor(baseUrl). */
  fetch?: ClientFetch;
}

export interface Envelope<T> {
  edition: { platformKey: string; editionKey: string; name: string };
  scope: { storeId: string; shopDomain: string; grantId: string | null; scopes: string[] } | null;
  actor: { kind: string; grantId: string | null; label: string } | null;
  refusal: Refusal | null;
  data: T;
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  body: T;
  /** The server's Date header, for clock-skew checks. */
  date: Date | null;
  /** Local time (ms) halfway between sending and the answer. */
  localMidpoint: number;
}

export interface SendInput {
  params?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  idempotencyKey?: string;
  /** Leave the expected-context headers off (doctor compares them itself). */
  withoutExpectedContext?: boolean;
}

type Data<K extends OperationId> = OperationOutput<K>;
type Body<K extends OperationId> = K extends keyof typeof operations
  ? (typeof operations)[K] extends { envelope: false }
    ? Data<K>
    : Envelope<Data<K>>
  : never;

const IDEMPOTENCY_KEY = new RegExp(`^[\\x21-\\x7e]{1,${IDEMPOTENCY_KEY_MAX_LENGTH}}$`);

export class HookrelayClient {
  readonly baseUrl: string;
  readonly expected: ExpectedContext;
  readonly timeoutMs: number;
  readonly #token: string | null;
  readonly #fetch: ClientFetch;

  constructor(opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#token = opts.token ?? null;
    this.expected = opts.expected ?? {};
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.#fetch = opts.fetch ?? fetchFor(this.baseUrl);
  }

  /** Calls one operation by its operationId. The contract loads on first use: `status` and `docs` never need it. */
  async call<K extends OperationId>(id: K, input: SendInput = {}): Promise<ApiResponse<Body<K>>> {
    const { operations } = await import('../contract/operations.ts');
    return this.send(operations[id] as Operation, input) as Promise<ApiResponse<Body<K>>>;
  }

  /**
   * Checks the input (checkInput: invalid_input, exit 2, before any request), then sends it. The body goes as the
   * caller wrote it; the server applies its own defaults.
   */
  async send(op: Operation, input: SendInput = {}): Promise<ApiResponse<unknown>> {
    const { query } = checkInput(op, input);
    const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(input.params?.[name] ?? ''));
    const qs = new URLSearchParams(query).toString();
    // The audit's `surface` is `cli` for this User-Agent (self-declared, like any User-Agent).
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': `${CLI_USER_AGENT_PREFIX}${VERSION}` };
    if (op.auth !== 'none') {
      if (this.#token === null) throw new AppError('unauthorized', `${op.operationId} needs a grant token.`);
      headers.authorization = `Bearer ${this.#token}`;
      if (!input.withoutExpectedContext) {
        for (const f of EXPECTED_FIELDS) {
          const v = this.expected[f.key];
          if (v !== undefined) headers[f.header] = v;
        }
      }
    }
    if (input.idempotencyKey !== undefined) headers['idempotency-key'] = input.idempotencyKey;
    let body: string | undefined;
    if (input.body !== undefined) {
      body = JSON.stringify(input.body);
      headers['content-type'] = 'application/json';
    }
    const res = await this.#exchange(op.method, `${path}${qs ? `?${qs}` : ''}`, headers, body);
    return this.#parse(res);
  }

  /** GET of a public path (status, docs, OpenAPI): no Authorization header. Non-2xx answers are returned, not thrown. */
  async getPublic(path: string): Promise<ApiResponse<string> & { contentType: string }> {
    const res = await this.#exchange('GET', path, { accept: 'application/json, text/html;q=0.9' });
    const text = await readText(res.response);
    return {
      status: res.response.status,
      headers: res.response.headers,
      body: text,
      date: parseDate(res.response.headers.get('date')),
      localMidpoint: res.localMidpoint,
      contentType: res.response.headers.get('content-type') ?? '',
    };
  }

  async #exchange(method: string, path: string, headers: Record<string, string>, body?: string) {
    const url = `${this.baseUrl}${path}`;
    const started = Date.now();
    let response: Response;
    try {
      response = await this.#fetch(url, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw unreachable(this.baseUrl, err, this.timeoutMs);
    }
    return { response, localMidpoint: Math.round((started + Date.now()) / 2) };
  }

  async #parse(res: { response: Response; localMidpoint: number }): Promise<ApiResponse<unknown>> {
    const { response } = res;
    const text = await readText(response);
    let json: unknown;
    let parsed = false;
    try {
      json = text === '' ? null : JSON.parse(text);
      parsed = text !== '';
    } catch {}
    const date = parseDate(response.headers.get('date'));
    if (response.status >= 200 && response.status < 300) {
      if (!parsed) {
        throw new ClientError(
          'invalid_response',
          `The server answered ${response.status} without a JSON body; is ${this.baseUrl} a hookrelay server?`,
          EXIT.error,
          {
            status: response.status,
          },
        );
      }
      return { status: response.status, headers: response.headers, body: json, date, localMidpoint: res.localMidpoint };
    }
    throw errorFromAnswer(response.status, response.headers.get('retry-after'), parsed ? json : null, this.baseUrl);
  }
}

/** A call's input as its operation's schemas parse it (each part undefined where the operation has none). */
export interface CheckedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

/**
 * Checks a call's params, query, body and idempotency key against its operation before anything is sent:
 * invalid_input (exit 2) naming the first offending field, never its value. Returns the query as it is sent
 * (strings) and each part as the schemas parse it, defaults applied: what the server's validation makes of it,
 * so an in-process caller (code mode) hands `parsed` on as the call's one validation.
 */
export function checkInput(op: Operation, input: SendInput): { query: Record<string, string>; parsed: CheckedInput } {
  const params = check(op.params, input.params ?? {}, 'path');
  const query = Object.fromEntries(
    Object.entries(input.query ?? {})
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  );
  if (!op.query && Object.keys(query).length) throw new AppError('invalid_input', `${op.operationId} takes no query parameters.`);
  const parsedQuery = check(op.query, query, 'query');
  if (input.body !== undefined && !op.body) throw new AppError('invalid_input', `${op.operationId} takes no request body.`);
  // No body is an empty one: the server reads `{}` (a POST), as the schema then sees it.
  const body =
    op.body && (input.body !== undefined || (op.method === 'POST' && op.transport === undefined)) ? check(op.body, input.body ?? {}, 'body') : undefined;
  if (input.idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(input.idempotencyKey)) {
    throw new AppError('invalid_input', `The idempotency key must be 1-${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters without spaces.`);
  }
  return { query, parsed: { params, query: parsedQuery, body } };
}

/** `value` parsed by `schema` (undefined without one); invalid_input naming the offending fields, never their values. */
function check(schema: z.ZodType | undefined, value: unknown, where: string): unknown {
  if (!schema) return undefined;
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  // Issues without the offending values: an input may hold something private.
  const details = r.error.issues.map((i) => ({ path: [where, ...i.path.map(String)].join('.'), code: i.code, message: i.message }));
  const first = details[0];
  throw new AppError('invalid_input', first ? `Invalid ${first.path}: ${first.message}` : `Invalid ${where}.`, details);
}

async function readText(res: Response): Promise<string> {
  try {
    return await res.text();
  } catch (err) {
    throw new ClientError('unreachable', `The connection broke while reading the answer (${errorName(err)}).`, EXIT.unreachable, { status: res.status });
  }
}

function parseDate(v: string | null): Date | null {
  if (!v) return null;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d;
}

function errorName(err: unknown): string {
  if (err && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    const name = (err as { name?: unknown }).name;
    if (typeof name === 'string') return name;
  }
  return 'error';
}

function unreachable(baseUrl: string, err: unknown, timeoutMs: number): ClientError {
  const name = errorName(err);
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new ClientError('timeout', `No answer from ${baseUrl} within ${timeoutMs / 1000} s.`, EXIT.unreachable, {
      status: null,
      hint: 'Check the server is healthy, or raise --timeout.',
    });
  }
  return new ClientError('unreachable', `Could not reach ${baseUrl} (${name}).`, EXIT.unreachable, {
    status: null,
    hint: 'Is hookrelay serve running there? Check --base-url, HOOKRELAY_BASE_URL or the profile baseUrl.',
  });
}

/**
 * An error answer (its status, Retry-After header and JSON body, null when it had none) as a ClientError: the
 * envelope's error, refusal and rate-limit guidance. `source` names who answered, for an answer with no message.
 */
export function errorFromAnswer(status: number, retryAfter: string | null, json: unknown, source: string): ClientError {
  const body = (json && typeof json === 'object' ? json : {}) as Record<string, unknown>;
  const err = (body.error && typeof body.error === 'object' ? body.error : typeof body.code === 'string' ? body : {}) as Record<string, unknown>;
  const code = typeof err.code === 'string' ? err.code : `http_${status}`;
  const message =
    typeof err.message === 'string' ? err.message : `The server answered HTTP ${status}${json === null ? ' without a JSON body' : ''} (${source}).`;
  let rateLimit: RateLimitInfo | undefined;
  if (status === 429) {
    const header = Number(retryAfter);
    const fromBody = typeof body.retryAfterSeconds === 'number' ? body.retryAfterSeconds : NaN;
    const retryAfterSeconds = Math.max(1, Math.ceil(Number.isFinite(fromBody) ? fromBody : Number.isFinite(header) ? header : 1));
    rateLimit = {
      retryAfterSeconds,
      resetAt: typeof body.resetAt === 'string' ? body.resetAt : undefined,
      rateLimitClass: typeof body.rateLimitClass === 'string' ? body.rateLimitClass : undefined,
      scope: typeof body.scope === 'string' ? body.scope : undefined,
      recommendedAction: typeof body.recommendedAction === 'string' ? body.recommendedAction : undefined,
    };
  }
  return new ClientError(code, message, exitCodeFor(status, typeof err.code === 'string' ? err.code : undefined), {
    status,
    supportCode: typeof err.supportCode === 'string' ? err.supportCode : undefined,
    details: err.details,
    refusal: (body.refusal as Refusal | null | undefined) ?? null,
    rateLimit,
  });
}
