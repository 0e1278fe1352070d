/**
 * Endpoints: the list (setup state's endpoint summaries), one endpoint, creating one (its secret shown once, with the
 * sender preset's instructions) and edit, secret rotation and delete as preview → confirm → execute through the
 * contract's endpoint intents. Every execute form carries its Idempotency-Key, so a double submit is one change.
 */
import { TRIGGER_VARIANTS, type Endpoint, type SenderProfile } from '../../contract/schemas/endpoints.ts';
import { problem, field, html, newFormKey, postForm, section, shownOnce, table, type Html } from '../html.ts';
import type { PageResult, SeatAnswer, SeatContext, SeatPage } from '../types.ts';

type EndpointSummary = { id: string; name: string; triggerVariant: string; authMode: string; headerName: string; secretLast4: string; status: string };
type Intent = {
  id: string;
  kind: string;
  state: string;
  targetId: string | null;
  preview: { summary: string; changes: { field: string; from: unknown; to: unknown }[]; sideEffects: string[]; warnings: string[] };
  confirmation: { token: string; expiresAt: string } | null;
  result: { summary: string; resourceId: string | null; secret?: string } | null;
};

/** The three intents of an endpoint, by the form's `kind`. */
const INTENT_OPS = { edit: 'createEndpointEditIntent', rotate: 'createSecretRotationIntent', delete: 'createEndpointDeleteIntent' } as const;
type IntentKind = keyof typeof INTENT_OPS;
const isKind = (k: string | undefined): k is IntentKind => k !== undefined && Object.hasOwn(INTENT_OPS, k);

/** Where a preset sender puts the secret (the contract's signing instructions say what to send). */
const PRESET_STEPS: Record<SenderProfile, string> = {
  custom_http: 'In your code, sign the exact bytes you send and put the signature in the header below; never re-serialise the body after signing.',
  zapier: 'In Zapier, send with a Webhooks by Zapier POST (or Custom Request) step to the URL above, and add the header below with the secret as its value.',
  make: "In Make, use the HTTP module's Make a request to the URL above (method POST, body type Raw, JSON), and add the header below with the secret as its value.",
  n8n: 'In n8n, use an HTTP Request node (POST to the URL above, JSON body) and add the header below with the secret as its value, ideally from a Header Auth credential.',
};

/** Messages after a write's redirect, by the `done` code the redirect names (never text from the request). */
const DONE: Record<string, string> = {
  edit: 'The endpoint was changed: a new config version is in force.',
  archive: 'The endpoint is archived: it takes no more events; its history stays.',
  permanent: 'The endpoint was deleted permanently.',
};

const link = (ctx: SeatContext, query = '') => `${ctx.base}/endpoints${query ? `?${query}` : ''}`;
/** One endpoint's page: `/endpoints/<id>` (as Home links it), with `done` naming what a redirect just did. */
const endpointLink = (ctx: SeatContext, id: string, done?: string) => `${ctx.base}/endpoints/${encodeURIComponent(id)}${done ? `?done=${done}` : ''}`;

/** The endpoint a GET names: the path's segment after /endpoints/, or `?id=`; null for the list. */
function endpointIdOf(ctx: SeatContext): string | null {
  const rest = ctx.url.pathname.slice(`${ctx.base}/endpoints/`.length);
  if (ctx.url.pathname.startsWith(`${ctx.base}/endpoints/`) && rest) {
    try {
      return decodeURIComponent(rest.split('/')[0]!);
    } catch {
      return rest;
    }
  }
  return ctx.url.searchParams.get('id');
}
const data = <T>(a: SeatAnswer) => a.body.data as T;

