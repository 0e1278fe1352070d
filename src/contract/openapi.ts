/** OpenAPI 3.1.0 generated from the contract table with z.toJSONSchema. Nothing here is written by hand per operation. */
import { z } from 'zod';
import { ERROR_CODES } from './errors.ts';
import { EXPECTED_CONTEXT_HEADERS } from './context.ts';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from './limits.ts';
import { OPERATIONS, type Operation } from './operations.ts';
import {
  ActorSchema,
  EditionSchema,
  EnvelopeScopeSchema,
  McpUnavailableSchema,
  PublicStatusSchema,
  RateLimitedResponseSchema,
  ErrorEnvelopeSchema,
} from './schemas.ts';
import { OPENAPI_VERSION, SCHEMA_VERSION } from './scopes.ts';

type Json = Record<string, unknown>;

const pascal = (s: string) => s[0]!.toUpperCase() + s.slice(1);
const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** Success envelopes, one per enveloped operation, registered once at load. */
const ENVELOPES = new Map<string, string>();
for (const op of OPERATIONS) {
  if (!op.envelope) continue;
  const id = `${pascal(op.operationId)}Response`;
  z.object({ edition: EditionSchema, scope: EnvelopeScopeSchema, actor: ActorSchema, refusal: z.null(), data: op.response }).meta({
    id,
    description: `Envelope of ${op.operationId}.`,
  });
  ENVELOPES.set(op.operationId, id);
}
void ErrorEnvelopeSchema;
void RateLimitedResponseSchema;
void McpUnavailableSchema;

function strip(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

function componentSchemas(): Record<string, Json> {
  const opts = { uri: (id: string) => `#/components/schemas/${id}`, unrepresentable: 'any' as const };
  const out = z.toJSONSchema(z.globalRegistry, { ...opts, io: 'output' }).schemas as Record<string, Json>;
  const inp = z.toJSONSchema(z.globalRegistry, { ...opts, io: 'input' }).schemas as Record<string, Json>;
  const all: Record<string, Json> = {};
  for (const id of Object.keys(out).sort()) {
    all[id] = strip(/(Input|Request)$/.test(id) ? inp[id]! : out[id]!);
  }
  return all;
}

function idOf(schema: z.ZodType): string | undefined {
  return (z.globalRegistry.get(schema) as { id?: string } | undefined)?.id;
}

function parameters(op: Operation): Json[] {
  const list: Json[] = [];
  for (const [where, obj] of [
    ['path', op.params],
    ['query', op.query],
  ] as const) {
    if (!obj) continue;
    for (const [name, schema] of Object.entries(obj.shape as Record<string, z.ZodType>)) {
      const js = strip(z.toJSONSchema(schema, { io: 'input' }) as Json);
      const { description, ...rest } = js;
      list.push({
        name,
        in: where,
        required: where === 'path' || !schema.safeParse(undefined).success,
        description: (description as string | undefined) ?? name,
        schema: rest,
      });
    }
  }
  if (op.auth === 'grant') for (const h of EXPECTED_CONTEXT_HEADERS) list.push({ $ref: `#/components/parameters/${h.replaceAll('-', '')}` });
  if (op.idempotency !== 'none') list.push({ $ref: '#/components/parameters/IdempotencyKey' });
  return list;
}

function errorResponses(op: Operation): Record<string, Json> {
  const err = (description: string) => ({ description, content: { 'application/json': { schema: ref('ErrorResponse') } } });
  const r: Record<string, Json> = {};
  if (op.params || op.query || op.body) r['400'] = err('Invalid input (`invalid_input`; details list the issues)');
  if (op.auth === 'grant') {
    r['401'] = {
      ...err('Missing, malformed, unknown, expired or revoked grant (`unauthorized`)'),
      headers: { 'WWW-Authenticate': { schema: { type: 'string' } } },
    };
    r['403'] = err('`insufficient_scope`, `agent_context_mismatch` or `action_refused`; `refusal` says why');
  }
  if (op.params || op.effect === 'preview_or_execute') r['404'] = err('Unknown id, or an id of another store (`not_found`)');
  if (op.effect === 'preview_or_execute') {
    r['402'] = err('Plan capacity exhausted (`plan_capacity_exhausted`; `refusal` category usage)');
    r['409'] = err('Intent not in a state that allows this step; confirmation expired or reused (`conflict`; `refusal` says which, category target_state)');
    r['422'] = err('Same Idempotency-Key with a different request (`idempotency_key_reused`; `refusal` category safety)');
  }
  if (op.body) {
    r['413'] = err('Body over 1 MiB (`payload_too_large`)');
    r['415'] = err('Body is not application/json (`unsupported_media_type`)');
  }
  if (op.rateLimitClass) {
    r['429'] = {
      description: 'Rate limited: wait Retry-After seconds (`rate_limited`; `refusal` category usage)',
      headers: { 'Retry-After': { description: 'Seconds to wait (integer, at least 1)', schema: { type: 'integer', minimum: 1 } } },
      content: { 'application/json': { schema: ref('RateLimitedResponse') } },
    };
  }
  r['500'] = err('Unexpected failure (`internal_error`); quote the support code');
  return r;
}

/** The answers an operation declares itself (`responses` in the table), as they are. */
function declaredResponses(declared: NonNullable<Operation['responses']>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [status, r] of Object.entries(declared)) {
    const id = r.body && idOf(r.body);
    if (r.body && !id) throw new Error(`The ${status} answer declares a body schema without an id (.meta({ id }))`);
    out[status] = {
      description: r.description,
      ...(r.headers ? { headers: r.headers } : {}),
      ...(id ? { content: { 'application/json': { schema: ref(id) } } } : {}),
    };
  }
  return out;
}

