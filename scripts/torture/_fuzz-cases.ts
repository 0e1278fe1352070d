/**
 * The fuzz cases, generated from the OpenAPI document and a seed before anything is sent (so a seed always
 * yields the same cases): every operation with odd params, queries, headers, bodies and content types, hostile
 * inbound requests, unknown paths, and raw-socket edges (duplicate headers, 64 KB headers, hang-ups).
 */
import { createHmac } from 'node:crypto';
import { operations, type Operation } from '../../src/contract/operations.ts';
import { sign } from '../bench/_lib.ts';
import type { Surface } from './_shape.ts';
import type { Rand } from './_rand.ts';

/** What the cases may point at: per store, a grant pool and real ids. */
export interface FuzzWorld {
  stores: {
    tokens: string[];
    endpointId: string;
    secret: string;
    eventId: string;
    intent: { id: string; confirmationToken: string } | null;
  }[];
  /** An observer grant of the first store (scope refusals). */
  observerToken: string;
}

export interface FuzzCase {
  /** What the case does, for the offender list. */
  label: string;
  surface: Surface;
  method: string;
  /** Path and query, raw (may hold malformed escapes on purpose). */
  target: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  /**
   * Sent over a raw socket: the request head (without the blank line); `hangUpAfter` cuts the body. `parser`:
   * malformed HTTP that Bun's own parser answers before hookrelay sees a request (reported apart).
   */
  raw?: { head: string; hangUpAfter?: number; parser?: boolean };
}

const enc = (s: string) => new TextEncoder().encode(s);
const MiB = 1024 * 1024;

const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  '\ud800',
  '\u202egnp.exe',
  '日本語のテキスト',
  '🙂'.repeat(500),
  '../../../etc/passwd',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as it is
  '${7*7}',
  '%00',
  'NaN',
  '-1',
  '1e309',
  '0x10',
  'null',
  'true',
  'evt_zzzzzzzzzzzzzzzzzzzzzzzzzz',
  'a\r\nX-Injected: 1',
  '\u001b[31mred\u001b[0m',
  'x'.repeat(10_000),
];
const HOSTILE_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  2 ** 53 + 1,
  [],
  {},
  [[[]]],
  { __proto__: { polluted: 1 } },
  { constructor: { prototype: { polluted: 1 } } },
  ...HOSTILE_STRINGS,
];
/** Path segments: malformed escapes, traversal, control bytes, huge. */
const HOSTILE_SEGMENTS = [
  '%ZZ',
  '%',
  '..%2f..%2fetc',
  '%00',
  '%F0%9F%92%A9',
  encodeURIComponent('日本'),
  `ep_${'a'.repeat(5000)}`,
  '.',
  '..',
  ' ',
  '%20',
  'null',
  '-1',
  '%E0%A4%A',
];
const CONTENT_TYPES = [
  'text/plain',
  'application/json; charset=utf-16',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/json, text/html',
  'APPLICATION/JSON',
  'application/jsonx',
  'application/merge-patch+json',
  '',
];
const BAD_JSON = [
  '{',
  '{"a":}',
  '{"a":1}garbage',
  '\ufeff{}',
  "{'a':1}",
  'NaN',
  '[1,]',
  '{"a":1,"a":2}',
  '"unterminated',
  '{"a":"\\x41"}',
  '\u0000',
  '[]]',
  '{"mode":"preview","input":{}',
  '1 2',
];
const BAD_AUTH = [
  '',
  'Bearer',
  'Bearer ',
  'Basic dXNlcjpwYXNz',
  'Bearer hrg_notarealtokenatall',
  `Bearer hrg_${'A'.repeat(5000)}`,
  'bearer  ',
  'Token abc',
  'Bearer hrg_\u00e9\u00e8',
];

function resolveRef(doc: any, schema: any): any {
  let s = schema;
  for (let i = 0; s?.$ref && i < 20; i++)
    s = String(s.$ref)
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: any, k: string) => o?.[k], doc);
  return s;
}

