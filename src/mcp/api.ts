/**
 * `api.call` and `api.request` of code mode. Each call is a Request to the app's own fetch, in process, with
 * the caller's Authorization and expected-context headers: bearer auth, scopes, rate limits, idempotency,
 * metering, audit and redaction are exactly the HTTP ones. Only contract operations under /agent/v1 are
 * reachable; the MCP transport, /hooks and every other path are refused before anything is sent.
 */
import { z } from 'zod';
import { AppError } from '../contract/errors.ts';
import { operations, type Operation, type OperationId } from '../contract/operations.ts';
import type { ExpectedContext } from '../client/config.ts';
import { ClientError } from '../client/errors.ts';
import { HookrelayClient, type SendInput } from '../client/http.ts';
import { matchOperation } from '../client/routes.ts';
import type { Host, HostAnswer } from './code-mode.ts';
import type { SandboxError } from './sandbox.ts';
import { markCodeMode } from './surface.ts';

/** In-process requests need a base; the app routes on the path alone. */
const IN_PROCESS_BASE = 'http://hookrelay.in-process';

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

export interface Caller {
  /** The bearer token of the MCP request that runs the code. */
  token: string;
  expected: ExpectedContext;
}

/** The host answering a run's `api.*` calls for `caller`, through `appFetch`. */
export function apiHost(appFetch: (req: Request) => Promise<Response>, caller: Caller): Host {
  const inProcess = ((url: string, init?: RequestInit) => appFetch(markCodeMode(new Request(url, init)))) as typeof fetch;
  const client = new HookrelayClient({ baseUrl: IN_PROCESS_BASE, token: caller.token, expected: caller.expected, fetch: inProcess });
  return async (raw): Promise<HostAnswer> => {
    let operationId: string | undefined;
    try {
      const { op, input } = resolve(raw);
      operationId = op.operationId;
      return { ok: true, value: (await client.send(op, input)).body };
    } catch (err) {
      return { ok: false, error: { ...facts(err), ...(operationId ? { operationId } : {}) } };
    }
  };
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