export const page: SeatPage = {
  path: '/endpoints',
  title: 'Endpoints',
  async get(ctx) {
    const id = endpointIdOf(ctx);
    if (id) return showEndpoint(ctx, id);
    if (ctx.url.searchParams.has('new')) return createForm(ctx);
    return list(ctx);
  },
  async post(ctx) {
    const action = field(ctx, 'action');
    if (action === 'create') return create(ctx);
    if (action === 'test') return prepareTest(ctx, field(ctx, 'endpointId') ?? '');
    const kind = field(ctx, 'kind');
    const endpointId = field(ctx, 'endpointId');
    if (!isKind(kind) || !endpointId) return { title: 'Endpoints', status: 400, html: html`<p role="alert">This form is not one of this page's.</p>`.markup };
    if (action === 'preview') return preview(ctx, kind, endpointId);
    if (action === 'execute') return execute(ctx, kind, endpointId);
    return { title: 'Endpoints', status: 400, html: html`<p role="alert">This form is not one of this page's.</p>`.markup };
  },
};

const result = (title: string, body: Html, extra: { status?: number } = {}): PageResult => ({ title, html: body.markup, ...extra });

async function list(ctx: SeatContext): Promise<PageResult> {
  const a = await ctx.call({ operationId: 'getSetupState' });
  if (a.status !== 200) return result('Endpoints', problem(a), { status: a.status });
  const endpoints = data<{ endpoints: EndpointSummary[] }>(a).endpoints;
  const done = DONE[ctx.url.searchParams.get('done') ?? ''];
  return result(
    'Endpoints',
    html`${done ? html`<p role="status">${done}</p>` : ''}<p><a href="${link(ctx, 'new=1')}">Create an endpoint</a></p>${table(
      'Endpoints of this store',
      ['Name', 'Id', 'Trigger', 'Auth', 'Secret ends', 'Status'],
      endpoints.map((e) => [
        html`<a href="${endpointLink(ctx, e.id)}">${e.name}</a>`,
        html`<code>${e.id}</code>`,
        e.triggerVariant,
        `${e.authMode} (${e.headerName})`,
        e.secretLast4,
        e.status,
      ]),
    )}`,
  );
}

function createForm(ctx: SeatContext, error?: SeatAnswer, status?: number): PageResult {
  const v = (n: string) => field(ctx, n) ?? '';
  const input = (name: string, label: string, hint = '') =>
    html`<p><label for="f-${name}">${label}</label>${hint ? html` <small>${hint}</small>` : ''}<br><input id="f-${name}" name="${name}" value="${v(name)}"></p>`;
  const choose = (name: string, label: string, options: readonly string[], none?: string) =>
    html`<p><label for="f-${name}">${label}</label><br><select id="f-${name}" name="${name}">${none ? html`<option value="">${none}</option>` : ''}${options.map(
      (o) => html`<option value="${o}"${o === v(name) ? html` selected` : ''}>${o}</option>`,
    )}</select></p>`;
  const body = html`${input('name', 'Name')}${choose('triggerVariant', 'Flow trigger', TRIGGER_VARIANTS)}${input(
    'resourceIdPath',
    'Resource id path',
    'order, customer and product triggers: a dot path such as order.id',
  )}${input('relatedResourceIdPath', 'Related resource id path', 'inventory, fulfillment, return and company triggers')}${choose(
    'senderProfile',
    'Sender',
    Object.keys(PRESET_STEPS),
    'your own code (HMAC-SHA256)',
  )}${input('eventType', 'Default event type')}${input('expectedEvery', 'Expect an event at least every', 'e.g. 2h; empty: no silence watch')}`;
  return result(
    'Create an endpoint',
    html`${error ? problem(error) : ''}${section(
      ctx,
      'New endpoint',
      // A fresh key each time the form is shown: the same key with corrected input would be another request (422).
      postForm(ctx, link(ctx), { action: 'create', idempotencyKey: newFormKey() }, 'Create endpoint', body),
    )}<p><a href="${link(ctx)}">Back to endpoints</a></p>`,
    status ? { status } : {},
  );
}