/** A value the schema accepts, as far as a generator without a regex engine can tell. */
function sample(doc: any, schema: any, r: Rand, depth = 0): unknown {
  const s = resolveRef(doc, schema);
  if (!s || depth > 8) return null;
  if (s.oneOf || s.anyOf) return sample(doc, r.pick(s.oneOf ?? s.anyOf), r, depth + 1);
  if ('const' in s) return s.const;
  if (s.enum) return r.pick(s.enum);
  const type = Array.isArray(s.type) ? (s.type.find((t: string) => t !== 'null') ?? 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(s.properties ?? {})) {
        if ((s.required ?? []).includes(k) || r.chance(0.5)) out[k] = sample(doc, v, r, depth + 1);
      }
      return out;
    }
    case 'array':
      return Array.from({ length: r.int(0, Math.min(2, s.maxItems ?? 2)) }, () => sample(doc, s.items, r, depth + 1));
    case 'integer':
    case 'number':
      return Math.max(s.minimum ?? 1, Math.min(s.maximum ?? 50, r.int(1, 50)));
    case 'boolean':
      return r.chance(0.5);
    case 'string': {
      const prefix = /^\^([a-z]+)_/.exec(s.pattern ?? '');
      if (prefix) return `${prefix[1]}_${r.chars(26)}`;
      if (s.pattern?.includes('\\.')) return r.pick(['order.id', 'customer.id', 'data.items.0.id']);
      const text = `torture ${r.chars(8)}`;
      return text.slice(0, s.maxLength ?? text.length).padEnd(s.minLength ?? 0, 'x');
    }
    case 'null':
      return null;
    default:
      return 'torture';
  }
}

function nest(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** A body for an operation: valid, mutated, malformed or oversized. Returns the bytes and what was done. */
function body(doc: any, schema: any, r: Rand, w: FuzzWorld, store: number): [Uint8Array, string] {
  const valid = () => sample(doc, schema, r) as any;
  const kind = r.pick([
    'valid',
    'valid',
    'drop-required',
    'wrong-type',
    'extra-prop',
    'huge-string',
    'deep-nesting',
    'bad-json',
    'non-object',
    'empty',
    'unicode',
    'proto',
    'invalid-utf8',
    'over-1MiB',
    'real-execute',
    'array-bomb',
  ] as const);
  const json = (v: unknown): [Uint8Array, string] => [enc(JSON.stringify(v)), kind];
  switch (kind) {
    case 'valid':
      return json(valid());
    case 'drop-required': {
      const v = valid();
      if (v && typeof v === 'object') delete v[r.pick(Object.keys(v).concat('x'))];
      return json(v);
    }
    case 'wrong-type': {
      const v = valid();
      if (v && typeof v === 'object' && Object.keys(v).length) v[r.pick(Object.keys(v))] = r.pick(HOSTILE_VALUES);
      return json(v);
    }
    case 'extra-prop':
      return json({ ...valid(), [r.pick(['extra', '__proto__', 'constructor', 'mode', '', 'x'.repeat(300)])]: r.pick(HOSTILE_VALUES) });
    case 'huge-string': {
      const v = valid();
      const key = v && typeof v === 'object' && Object.keys(v).length ? r.pick(Object.keys(v)) : 'reason';
      return json({ ...v, [key]: 'x'.repeat(r.pick([10_000, 200_000, 900_000])) });
    }
    case 'deep-nesting':
      return [enc(`{"mode":"preview","input":${nest(r.pick([100, 10_000, 200_000]))}}`), kind];
    case 'bad-json':
      return [enc(r.pick(BAD_JSON)), kind];
    case 'non-object':
      return json(r.pick([null, [], 1, 'str', true, [valid()]]));
    case 'empty':
      return [new Uint8Array(0), kind];
    case 'unicode': {
      const v = valid();
      for (const k of v && typeof v === 'object' ? Object.keys(v) : []) if (typeof v[k] === 'string') v[k] = r.pick(HOSTILE_STRINGS);
      return json(v);
    }
    case 'proto':
      return [enc(`{"__proto__":{"mode":"execute","admin":true},"constructor":{"prototype":{"x":1}},"mode":"preview","input":{}}`), kind];
    case 'invalid-utf8':
      return [new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d]), kind];
    case 'over-1MiB':
      return [enc(JSON.stringify({ mode: 'preview', input: { reason: 'x'.repeat(MiB + r.int(1, MiB)) } })), kind];
    case 'real-execute': {
      const intent = w.stores[store]!.intent;
      return json({ mode: 'execute', intentId: intent?.id ?? 'int_x', confirmationToken: r.chance(0.5) ? (intent?.confirmationToken ?? 'x') : 'cfm_wrong' });
    }
    case 'array-bomb':
      return [enc(`[${'{},'.repeat(200_000)}{}]`), kind];
  }
}

/** Percent-encodes a string; a lone surrogate becomes its (invalid) UTF-8 bytes, which is the point. */
function escapeAny(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
}