/** The answers that follow from the other fields of an operation that declares none. */
function derivedResponses(op: Operation): Record<string, Json> {
  const success: Json = { description: op.summary };
  const schemaId = op.envelope ? ENVELOPES.get(op.operationId)! : idOf(op.response)!;
  success.content = { 'application/json': { schema: ref(schemaId) } };
  const responses: Record<string, Json> = { [String(op.successStatus)]: success };
  if (op.effect === 'preview_or_execute') {
    responses['201'] = { ...success, description: 'Previewed: the intent with its single-use confirmation (nothing changed)' };
    responses['200'] = { ...success, description: 'Executed (or an idempotent replay of the stored response, header Idempotent-Replayed: true)' };
  }
  return Object.assign(responses, errorResponses(op));
}

function operationObject(op: Operation): Json {
  const responses = op.responses ? declaredResponses(op.responses) : derivedResponses(op);
  const o: Json = {
    operationId: op.operationId,
    summary: op.summary,
    description: op.description,
    tags: [op.tag],
    security: op.auth === 'grant' ? [{ agentBearerAuth: [] }] : [],
    'x-scopes': [...op.scopes],
    'x-effect': op.effect,
    'x-confirmation': op.confirmation,
    'x-rate-limit-class': op.rateLimitClass,
    ...(op.extension ? { 'x-extension': true } : {}),
    responses,
  };
  const params = parameters(op);
  if (params.length) o.parameters = params;
  if (op.body) {
    o.requestBody = {
      required: op.bodyRequired,
      content: { 'application/json': { schema: ref(idOf(op.body)!) } },
    };
  }
  return o;
}

/** The whole document. `serverUrl` is the public base URL of this deployment. */
export function buildOpenApi(serverUrl = 'http://127.0.0.1:8787'): Json {
  const paths: Record<string, Json> = {};
  for (const op of OPERATIONS) (paths[op.path] ??= {})[op.method.toLowerCase()] = operationObject(op);
  paths['/status'] = {
    get: {
      operationId: 'getPublicStatus',
      summary: 'Public aggregate status',
      description: 'Unauthenticated, unmetered and not tenant-specific (the CLI `status` command).',
      tags: ['Discovery'],
      security: [],
      responses: {
        '200': { description: 'Aggregate status', content: { 'application/json': { schema: ref(idOf(PublicStatusSchema)!) } } },
        '503': { description: 'The service is degraded', content: { 'application/json': { schema: ref(idOf(PublicStatusSchema)!) } } },
      },
    },
  };
  const headerParams = Object.fromEntries(
    EXPECTED_CONTEXT_HEADERS.map((h) => [
      h.replaceAll('-', ''),
      { name: h, in: 'header', required: false, description: `403 agent_context_mismatch when the grant's context differs`, schema: { type: 'string' } },
    ]),
  );
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'hookrelay Agent Operations API',
      version: SCHEMA_VERSION,
      summary: 'The machine-access contract for scoped agents that set up, inspect and recover a hookrelay event relay.',
      description:
        'One contract reached over HTTP, the JSON-first CLI and remote MCP. Every grant-authenticated response is an envelope of edition, scope, actor, refusal and data (or error).',
      license: { name: 'Proprietary', identifier: 'LicenseRef-hookrelay' },
      'x-error-codes': Object.fromEntries(Object.entries(ERROR_CODES).map(([k, v]) => [k, v.status])),
    },
    servers: [{ url: serverUrl.replace(/\/+$/, ''), description: 'This deployment' }],
    tags: [...new Set(OPERATIONS.map((o) => o.tag))].map((name) => ({ name, description: `${name} operations` })),
    paths,
    components: {
      securitySchemes: {
        agentBearerAuth: { type: 'http', scheme: 'bearer', description: 'A merchant-authorised, store-scoped, time-bounded agent grant token.' },
      },
      parameters: {
        ...headerParams,
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Required on execute steps. The same key with the same request returns the stored response for 24 h.',
          schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH },
        },
      },
      schemas: componentSchemas(),
    },
  };
}