async function create(ctx: SeatContext): Promise<PageResult> {
  const body: Record<string, string> = {};
  for (const k of ['name', 'triggerVariant', 'resourceIdPath', 'relatedResourceIdPath', 'senderProfile', 'eventType', 'expectedEvery']) {
    const v = field(ctx, k);
    if (v !== undefined) body[k] = v;
  }
  const a = await ctx.call({ operationId: 'createEndpoint', body, idempotencyKey: field(ctx, 'idempotencyKey') });
  if (a.status !== 201) return createForm(ctx, a, a.status);
  const r = data<{ endpoint: Endpoint; secret: string; signing: { headerName: string; instructions: string }; warnings: string[] }>(a);
  const e = r.endpoint;
  const preset = PRESET_STEPS[e.senderProfile ?? 'custom_http'];
  return result(
    'Endpoint created',
    html`${section(
      ctx,
      e.name,
      html`<p>Senders POST JSON to <code>${e.url}</code>.</p>${
        a.replayed
          ? html`<p role="status">This form was already sent: the endpoint was created once, and its secret was shown then, only then. If it was not kept, rotate the secret.</p>`
          : html`<p><strong>Copy the secret now: it is shown this once and cannot be read again.</strong></p>${shownOnce(ctx, 'secret', 'Endpoint secret', r.secret)}`
      }<h3>Set up the sender</h3><p>${preset}</p><p>${r.signing.instructions}</p>${r.warnings.map((w) => html`<p>${w}</p>`)}`,
    )}<p><a href="${endpointLink(ctx, e.id)}">Go to the endpoint</a> · <a href="${link(ctx)}">All endpoints</a></p>`,
    { status: a.replayed ? 200 : 201 },
  );
}

async function showEndpoint(ctx: SeatContext, id: string): Promise<PageResult> {
  const a = await ctx.call({ operationId: 'getEndpointDetail', params: { endpointId: id } });
  if (a.status !== 200) return result('Endpoint', html`${problem(a)}<p><a href="${link(ctx)}">All endpoints</a></p>`, { status: a.status });
  const e = data<{ endpoint: Endpoint }>(a).endpoint;
  const done = DONE[ctx.url.searchParams.get('done') ?? ''];
  const facts = table(
    'Configuration',
    ['Field', 'Value'],
    [
      ['Id', html`<code>${e.id}</code>`],
      ['URL', html`<code>${e.url}</code>`],
      ['Status', e.status],
      ['Trigger', e.triggerVariant],
      ['Resource id path', e.resourceIdPath ?? '—'],
      ['Related resource id path', e.relatedResourceIdPath ?? '—'],
      ['Required paths', e.requiredPaths.join(', ') || '—'],
      ['Sender', e.senderProfile ?? '—'],
      ['Auth', `${e.auth.mode}, header ${e.auth.headerName}, secret ending ${e.auth.secretLast4}`],
      ['Source label', e.sourceLabel],
      ['Default event type', e.eventType ?? '—'],
      ['Silence watch', e.expectedEvery ?? 'off'],
      ['Config version', e.configVersion],
      ['Updated', e.updatedAt],
    ],
  );
  const hidden = (kind: IntentKind) => ({ action: 'preview', kind, endpointId: e.id });
  const input = (name: string, label: string, value: string | null) =>
    html`<p><label for="e-${name}">${label}</label><br><input id="e-${name}" name="${name}" value="${value ?? ''}"></p>`;
  const active = e.status === 'active';
  const edit = postForm(
    ctx,
    link(ctx),
    hidden('edit'),
    'Preview the change',
    html`${input('name', 'Name', e.name)}<p><label for="e-triggerVariant">Flow trigger</label><br><select id="e-triggerVariant" name="triggerVariant">${TRIGGER_VARIANTS.map(
      (o) => html`<option value="${o}"${o === e.triggerVariant ? html` selected` : ''}>${o}</option>`,
    )}</select></p>${input('resourceIdPath', 'Resource id path', e.resourceIdPath)}${input('relatedResourceIdPath', 'Related resource id path', e.relatedResourceIdPath)}${input(
      'requiredPaths',
      'Required paths (comma-separated)',
      e.requiredPaths.join(', '),
    )}${input('sourceLabel', 'Source label', e.sourceLabel)}${input('eventType', 'Default event type', e.eventType)}${input(
      'headerName',
      'Header name',
      e.auth.headerName,
    )}${input('expectedEvery', 'Expect an event at least every (empty: off)', e.expectedEvery)}`,
  );
  const rotate = postForm(
    ctx,
    link(ctx),
    hidden('rotate'),
    'Preview the rotation',
    html`<p><label for="r-overlap">Keep the current secret working for (hours, 0 to 168)</label><br><input id="r-overlap" name="overlapHours" inputmode="numeric" value="24"></p>`,
  );
  const test = postForm(ctx, link(ctx), { action: 'test', endpointId: e.id }, 'Prepare a test event');
  const remove = active
    ? postForm(ctx, link(ctx), { ...hidden('delete'), stage: 'archive' }, 'Preview archiving')
    : postForm(ctx, link(ctx), { ...hidden('delete'), stage: 'permanent' }, 'Preview permanent delete');
  return result(
    e.name,
    html`${done ? html`<p role="status">${done}</p>` : ''}${facts}${active ? html`${section(ctx, 'Send a test event', test)}${section(ctx, 'Edit', edit)}${section(ctx, 'Rotate the secret', rotate)}` : ''}${section(
      ctx,
      active ? 'Archive' : 'Delete permanently',
      remove,
    )}<p><a href="${link(ctx)}">All endpoints</a></p>`,
  );
}

