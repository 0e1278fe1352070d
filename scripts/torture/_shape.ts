/**
 * Judges an answer against what the served OpenAPI document says it may be: the envelope with a code from its
 * error table (`info.x-error-codes`), the inbound `{code, message}` shape, or the operation's documented schema.
 * Read from the running binary's own document, never from src/, so the suite checks what clients are told.
 */

export interface Answer {
  status: number;
  contentType: string;
  text: string;
}

export interface Contract {
  doc: any;
  /** code -> HTTP status, the documented error table. */
  errorCodes: Record<string, number>;
}

export function contractOf(doc: any): Contract {
  const errorCodes = doc?.info?.['x-error-codes'];
  if (!errorCodes || typeof errorCodes !== 'object') throw new Error('the OpenAPI document has no info.x-error-codes table');
  return { doc, errorCodes };
}

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function typeMatches(t: string, v: unknown): boolean {
  if (t === 'integer') return typeof v === 'number' && Number.isInteger(v);
  return typeOf(v) === t;
}

/**
 * The first way `value` breaks `schema` (a JSON Schema of the subset OpenAPI 3.1 documents here), or null.
 * `$ref`s resolve inside `doc`.
 */
function validate(doc: any, schema: any, value: unknown, at = '$'): string | null {
  if (schema === true || schema === undefined || (typeof schema === 'object' && Object.keys(schema).length === 0)) return null;
  if (schema === false) return `${at}: not allowed`;
  if (schema.$ref) {
    const target = String(schema.$ref)
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: any, k: string) => o?.[k], doc);
    if (!target) return `${at}: unresolvable $ref ${schema.$ref}`;
    return validate(doc, target, value, at);
  }
  if (schema.allOf)
    for (const s of schema.allOf) {
      const e = validate(doc, s, value, at);
      if (e) return e;
    }
  if (schema.anyOf && !schema.anyOf.some((s: any) => validate(doc, s, value, at) === null)) {
    return `${at}: matches none of anyOf (${validate(doc, schema.anyOf[0], value, at)})`;
  }
  if (schema.oneOf) {
    const ok = schema.oneOf.filter((s: any) => validate(doc, s, value, at) === null).length;
    if (ok !== 1) return `${at}: matches ${ok} of oneOf`;
  }
  if ('const' in schema && value !== schema.const) return `${at}: expected ${JSON.stringify(schema.const)}`;
  if (schema.enum && !schema.enum.includes(value)) return `${at}: ${JSON.stringify(value)} not in enum`;
  if (schema.type) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => typeMatches(t, value))) return `${at}: expected ${types.join('|')}, got ${typeOf(value)}`;
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) return `${at}: shorter than ${schema.minLength}`;
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return `${at}: longer than ${schema.maxLength}`;
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value)) return `${at}: does not match ${schema.pattern}`;
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return `${at}: below ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${at}: above ${schema.maximum}`;
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return `${at}: more than ${schema.maxItems} items`;
    if (schema.minItems !== undefined && value.length < schema.minItems) return `${at}: fewer than ${schema.minItems} items`;
    if (schema.items)
      for (let i = 0; i < value.length; i++) {
        const e = validate(doc, schema.items, value[i], `${at}[${i}]`);
        if (e) return e;
      }
  }
  if (typeOf(value) === 'object') {
    const obj = value as Record<string, unknown>;
    for (const k of schema.required ?? []) if (!(k in obj)) return `${at}: missing ${k}`;
    const props = schema.properties ?? {};
    for (const [k, v] of Object.entries(obj)) {
      if (k in props) {
        const e = validate(doc, props[k], v, `${at}.${k}`);
        if (e) return e;
      } else if (schema.additionalProperties === false) {
        return `${at}: unexpected property ${k}`;
      } else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        const e = validate(doc, schema.additionalProperties, v, `${at}.${k}`);
        if (e) return e;
      }
    }
  }
  return null;
}

const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Inbound replies (DESIGN "Inbound reply"): not in the OpenAPI, which covers the Agent API only. */
const INBOUND_ACCEPTED = {
  type: 'object',
  properties: { receiptId: { type: 'string' }, eventId: { type: 'string' }, status: { type: 'string' }, duplicateOf: { type: 'string' } },
  required: ['receiptId', 'eventId', 'status'],
  additionalProperties: false,
};
const INBOUND_EXTRA_KEYS = new Set(['receiptId', 'eventId', 'status', 'duplicateOf']);

/** Where an answer came from: an Agent API operation (by its OpenAPI path and method), /hooks/*, or the MCP transport. */
export type Surface = { kind: 'api'; path: string; method: string } | { kind: 'hooks' } | { kind: 'mcp' } | { kind: 'unknown_path' };