function hostileQueryValue(schema: any, r: Rand): string {
  const s = schema ?? {};
  if (s.type === 'integer') return r.pick(['abc', '-1', '0', '101', '1e3', '1.5', '', '9'.repeat(400), '%00', '0x10', ' 5']);
  if (s.format === 'date-time')
    return r.pick(['2026-13-45T99:99:99Z', 'yesterday', '0', '1h', '2026-01-01', `2026-01-01T00:00:00Z${'0'.repeat(500)}`, '+275760-09-13T00:00:00.000Z']);
  return r.pick([...HOSTILE_STRINGS.map(escapeAny), '%ZZ', '%', 'a&b=c', 'x'.repeat(300)]);
}

/** One case of an Agent API operation. */
function operationCase(doc: any, path: string, method: string, op: any, r: Rand, w: FuzzWorld): FuzzCase {
  const store = r.int(0, w.stores.length - 1);
  const st = w.stores[store]!;
  const other = w.stores[(store + 1) % w.stores.length]!;
  const notes: string[] = [];
  const headers: Record<string, string> = {};

  const auth = r.next();
  if (auth < 0.8) headers.authorization = `Bearer ${r.pick(st.tokens)}`;
  else if (auth < 0.85) notes.push('no-auth');
  else if (auth < 0.9) headers.authorization = `Bearer ${w.observerToken}`;
  else {
    headers.authorization = r.pick(BAD_AUTH);
    notes.push('bad-auth');
  }

  const params = (op.parameters ?? []).map((p: any) => resolveRef(doc, p));
  let target = path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const real = name === 'endpointId' ? st.endpointId : name === 'eventId' ? st.eventId : r.chars(10);
    const otherReal = name === 'endpointId' ? other.endpointId : other.eventId;
    const roll = r.next();
    if (roll < 0.6) return real;
    if (roll < 0.7) {
      notes.push(`${name}:other-store`);
      return otherReal;
    }
    notes.push(`${name}:hostile`);
    return r.pick(HOSTILE_SEGMENTS);
  });

  const query: string[] = [];
  for (const p of params.filter((p: any) => p.in === 'query')) {
    const roll = r.next();
    if (roll < 0.45) continue;
    if (roll < 0.75) query.push(`${p.name}=${encodeURIComponent(String(sample(doc, p.schema, r)))}`);
    else {
      query.push(`${p.name}=${hostileQueryValue(p.schema, r)}`);
      notes.push(`${p.name}:hostile`);
    }
  }
  if (r.chance(0.1)) query.push(`${r.pick(['unknown', 'limit', 'cursor', '__proto__', ''])}=${r.pick(['1', '2', '%ZZ', ''])}`);
  if (query.length) target += `?${query.join('&')}`;

  if (r.chance(0.1)) {
    const h = r.pick([
      'X-Service-Expected-Platform-Key',
      'X-Service-Expected-Platform-Account-Id',
      'X-Service-Expected-Shop-Domain',
      'X-Service-Expected-Installation-Id',
    ]);
    headers[h] = r.pick(['other', '', 'FUZZ-A.MYSHOPIFY.COM', 'x'.repeat(4000), 'shopify', ' ']);
    notes.push('expected-context');
  }
  if (r.chance(0.3)) headers['idempotency-key'] = r.pick(['k-1', '', ' ', 'k'.repeat(200), 'k'.repeat(201), 'k'.repeat(300), '\u00e9', `k-${r.chars(8)}`]);

  let m = method.toUpperCase();
  if (r.chance(0.05)) {
    m = r.pick(['PUT', 'DELETE', 'PATCH']);
    notes.push(`method:${m}`);
  }
  let bytes: Uint8Array | undefined;
  const schema = op.requestBody?.content?.['application/json']?.schema;
  if ((schema || r.chance(0.05)) && m !== 'GET') {
    const [b, kind] = body(doc, schema ?? { type: 'object' }, r, w, store);
    bytes = b;
    notes.push(`body:${kind}`);
    const ct = r.chance(0.8) ? 'application/json' : r.pick(CONTENT_TYPES);
    if (ct) headers['content-type'] = ct;
    if (ct !== 'application/json') notes.push(`ct:${ct || 'none'}`);
  }
  // The document's operation, asked of the contract table: is it the MCP transport?
  const mcp = (operations as Record<string, Operation>)[op.operationId]?.transport === 'mcp';
  if (mcp && r.chance(0.7)) headers.accept = 'application/json, text/event-stream';
  const surface: Surface = mcp ? { kind: 'mcp' } : { kind: 'api', path, method: m };
  return { label: `${m} ${op.operationId} ${notes.join(' ')}`.trim(), surface, method: m, target, headers, body: bytes };
}