/** The kind's intent input from the form: only what the form holds (an empty optional field clears it). */
function intentInput(ctx: SeatContext, kind: IntentKind): Record<string, unknown> {
  if (kind === 'delete') return { stage: field(ctx, 'stage') ?? 'archive' };
  if (kind === 'rotate') {
    const hours = field(ctx, 'overlapHours') ?? '24';
    // A value that is not a whole number goes to the contract as it is, which refuses it by its own rule.
    return { overlapSeconds: /^\d{1,4}$/.test(hours) ? Number(hours) * 3600 : hours };
  }
  const input: Record<string, unknown> = {};
  for (const k of ['name', 'triggerVariant', 'sourceLabel', 'headerName']) {
    const v = field(ctx, k);
    if (v !== undefined) input[k] = v;
  }
  for (const k of ['resourceIdPath', 'relatedResourceIdPath', 'eventType', 'expectedEvery']) if (ctx.form?.has(k)) input[k] = field(ctx, k) ?? null;
  if (ctx.form?.has('requiredPaths')) {
    input.requiredPaths = (field(ctx, 'requiredPaths') ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
  }
  return input;
}

const VERB: Record<IntentKind, string> = { edit: 'Change the endpoint', rotate: 'Rotate the secret', delete: 'Delete' };

async function preview(ctx: SeatContext, kind: IntentKind, endpointId: string): Promise<PageResult> {
  const a = await ctx.call({ operationId: INTENT_OPS[kind], params: { endpointId }, body: { mode: 'preview', input: intentInput(ctx, kind) } });
  const back = html`<p><a href="${endpointLink(ctx, endpointId)}">Back to the endpoint</a></p>`;
  if (a.status !== 201) return result('Not previewed', html`${problem(a)}${back}`, { status: a.status });
  const intent = data<{ intent: Intent }>(a).intent;
  const p = intent.preview;
  const show = (v: unknown) => (v === null || v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));
  const verb = kind === 'delete' ? (field(ctx, 'stage') === 'permanent' ? 'Delete permanently' : 'Archive') : VERB[kind];
  return result(
    `Confirm: ${verb}`,
    html`<p>${p.summary}</p>${table(
      'What changes',
      ['Field', 'Now', 'After'],
      p.changes.map((c) => [c.field, show(c.from), show(c.to)]),
    )}${p.sideEffects.length ? html`<ul>${p.sideEffects.map((s) => html`<li>${s}</li>`)}</ul>` : ''}${p.warnings.map(
      (w) => html`<p role="alert">${w}</p>`,
    )}${intent.confirmation ? html`<p>This confirmation works once, until ${intent.confirmation.expiresAt}.</p>` : ''}${postForm(
      ctx,
      link(ctx),
      {
        action: 'execute',
        kind,
        endpointId,
        intentId: intent.id,
        confirmationToken: intent.confirmation?.token ?? '',
        idempotencyKey: newFormKey(),
        ...(kind === 'delete' ? { stage: field(ctx, 'stage') === 'permanent' ? 'permanent' : 'archive' } : {}),
      },
      verb,
    )}${back}`,
  );
}

