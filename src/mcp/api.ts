/**
 * `api.call` and `api.request` of code mode: each call goes to the pipeline's `invoke` in process, as the grant the
 * MCP request already authenticated, with that request's expected-context headers and its request id. Scopes, rate
 * limits, idempotency, metering, audit and redaction are the pipeline's, as for any HTTP call; what is not done again
 * is the bearer lookup (once per MCP request), the HTTP round trip, and a second validation (the input is checked
 * here, once, as the CLI's client checks it, and handed on validated). Only contract operations under /agent/v1 are
 * reachable; the MCP transport, /hooks and every other path are refused before anything runs.
 *
 * A grant revoked or expired during a run still answers the rest of that run's calls; the next MCP request is
 * refused (pipeline.ts, `Call.principal`).
 */
import { z } from 'zod';
import { AppError, bodyTooLarge } from '../contract/errors.ts';
import { MAX_API_BODY_BYTES } from '../contract/limits.ts';
import { operations, pathMatcher, type Operation, type OperationId } from '../contract/operations.ts';
import { ClientError } from '../client/errors.ts';
import { checkInput, errorFromAnswer, type CheckedInput, type SendInput } from '../client/http.ts';
import { matchOperation } from '../client/routes.ts';
import { NO_CLIENT, type ClientOf } from '../lib/auth-failures.ts';
import type { AgentPrincipal } from '../ops/grants.ts';
import type { Host, HostAnswer } from './code-mode.ts';
import type { SandboxError } from './sandbox.ts';

const Query = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));
const SandboxRequestSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('call'),
    operationId: z.string().max(100),
    input: z
      .object({
        params: z.record(z.string(), z.string()).optional(),
        query: Query.optional(),
        body: z.unknown().optional(),
        idempotencyKey: z.string().optional(),
      })
      .strict(),
  }),
  z.object({
    kind: z.literal('request'),
    method: z.string().max(10),
    path: z.string().max(2000),
    body: z.unknown().optional(),
    options: z.object({ idempotencyKey: z.string().optional() }).strict(),
  }),
]);

/** What code mode hands invoke (src/server/pipeline.ts Call, the fields code mode sets). */
export interface CodeModeCall {
  principal: AgentPrincipal;
  expected: Headers;
  params: Record<string, string>;
  validated?: CheckedInput;
  readBody?: () => Promise<unknown>;
  idempotencyKey: string | null;
  requestId: string;
  client: ClientOf;
  surface: 'mcp';
}

/** The app's `invoke` as code mode sees it (MCP does not import src/server: it receives invoke from the app). */
export type CodeModeInvoke = (
  op: Operation,
  call: CodeModeCall,
) => Promise<{ status: number; body: Record<string, unknown>; headers?: Record<string, string> }>;

/** Who runs the code: what the MCP request that carries the `execute` call established. */
export interface Caller {
  /** The grant its bearer token authenticated, once for the whole request. */
  principal: AgentPrincipal;
  /** Its expected-context headers (X-Service-Expected-*), checked again on every call. */
  expected: Headers;
  /** Its request id: every call of the run, and the run's own audit row, carry it. */
  requestId: string;
}

/** Who answered, for an error answer without a message of its own (errorFromAnswer). */
const SOURCE = 'in process';

/** The host answering a run's `api.*` calls for `caller`, through `invoke`. */
export function apiHost(invoke: CodeModeInvoke, caller: Caller): Host {
  return async (raw): Promise<HostAnswer> => {
    let operationId: string | undefined;
    try {
      const { op, input } = resolve(raw);
      operationId = op.operationId;
      const answer = await invoke(op, callOf(op, input, caller));
      if (answer.status >= 200 && answer.status < 300) return { ok: true, value: answer.body };
      throw errorFromAnswer(answer.status, answer.headers?.['Retry-After'] ?? null, answer.body, SOURCE);
    } catch (err) {
      return { ok: false, error: { ...facts(err), ...(operationId ? { operationId } : {}) } };
    }
  };
}

/**
 * The pipeline call of `op` for `input`: checked and parsed here (invalid_input before anything runs, as the CLI's
 * client refuses it) and handed on validated, with the path parameters as the route would have matched them (they
 * name the audit row's target and key the idempotency hash). A body past the API's limit is refused where HTTP
 * refuses it: read once the call is authorized, and audited (413).
 */
function callOf(op: Operation, input: SendInput, caller: Caller): CodeModeCall {
  const { parsed } = checkInput(op, input);
  const oversize = input.body !== undefined && Buffer.byteLength(JSON.stringify(input.body)) > MAX_API_BODY_BYTES;
  return {
    principal: caller.principal,
    expected: caller.expected,
    params: Object.fromEntries(paramNames(op).map((n) => [n, input.params?.[n] ?? ''])),
    ...(oversize ? { readBody: () => Promise.reject(bodyTooLarge()) } : { validated: parsed }),
    idempotencyKey: input.idempotencyKey ?? null,
    requestId: caller.requestId,
    client: NO_CLIENT,
    surface: 'mcp',
  };
}

const names = new Map<Operation, string[]>();
/** The names of `op`'s path parameters, in order. */
function paramNames(op: Operation): string[] {
  let n = names.get(op);
  if (!n) names.set(op, (n = pathMatcher(op.path).names));
  return n;
}

/** The contract operation and input a sandbox request names. */
function resolve(raw: unknown): { op: Operation; input: SendInput } {
  const parsed = SandboxRequestSchema.safeParse(raw);
  if (!parsed.success) {
    throw new AppError(
      'invalid_input',
      'Use api.call(operationId, { params, query, body, idempotencyKey }) or api.request(method, path, body, { idempotencyKey }).',
    );
  }
  const r = parsed.data;
  if (r.kind === 'request') {
    const { op, params, query } = matchOperation(r.method, r.path);
    return { op, input: { params, query, body: r.body, idempotencyKey: r.options.idempotencyKey } };
  }
  if (!Object.hasOwn(operations, r.operationId))
    throw new AppError('invalid_input', `No operation ${r.operationId}; use the search tool to find operationIds.`);
  const op = operations[r.operationId as OperationId] as Operation;
  if (op.transport) throw new AppError('invalid_input', `${op.operationId} is the MCP transport itself; code mode cannot call it.`);
  const { params, query, body, idempotencyKey } = r.input;
  const stringQuery = query && Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)]));
  return { op, input: { params, query: stringQuery, body, idempotencyKey } };
}

/** A failed call as the agent code sees it (thrown there as an ApiError): code, message, status, refusal… */
function facts(err: unknown): SandboxError {
  if (err instanceof ClientError) {
    const { error, ...rest } = err.toJSON() as { error: SandboxError };
    return { ...error, ...rest };
  }
  if (err instanceof AppError) return { code: err.code, message: err.message, status: null, ...(err.details !== undefined ? { details: err.details } : {}) };
  return { code: 'internal_error', message: 'The call failed on our side.', status: null };
}