/** Why the error body is not a documented error shape, or null when it is one. */
function judgeError(c: Contract, a: Answer, body: any, surface: Surface): string | null {
  if (typeOf(body) !== 'object') return `HTTP ${a.status}: JSON ${typeOf(body)}, not an error object`;
  const codeOk = (code: unknown, where: string) => {
    if (typeof code !== 'string') return `HTTP ${a.status}: ${where} is not a string`;
    if (code in c.errorCodes) {
      return c.errorCodes[code] === a.status ? null : `HTTP ${a.status}: ${where} ${code} is documented as ${c.errorCodes[code]}`;
    }
    return `HTTP ${a.status}: ${where} ${JSON.stringify(code).slice(0, 60)} is not in the documented error table`;
  };
  if ('edition' in body && 'error' in body) {
    const e = codeOk(body.error?.code, 'error.code');
    if (e) return e;
    const problem = validate(c.doc, schemaRef(a.status === 429 ? 'RateLimitedResponse' : 'ErrorResponse'), body);
    return problem ? `HTTP ${a.status} ${body.error.code}: ${problem}` : null;
  }
  if (surface.kind === 'mcp' && body.jsonrpc === '2.0') {
    const problem = validate(c.doc, schemaRef('McpJsonRpcResponse'), body);
    return problem ? `HTTP ${a.status} JSON-RPC: ${problem}` : null;
  }
  if (typeof body.message === 'string' && 'code' in body) {
    // An inbound 429 also says when to retry (README: `{code: "rate_limited", message, retryAfterSeconds}`).
    // An inbound 401 may name the sender's usual mistake (README "Signature forensics"): the SignatureDiagnosis component.
    const diagnosed = surface.kind === 'hooks' && a.status === 401 && 'diagnosis' in body;
    const extra = Object.keys(body).filter(
      (k) =>
        k !== 'code' && k !== 'message' && !INBOUND_EXTRA_KEYS.has(k) && !(a.status === 429 && k === 'retryAfterSeconds') && !(diagnosed && k === 'diagnosis'),
    );
    if (extra.length) return `HTTP ${a.status}: {code, message} with undocumented ${extra.join(', ')}`;
    const diagnosis = diagnosed ? validate(c.doc, schemaRef('SignatureDiagnosis'), body.diagnosis) : null;
    if (diagnosis) return `HTTP ${a.status} diagnosis: ${diagnosis}`;
    if (typeof body.code === 'string' && /^SVC_[A-Z_]+$/.test(body.code)) return null;
    return codeOk(body.code, 'code');
  }
  return `HTTP ${a.status}: neither the envelope nor {code, message} (keys ${Object.keys(body).slice(0, 6).join(', ')})`;
}

/** Why the answer is not a documented shape, or null when it is one. */
export function judge(c: Contract, surface: Surface, a: Answer): string | null {
  const emptyOk = surface.kind === 'mcp' && a.status === 202 && a.text === '';
  if (emptyOk) return null;
  if (surface.kind === 'mcp' && a.status === 200 && /^text\/event-stream/i.test(a.contentType)) return null;
  let body: unknown;
  try {
    body = JSON.parse(a.text);
  } catch {
    return `HTTP ${a.status}: not JSON (${a.contentType || 'no content-type'}, ${a.text.length} bytes${a.text ? `: ${JSON.stringify(a.text.slice(0, 40))}` : ''})`;
  }
  if (a.status >= 400) return judgeError(c, a, body, surface);
  if (surface.kind === 'hooks') {
    const problem = a.status === 202 ? validate(c.doc, INBOUND_ACCEPTED, body) : `undocumented inbound status ${a.status}`;
    return problem ? `HTTP ${a.status} inbound: ${problem}` : null;
  }
  if (surface.kind === 'mcp') {
    const problem = validate(c.doc, schemaRef('McpJsonRpcResponse'), body);
    return problem ? `HTTP ${a.status} JSON-RPC: ${problem}` : null;
  }
  if (surface.kind === 'unknown_path') return `HTTP ${a.status} on a path the contract does not have`;
  const response = c.doc.paths?.[surface.path]?.[surface.method.toLowerCase()]?.responses?.[String(a.status)];
  if (!response) return `HTTP ${a.status} is not a documented answer of ${surface.method} ${surface.path}`;
  const schema = response.content?.['application/json']?.schema;
  if (!schema) return `HTTP ${a.status} of ${surface.method} ${surface.path} documents no body`;
  const problem = validate(c.doc, schema, body);
  return problem ? `HTTP ${a.status} ${surface.method} ${surface.path}: ${problem}` : null;
}