async function execute(ctx: SeatContext, kind: IntentKind, endpointId: string): Promise<PageResult> {
  const a = await ctx.call({
    operationId: INTENT_OPS[kind],
    params: { endpointId },
    body: { mode: 'execute', intentId: field(ctx, 'intentId') ?? '', confirmationToken: field(ctx, 'confirmationToken') ?? '' },
    idempotencyKey: field(ctx, 'idempotencyKey'),
  });
  const back = html`<p><a href="${endpointLink(ctx, endpointId)}">Back to the endpoint</a></p>`;
  if (a.status !== 200) return result('Not done', html`${problem(a)}${back}`, { status: a.status });
  const intent = data<{ intent: Intent }>(a).intent;
  if (kind === 'delete') {
    const stage = field(ctx, 'stage') === 'permanent' ? 'permanent' : 'archive';
    return { redirect: stage === 'permanent' ? link(ctx, 'done=permanent') : endpointLink(ctx, endpointId, 'archive') };
  }
  if (kind === 'edit') return { redirect: endpointLink(ctx, endpointId, 'edit') };
  // A rotation's new secret is in this answer only: shown here, once, never redirected to or put in a URL.
  const secret = a.replayed ? undefined : intent.result?.secret;
  return result(
    'Secret rotated',
    html`<p>${intent.result?.summary ?? ''}</p>${
      secret
        ? html`<p><strong>Copy the new secret now: it is shown this once and cannot be read again.</strong> Put it in the sender before the overlap ends.</p>${shownOnce(
            ctx,
            'secret',
            'New endpoint secret',
            secret,
          )}`
        : html`<p role="status">This confirmation was already sent: the secret was rotated once, and the new secret was shown then, only then. If it was not kept, rotate again.</p>`
    }${back}`,
  );
}

/** A test event the sender sends (the contract prepares it and sends nothing): its URL, header, exact body and how to sign. */
async function prepareTest(ctx: SeatContext, endpointId: string): Promise<PageResult> {
  const a = await ctx.call({ operationId: 'createEndpointTestIntent', params: { endpointId }, body: {} });
  const back = html`<p><a href="${endpointLink(ctx, endpointId)}">Back to the endpoint</a></p>`;
  if (a.status !== 201) return result('Not prepared', html`${problem(a)}${back}`, { status: a.status });
  const t = data<{ test: { url: string; headerName: string; authMode: string; bodyText: string; howToSign: string; expectedReceipt: string } }>(a).test;
  return result(
    'Test event',
    html`${section(
      ctx,
      'What the sender sends',
      html`${table(
        'The request',
        ['Part', 'Value'],
        [
          ['Method and URL', html`<code>POST ${t.url}</code>`],
          ['Content-Type', html`<code>application/json</code>`],
          ['Header', html`<code>${t.headerName}</code> (${t.authMode})`],
        ],
      )}<p>Body, exactly these bytes:</p><pre>${t.bodyText}</pre><p>${t.howToSign}</p><p>Expected: ${t.expectedReceipt}</p>`,
    )}${back}`,
  );
}