/** One hostile inbound request to /hooks/*. */
function hookCase(r: Rand, w: FuzzWorld): FuzzCase {
  const st = r.pick(w.stores);
  const roll = r.next();
  const id = roll < 0.8 ? st.endpointId : roll < 0.9 ? `ep_${r.chars(26)}` : r.pick(HOSTILE_SEGMENTS);
  const kind = r.pick([
    'signed',
    'signed-hostile',
    'signed-deep',
    'signed-huge-number',
    'signed-invalid-utf8',
    'signed-over-1MiB',
    'no-signature',
    'bad-signature',
    'upper-hex',
    'prefixed',
    'wrong-ct',
    'empty',
    'method',
  ] as const);
  const doc = { event_type: 'torture.fuzz', external_event_id: `fuzz-${r.chars(12)}`, order: { id: r.int(1, 1e6) } };
  let body: Uint8Array = enc(JSON.stringify(doc));
  let method = 'POST';
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (kind === 'signed-hostile')
    body = enc(
      JSON.stringify({ ...doc, event_type: r.pick(HOSTILE_STRINGS), external_event_id: r.pick(HOSTILE_STRINGS), order: { id: r.pick(HOSTILE_VALUES) } }),
    );
  if (kind === 'signed-deep') body = enc(`{"event_type":"x","order":{"id":1},"deep":${nest(r.pick([1000, 100_000]))}}`);
  if (kind === 'signed-huge-number') body = enc(`{"event_type":"x","order":{"id":1${'9'.repeat(5000)}}}`);
  if (kind === 'signed-invalid-utf8') body = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
  if (kind === 'signed-over-1MiB') body = enc(JSON.stringify({ ...doc, pad: 'x'.repeat(MiB + r.int(1, 2 * MiB)) }));
  if (kind === 'empty') body = new Uint8Array(0);
  // Over the exact bytes, which may not be UTF-8 (bench's sign() takes text).
  const sig = createHmac('sha256', st.secret).update(body).digest('hex');
  if (kind.startsWith('signed') || kind === 'wrong-ct' || kind === 'empty' || kind === 'method') headers['x-hookrelay-signature'] = sig;
  if (kind === 'bad-signature') headers['x-hookrelay-signature'] = r.pick(['00'.repeat(32), 'zz', '', sig.slice(0, -1), 'x'.repeat(8000)]);
  if (kind === 'upper-hex') headers['x-hookrelay-signature'] = sig.toUpperCase();
  if (kind === 'prefixed') headers['x-hookrelay-signature'] = `sha256=${sig}`;
  if (kind === 'wrong-ct') headers['content-type'] = r.pick(CONTENT_TYPES);
  if (kind === 'method') method = r.pick(['GET', 'PUT', 'DELETE', 'PATCH']);
  return {
    label: `${method} /hooks ${kind}${id === st.endpointId ? '' : ' unknown-endpoint'}`,
    surface: { kind: 'hooks' },
    method,
    target: `/hooks/${id}`,
    headers,
    body: method === 'GET' ? undefined : body,
  };
}

function unknownPathCase(r: Rand, w: FuzzWorld): FuzzCase {
  const target = r.pick([
    '/agent/v1/nope',
    '/agent/v1/',
    '/agent/v1',
    '/agent/v1/events/x/y/z',
    '/agent/v1/grant/extra',
    '/agent/v2/events',
    '/agent/v1/events%2f..%2fgrant',
    '/agent/v1/openapi.json/x',
    '/hooks',
    '/hooks/',
    '/agent/v1/endpoints/ep_x/unknown-intents',
  ]);
  const method = r.pick(['GET', 'POST', 'DELETE']);
  return {
    label: `${method} ${target}`,
    surface: { kind: 'unknown_path' },
    method,
    target,
    headers: { authorization: `Bearer ${r.pick(w.stores[0]!.tokens)}` },
  };
}

