/**
 * The steps every grant-authenticated operation passes, once: bearer grant, expected-context headers, scopes,
 * input validation, handler, envelope, error mapping. Handlers only see validated input and a typed context.
 */
import type { z } from 'zod';
import { AppError, refuse } from '../contract/errors.ts';
import type { Operation } from '../contract/operations.ts';
import type { Scope } from '../contract/scopes.ts';
import type { Core } from '../core.ts';
import type { OpContext } from '../ops/context.ts';
import { authenticateBearer } from '../ops/grants.ts';
import { envelope, errorResponse, invalidInput, newSupportCode } from './http.ts';

export type AnyHandler = (ctx: OpContext, input: { params: unknown; query: unknown; body: unknown }) => Promise<unknown>;

export interface PipelineDeps {
  core: Core;
  endpointChanged(id: string): void;
}

const MAX_API_BODY = 1024 * 1024;

/** The four optional headers, each checked against the grant's store. */
const EXPECTED_CONTEXT = [
  ['x-service-expected-platform-key', 'platformKey', 'platform'],
  ['x-service-expected-platform-account-id', 'platformAccountId', 'platform account'],
  ['x-service-expected-shop-domain', 'shopDomain', 'store'],
  ['x-service-expected-installation-id', 'installationId', 'installation'],
] as const;

export async function runOperation(
  deps: PipelineDeps,
  op: Operation,
  handler: AnyHandler,
  req: Request,
  params: Record<string, string>,
  requestId: string,
): Promise<Response> {
  let ctx: OpContext | null = null;
  try {
    const { grant, store } = await authenticateBearer(deps.core, req.headers.get('authorization'));
    const scopes = JSON.parse(grant.scopes) as Scope[];
    ctx = {
      core: deps.core,
      store,
      grant,
      scopes,
      actor: { kind: 'agent', grantId: grant.id, label: grant.label },
      requestId,
      endpointChanged: deps.endpointChanged,
    };

    for (const [header, field, what] of EXPECTED_CONTEXT) {
      const expected = req.headers.get(header);
      if (expected !== null && expected !== store[field]) {
        throw new AppError('agent_context_mismatch', `The grant belongs to a different ${what} than ${header} expects.`, { header });
      }
    }

    const missing = op.scopes.filter((s) => !scopes.includes(s));
    if (missing.length) {
      throw refuse(
        {
          category: 'scope',
          code: 'missing_scope',
          reason: `${op.operationId} needs ${missing.join(', ')}, which this grant does not hold.`,
          recommendedAction: 'Ask the merchant for a grant whose tier includes these scopes.',
        },
        { missingScopes: missing, requiredScopes: op.scopes },
      );
    }

    const input = {
      params: op.params ? parse(op.params, params, 'path') : undefined,
      query: op.query ? parse(op.query, Object.fromEntries(new URL(req.url).searchParams), 'query') : undefined,
      body: op.body ? parse(op.body, await readJsonBody(req), 'body') : undefined,
    };
    const data = await handler(ctx, input);
    return envelope(ctx, data, op.successStatus);
  } catch (err) {
    if (err instanceof AppError) return errorResponse(ctx, err);
    const supportCode = newSupportCode();
    deps.core.log.error(`internal error in ${op.operationId} request=${requestId} support=${supportCode}: ${describe(err)}`);
    return errorResponse(ctx, new AppError('internal_error', 'Something went wrong on our side. Quote the support code.'), supportCode);
  }
}

function parse<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw invalidInput(where, r.error);
  return r.data;
}

/** The request body as JSON: `{}` when empty, 415 for another type, 413 past 1 MiB, 400 when malformed. */
export async function readJsonBody(req: Request): Promise<unknown> {
  const length = Number(req.headers.get('content-length') ?? '0');
  if (length > MAX_API_BODY) throw new AppError('payload_too_large', 'Request bodies are limited to 1 MiB.');
  const text = req.body ? await req.text() : '';
  if (text.length > MAX_API_BODY) throw new AppError('payload_too_large', 'Request bodies are limited to 1 MiB.');
  if (text.trim() === '') return {};
  const type = req.headers.get('content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) throw new AppError('unsupported_media_type', 'Send Content-Type: application/json.');
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('invalid_input', 'The body is not valid JSON.', [{ path: 'body', code: 'invalid_json', message: 'Malformed JSON' }]);
  }
}

/** An error's class and first line, with anything after `params:` dropped (drivers echo bound values there). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return 'non-error thrown';
  const first = (err.message.split('\n')[0] ?? '').split(/params:/i)[0]!.slice(0, 200);
  return `${err.name}: ${first}`;
}