/** Edges only a raw socket can send. */
export function rawCases(w: FuzzWorld): FuzzCase[] {
  const st = w.stores[0]!;
  const token = st.tokens[0]!;
  const hookBody = JSON.stringify({ event_type: 'torture.raw', order: { id: 1 } });
  const sig = sign(st.secret, hookBody);
  const hook = `/hooks/${st.endpointId}`;
  const post = (path: string, extra: string[], len: number) =>
    [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', 'Content-Type: application/json', `Content-Length: ${len}`, ...extra].join('\r\n');
  const get = (path: string, extra: string[]) => [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...extra].join('\r\n');
  const big = `X-Big: ${'b'.repeat(64 * 1024)}`;
  const apiBody = JSON.stringify({ triggerVariant: 'generic', name: 'raw' });
  const cases: [string, Surface, string, string, { hangUpAfter?: number; parser?: boolean }?][] = [
    [
      'raw duplicate Authorization (valid, bad)',
      { kind: 'api', path: '/agent/v1/grant', method: 'GET' },
      get('/agent/v1/grant', [`Authorization: Bearer ${token}`, 'Authorization: Bearer hrg_bad']),
      '',
    ],
    [
      'raw duplicate Authorization (bad, valid)',
      { kind: 'api', path: '/agent/v1/grant', method: 'GET' },
      get('/agent/v1/grant', ['Authorization: Bearer hrg_bad', `Authorization: Bearer ${token}`]),
      '',
    ],
    [
      'raw duplicate signature (valid, bad)',
      { kind: 'hooks' },
      post(hook, [`X-Hookrelay-Signature: ${sig}`, `X-Hookrelay-Signature: ${'0'.repeat(64)}`], hookBody.length),
      hookBody,
    ],
    [
      'raw duplicate signature (bad, valid)',
      { kind: 'hooks' },
      post(hook, [`X-Hookrelay-Signature: ${'0'.repeat(64)}`, `X-Hookrelay-Signature: ${sig}`], hookBody.length),
      hookBody,
    ],
    ['raw 64 KB header on /status', { kind: 'api', path: '/status', method: 'GET' }, get('/status', [big]), '', { parser: true }],
    ['raw 64 KB header on /hooks', { kind: 'hooks' }, post(hook, [big, `X-Hookrelay-Signature: ${sig}`], hookBody.length), hookBody, { parser: true }],
    [
      'raw 64 KB header on the API',
      { kind: 'api', path: '/agent/v1/grant', method: 'GET' },
      get('/agent/v1/grant', [big, `Authorization: Bearer ${token}`]),
      '',
      { parser: true },
    ],
    ['raw body over 2 MiB on /hooks', { kind: 'hooks' }, post(hook, [`X-Hookrelay-Signature: ${sig}`], 3 * MiB), 'x'.repeat(3 * MiB)],
    [
      'raw body over 2 MiB on the API',
      { kind: 'api', path: '/agent/v1/endpoints', method: 'POST' },
      post('/agent/v1/endpoints', [`Authorization: Bearer ${token}`], 3 * MiB),
      'x'.repeat(3 * MiB),
    ],
    [
      'raw bad chunked encoding',
      { kind: 'hooks' },
      [`POST ${hook} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', 'Content-Type: application/json', 'Transfer-Encoding: chunked'].join('\r\n'),
      'zz\r\nnot a chunk\r\n',
      { parser: true },
    ],
    ['raw unknown method', { kind: 'unknown_path' }, get('/agent/v1/grant', [`Authorization: Bearer ${token}`]).replace(/^GET/, 'BREW'), '', { parser: true }],
    ['raw hang-up mid-body on /hooks', { kind: 'hooks' }, post(hook, [`X-Hookrelay-Signature: ${sig}`], 5000), 'x'.repeat(5000), { hangUpAfter: 100 }],
    [
      'raw hang-up mid-body on the API',
      { kind: 'api', path: '/agent/v1/endpoints', method: 'POST' },
      post('/agent/v1/endpoints', [`Authorization: Bearer ${token}`], 5000),
      apiBody.padEnd(5000),
      { hangUpAfter: 20 },
    ],
  ];
  return cases.map(([label, surface, head, b, opts]) => ({
    label,
    surface,
    method: head.split(' ')[0]!,
    target: '',
    headers: {},
    body: enc(b),
    raw: { head, ...opts },
  }));
}

/** `count` cases: operations round-robin (every one is covered), with inbound and unknown paths mixed in. */
export function generateCases(doc: any, w: FuzzWorld, r: Rand, count: number): FuzzCase[] {
  const ops: [string, string, any][] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) if (op?.operationId) ops.push([path, method, op]);
  }
  const out: FuzzCase[] = [];
  for (let i = 0; out.length < count; i++) {
    const roll = r.next();
    if (roll < 0.2) out.push(hookCase(r, w));
    else if (roll < 0.23) out.push(unknownPathCase(r, w));
    else {
      const [path, method, op] = ops[i % ops.length]!;
      out.push(operationCase(doc, path, method, op, r, w));
    }
  }
  return out;
}
